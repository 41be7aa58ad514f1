// Helpers for the order tests: a small configuration, encoders for requests,
// and a decoder for what the handler sent.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "orders/codec.h"
#include "orders/order_handler.h"

namespace qpgate::orders::test {

inline constexpr std::uint32_t kInstrument = 7;
inline constexpr std::uint64_t kAccountA = 100;
inline constexpr std::uint64_t kAccountB = 200;
inline constexpr std::uint32_t kSessionA = 1;
inline constexpr std::uint32_t kSessionB = 2;

// Whether the page holding `at` is resident (mincore): what an idle cycle's
// populate_ahead() promises for the memory an order will write next.
inline bool resident(const void* at) {
  const auto page = reinterpret_cast<std::uintptr_t>(at) & ~std::uintptr_t{4095};
  unsigned char in = 0;
  return ::mincore(reinterpret_cast<void*>(page), 4096, &in) == 0 && (in & 1) != 0;
}

inline std::vector<std::uint8_t> bytes_of(const OrderMessage& m) {
  std::vector<std::uint8_t> out(kMaxEncodedBytes);
  out.resize(encode(m, out));
  return out;
}

inline NewOrder buy(std::uint64_t clid, std::int64_t price, std::int64_t qty, std::uint64_t account = kAccountA,
                    TimeInForce tif = TimeInForce::kDay) {
  return NewOrder{clid, kInstrument, Side::kBuy, price, qty, tif, account};
}
inline NewOrder sell(std::uint64_t clid, std::int64_t price, std::int64_t qty, std::uint64_t account = kAccountB,
                     TimeInForce tif = TimeInForce::kDay) {
  return NewOrder{clid, kInstrument, Side::kSell, price, qty, tif, account};
}

// A scratch directory per test, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "qpgate-orders-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (std::filesystem::path{path_} / name).string(); }

 private:
  std::string path_;
};

inline HandlerConfig small_config(const std::string& journal_path) {
  HandlerConfig c;
  InstrumentConfig ins;
  ins.book = BookConfig{kInstrument, 5, 5, 100000, SelfMatchPolicy::kCancelNewest};
  ins.max_quantity = 10000;
  c.instruments.push_back(ins);
  c.accounts.push_back(AccountConfig{kAccountA, 1'000'000'000});
  c.accounts.push_back(AccountConfig{kAccountB, 1'000'000'000});
  c.sessions.push_back(SessionConfig{kSessionA, {kAccountA}, ThrottleConfig{0, 1}, true});
  c.sessions.push_back(SessionConfig{kSessionB, {kAccountB}, ThrottleConfig{0, 1}, true});
  c.journal.path = journal_path;
  c.journal.sync = SyncPolicy::kEveryRecord;
  c.order_capacity = 1024;
  c.client_order_id_capacity = 1 << 16;
  return c;
}

// What a session received, decoded.
struct Received {
  std::uint32_t session;
  std::uint64_t app_seq;
  OrderMessage message;
};

// Decoded messages point into their bytes (Reject.text), and tests keep
// pointers to what send() returned: both live until the test binary exits.
inline std::deque<std::vector<std::uint8_t>>& kept_bytes() {
  static std::deque<std::vector<std::uint8_t>> d;
  return d;
}
inline std::deque<std::vector<Received>>& kept_replies() {
  static std::deque<std::vector<Received>> d;
  return d;
}

inline std::vector<Received> decode_all(const OutBuffer& out) {
  std::vector<Received> r;
  for (const OutMessage& m : out.messages()) {
    Received x{m.session, m.app_seq, {}};
    const auto bytes = out.bytes_of(m);
    const auto& kept = kept_bytes().emplace_back(bytes.begin(), bytes.end());
    const DecodeResult d = decode(kept, x.message);
    EXPECT_TRUE(d.ok()) << d.text();
    r.push_back(x);
  }
  return r;
}

// Sends one request and returns what came back.
inline const std::vector<Received>& send(OrderHandler& h, std::uint32_t session, const OrderMessage& m,
                                         std::uint64_t now_ns = 1'000'000'000) {
  OutBuffer out;
  h.on_message(session, bytes_of(m), now_ns, out);
  EXPECT_GE(h.durable_position(), out.durable_position()) << "every-record sync: answers are durable at once";
  return kept_replies().emplace_back(decode_all(out));
}

template <typename T>
const T* first(const std::vector<Received>& r, std::uint32_t session) {
  for (const Received& x : r) {
    if (x.session != session) continue;
    if (const T* t = std::get_if<T>(&x.message)) return t;
  }
  return nullptr;
}

// The first T for `session`, or a failure and an empty T.
template <typename T>
const T& must(const std::vector<Received>& r, std::uint32_t session) {
  static const T kNone{};
  const T* t = first<T>(r, session);
  if (t == nullptr) {
    ADD_FAILURE() << "no such message for session " << session;
    return kNone;
  }
  return *t;
}

template <typename T>
std::vector<T> all(const std::vector<Received>& r, std::uint32_t session) {
  std::vector<T> v;
  for (const Received& x : r) {
    if (x.session != session) continue;
    if (const T* t = std::get_if<T>(&x.message)) v.push_back(*t);
  }
  return v;
}

}  // namespace qpgate::orders::test
