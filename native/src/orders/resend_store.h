// The sequenced messages a session was sent, kept so that a client that
// reconnects (Hello with the last app_seq it processed) gets everything after
// it again, as orders.proto promises. One store per session id; it outlives
// the session's QP (a fill for a disconnected session waits here) and is
// refilled from the journal replay after a restart.
//
// A ring of `capacity` fixed slots indexed by app_seq: the newest `capacity`
// messages are kept, older ones are overwritten (a client that stayed away
// longer than that sees a gap, counted as a resend gap by the service).
// Memory is taken once, when the store is made; put() never allocates.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "orders/codec.h"

namespace qpgate::orders {

class ResendStore {
 public:
  explicit ResendStore(std::uint32_t capacity) : slots_(capacity == 0 ? 1 : capacity) {}

  // Messages must come in app_seq order with no gap (the handler's order);
  // a message that is not the next one resets the store to it.
  void put(std::uint64_t app_seq, std::span<const std::uint8_t> bytes) noexcept {
    if (bytes.size() > kMaxEncodedBytes || app_seq == 0) return;
    if (first_ == 0 || app_seq != last_ + 1) first_ = app_seq;
    last_ = app_seq;
    if (last_ - first_ + 1 > slots_.size()) first_ = last_ - slots_.size() + 1;
    Slot& s = slots_[app_seq % slots_.size()];
    s.app_seq = app_seq;
    s.length = static_cast<std::uint16_t>(bytes.size());
    std::memcpy(s.bytes, bytes.data(), bytes.size());
  }

  // The message with this app_seq, or empty if it is not (or no longer) kept.
  std::span<const std::uint8_t> get(std::uint64_t app_seq) const noexcept {
    if (app_seq < first_ || app_seq > last_ || first_ == 0) return {};
    const Slot& s = slots_[app_seq % slots_.size()];
    if (s.app_seq != app_seq) return {};
    return {s.bytes, s.length};
  }

  std::uint64_t first() const noexcept { return first_; }  // 0 = empty
  std::uint64_t last() const noexcept { return last_; }

 private:
  struct Slot {
    std::uint64_t app_seq = 0;
    std::uint16_t length = 0;
    std::uint8_t bytes[kMaxEncodedBytes];
  };
  std::vector<Slot> slots_;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
};

}  // namespace qpgate::orders
