// The sequenced messages a session was sent, kept so that a client that
// reconnects (Hello with the last app_seq it processed) gets everything after
// it again, as orders.proto promises. One store per session id; it outlives
// the session's QP (a fill for a disconnected session waits here) and is
// refilled from the journal replay after a restart.
//
// A ring of fixed slots indexed by app_seq: the newest `capacity` messages
// are kept, older ones are overwritten (a client that stayed away longer
// than that sees a gap, counted as a resend gap by the service).
//
// Memory follows use: the ring starts at kInitialSlots and doubles up to
// `capacity`, so a session that was sent ten messages holds ten slots' worth,
// not `capacity` (thousands of idle sessions must not cost gigabytes). Once a
// session has been sent `capacity` messages, put() never allocates again.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "orders/codec.h"

namespace qpgate::orders {

class ResendStore {
 public:
  static constexpr std::uint32_t kInitialSlots = 16;

  explicit ResendStore(std::uint32_t capacity)
      : capacity_(std::max<std::uint32_t>(capacity, 1)), slots_(std::min(capacity_, kInitialSlots)) {}

  // Messages come in app_seq order (the handler's). One at or below the
  // newest kept is a copy of one already kept (a resent answer keeps its
  // first app_seq) and is ignored; one past a gap starts the store afresh.
  void put(std::uint64_t app_seq, std::span<const std::uint8_t> bytes) {
    if (bytes.size() > kMaxEncodedBytes || app_seq == 0) return;
    if (first_ != 0 && app_seq <= last_) return;
    if (first_ == 0 || app_seq != last_ + 1) first_ = app_seq;
    last_ = app_seq;
    if (last_ - first_ + 1 > slots_.size()) grow();
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
  std::size_t slots() const noexcept { return slots_.size(); }
  std::size_t bytes_reserved() const noexcept { return slots_.size() * sizeof(Slot); }

 private:
  struct Slot {
    std::uint64_t app_seq = 0;
    std::uint16_t length = 0;
    std::uint8_t bytes[kMaxEncodedBytes];
  };

  // Doubles the ring (up to capacity_), moving every kept message to its slot in the new size.
  void grow() {
    if (slots_.size() >= capacity_) return;
    std::vector<Slot> bigger(std::min<std::size_t>(slots_.size() * 2, capacity_));
    for (const Slot& s : slots_) {
      if (s.app_seq != 0 && s.app_seq >= first_) bigger[s.app_seq % bigger.size()] = s;
    }
    slots_.swap(bigger);
  }

  std::uint32_t capacity_;
  std::vector<Slot> slots_;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
};

}  // namespace qpgate::orders
