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
// Memory follows use, and the engine thread never waits for it: the ring is
// an anonymous mapping of `capacity` slots that costs only the slots written
// (ahead_pages.h), written in app_seq order, and populate_ahead() (an idle
// duty cycle's housekeeping) makes the slots of the next kAheadSlots
// messages resident before they are sent. A session that was sent ten
// messages holds about ten slots' worth (thousands of idle sessions must
// not cost gigabytes), and nothing is ever copied: a ring that doubled as it
// filled took 18-23 ms in one put() at its 4,097th message (allocating,
// zeroing and copying 2.7 MiB), and the duty cycle, every session and the
// feed with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "orders/ahead_pages.h"
#include "orders/codec.h"

namespace qpgate::orders {

class ResendStore {
 public:
  // About 16 KiB: a few messages' worth of pages ahead of the newest.
  static constexpr std::uint32_t kAheadSlots = 48;

  // std::bad_alloc if the ring's address space cannot be mapped.
  explicit ResendStore(std::uint32_t capacity)
      : capacity_(std::max<std::uint32_t>(capacity, 1)),
        pages_(std::size_t{capacity_} * sizeof(Slot)),
        slots_(static_cast<Slot*>(pages_.data())) {}

  // Messages come in app_seq order (the handler's). One at or below the
  // newest kept is a copy of one already kept (a resent answer keeps its
  // first app_seq) and is ignored; one past a gap starts the store afresh.
  void put(std::uint64_t app_seq, std::span<const std::uint8_t> bytes) {
    if (bytes.size() > kMaxEncodedBytes || app_seq == 0) return;
    if (first_ != 0 && app_seq <= last_) return;
    if (first_ == 0 || app_seq != last_ + 1) first_ = app_seq;
    last_ = app_seq;
    if (last_ - first_ + 1 > capacity_) first_ = last_ - capacity_ + 1;
    if (app_seq > frontier_) {
      ++touched_;
      frontier_ = app_seq;
    }
    Slot& s = slots_[app_seq % capacity_];
    s.app_seq = app_seq;
    s.length = static_cast<std::uint16_t>(bytes.size());
    std::memcpy(s.bytes, bytes.data(), bytes.size());
  }

  // The message with this app_seq, or empty if it is not (or no longer) kept.
  std::span<const std::uint8_t> get(std::uint64_t app_seq) const noexcept {
    if (app_seq < first_ || app_seq > last_ || first_ == 0) return {};
    const Slot& s = slots_[app_seq % capacity_];
    if (s.app_seq != app_seq) return {};
    return {s.bytes, s.length};
  }

  // Makes the slots of the next kAheadSlots messages resident; returns how many it made.
  std::uint32_t populate_ahead() noexcept {
    if (last_ == 0 || touched_ >= capacity_) return 0;  // nothing sent yet, or every slot resident
    const std::uint64_t want = last_ + kAheadSlots;
    if (frontier_ >= want) return 0;
    for (std::uint64_t seq = frontier_ + 1; seq <= want;) {
      const std::uint64_t at = seq % capacity_;
      const std::uint64_t run = std::min<std::uint64_t>(want - seq + 1, capacity_ - at);
      pages_.populate(at * sizeof(Slot), (at + run) * sizeof(Slot));
      seq += run;
    }
    const auto made = static_cast<std::uint32_t>(want - frontier_);
    touched_ += made;
    frontier_ = want;
    return made;
  }

  std::uint64_t first() const noexcept { return first_; }  // 0 = empty
  std::uint64_t last() const noexcept { return last_; }
  // The slots written or made resident (at most capacity), in bytes: what the store costs.
  std::size_t bytes_reserved() const noexcept { return std::size_t{std::min<std::uint64_t>(touched_, capacity_)} * sizeof(Slot); }

 private:
  struct Slot {
    std::uint64_t app_seq;
    std::uint16_t length;
    std::uint8_t bytes[kMaxEncodedBytes];
  };

  std::uint32_t capacity_;
  AheadPages pages_;  // capacity_ slots, zero until written
  Slot* slots_;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
  std::uint64_t frontier_ = 0;  // the highest app_seq whose slot is written or resident
  std::uint64_t touched_ = 0;   // slots written or made resident
};

}  // namespace qpgate::orders
