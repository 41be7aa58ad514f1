// bench_orders: the order ack path on one thread, ns per request, as the
// engine runs it: decode -> checks -> journal -> Ack -> book -> fills, into a
// reused OutBuffer. The request mix repeats: a buy that rests, its cancel, a
// buy that rests, a sell that trades against it (so every fourth request
// makes a trade and two fills, and the book stays small).
//
//   bench_orders [requests] [journal directory]
//
// Runs: decode only; the ack path with the journal written once per batch of
// 64 and never fdatasync'd (the in-memory cost); fdatasync for every record
// (each request durable before its answer); group commit with a batch of 16
// (the duty cycle's poll syncs; per-request cost amortised, latency = time to
// the end of its batch's sync).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "orders/codec.h"
#include "orders/order_handler.h"

namespace {

using namespace qpgate::orders;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kInstrument = 1;
constexpr std::uint32_t kBuyer = 1;
constexpr std::uint32_t kSeller = 2;

std::uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

struct Request {
  std::uint32_t session;
  std::vector<std::uint8_t> bytes;
};

std::vector<Request> make_requests(std::size_t n) {
  std::vector<Request> v;
  v.reserve(n);
  std::uint64_t id = 0;
  auto add = [&](std::uint32_t session, const OrderMessage& m) {
    std::vector<std::uint8_t> b(kMaxEncodedBytes);
    b.resize(encode(m, b));
    v.push_back({session, std::move(b)});
  };
  while (v.size() < n) {
    const std::uint64_t resting = ++id;
    add(kBuyer, NewOrder{resting, kInstrument, Side::kBuy, 95, 10, TimeInForce::kDay, 1});
    add(kBuyer, Cancel{++id, resting, kInstrument});
    add(kBuyer, NewOrder{++id, kInstrument, Side::kBuy, 100, 10, TimeInForce::kDay, 1});
    add(kSeller, NewOrder{++id, kInstrument, Side::kSell, 100, 10, TimeInForce::kDay, 2});
  }
  v.resize(n);
  return v;
}

HandlerConfig config(const std::string& path, SyncPolicy sync, std::uint32_t group, std::uint32_t ids) {
  HandlerConfig c;
  InstrumentConfig ins;
  ins.book = BookConfig{kInstrument, 1, 1, 10000, SelfMatchPolicy::kCancelNewest};
  c.instruments.push_back(ins);
  c.accounts = {AccountConfig{1, ~0ULL >> 2}, AccountConfig{2, ~0ULL >> 2}};
  c.sessions = {SessionConfig{kBuyer, {1}, ThrottleConfig{0, 1}, true}, SessionConfig{kSeller, {2}, ThrottleConfig{0, 1}, true}};
  c.journal = JournalConfig{path, sync, group, 0, 1 << 20};
  c.order_capacity = 4096;
  c.client_order_id_capacity = ids;
  return c;
}

void report(const char* name, std::vector<std::uint64_t>& ns, double total_s) {
  std::sort(ns.begin(), ns.end());
  auto pct = [&](double p) { return ns[std::min(ns.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ns.size())))]; };
  std::printf("%-62s n=%-7zu p50=%7llu  p99=%8llu  p99.9=%8llu  max=%9llu ns   %9.0f req/s\n", name, ns.size(),
              static_cast<unsigned long long>(pct(0.50)), static_cast<unsigned long long>(pct(0.99)),
              static_cast<unsigned long long>(pct(0.999)), static_cast<unsigned long long>(ns.back()),
              static_cast<double>(ns.size()) / total_s);
}

void bench_decode(const std::vector<Request>& reqs) {
  std::vector<std::uint64_t> ns;
  ns.reserve(reqs.size());
  OrderMessage m;
  const auto start = Clock::now();
  for (const Request& r : reqs) {
    const auto t0 = Clock::now();
    const DecodeResult d = decode(r.bytes, m);
    const auto t1 = Clock::now();
    if (!d.ok()) std::abort();
    ns.push_back(ns_between(t0, t1));
  }
  report("decode only", ns, static_cast<double>(ns_between(start, Clock::now())) / 1e9);
}

// `batch`: requests handled before the duty cycle's poll(); each request's
// latency runs from its arrival to its answer being sendable (durable).
void bench_ack_path(const char* name, const std::vector<Request>& reqs, const std::string& dir, SyncPolicy sync,
                    std::uint32_t batch) {
  const std::string path = dir + "/bench-orders.journal";
  std::filesystem::remove(path);
  std::string error;
  auto h = OrderHandler::open(config(path, sync, 1024, static_cast<std::uint32_t>(reqs.size() * 2)), error);  // poll() ends each batch
  if (!h) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::exit(1);
  }
  OutBuffer out;
  std::vector<std::uint64_t> ns;
  ns.reserve(reqs.size());
  std::vector<std::uint64_t> handle_ns;  // on_message alone: decode .. answers encoded
  handle_ns.reserve(reqs.size());
  std::vector<Clock::time_point> arrivals;
  arrivals.reserve(batch);
  // Warm-up: the same mix on clids the run will not reuse would skew the
  // duplicate table; warm the buffers with a handful of rejects instead.
  for (int i = 0; i < 64; ++i) {
    out.clear();
    h->on_message(kBuyer, std::vector<std::uint8_t>{0x00}, 0, out);
  }
  h->flush();
  const auto start = Clock::now();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto t0 = Clock::now();
    out.clear();
    h->on_message(reqs[i].session, reqs[i].bytes, static_cast<std::uint64_t>(t0.time_since_epoch().count()), out);
    handle_ns.push_back(ns_between(t0, Clock::now()));
    if (h->durable_position() >= out.durable_position()) {  // durable already (every-record sync)
      const auto done = Clock::now();
      for (const auto a : arrivals) ns.push_back(ns_between(a, done));
      arrivals.clear();
      ns.push_back(ns_between(t0, done));
      continue;
    }
    arrivals.push_back(t0);
    if (arrivals.size() == batch || i + 1 == reqs.size()) {  // end of the duty cycle's batch
      h->poll(static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()));
      const auto done = Clock::now();
      for (const auto a : arrivals) ns.push_back(ns_between(a, done));
      arrivals.clear();
    }
  }
  h->flush();
  const double total = static_cast<double>(ns_between(start, Clock::now())) / 1e9;
  report((std::string{name} + ": until durable").c_str(), ns, total);
  report((std::string{name} + ": on_message alone").c_str(), handle_ns, total);
  if (h->counters().trades.get() == 0 || h->journal().stats().records_appended < reqs.size()) std::abort();
  h.reset();
  std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  const std::string dir = argc > 2 ? argv[2] : std::filesystem::temp_directory_path().string();
  std::printf("bench_orders: %zu requests (rest / cancel / rest / trade), journal in %s\n", n, dir.c_str());
  const auto reqs = make_requests(n);
  bench_decode(reqs);
  bench_ack_path("ack path, journal write per 64, no fdatasync", reqs, dir, SyncPolicy::kNoSync, 64);
  const std::size_t synced = std::min<std::size_t>(n, 2000);
  const std::vector<Request> few(reqs.begin(), reqs.begin() + static_cast<std::ptrdiff_t>(synced));
  bench_ack_path("ack path, fdatasync every record", few, dir, SyncPolicy::kEveryRecord, 1);
  bench_ack_path("ack path, group commit of 16 (fdatasync)", few, dir, SyncPolicy::kGroupCommit, 16);
  return 0;
}
