// Single-producer single-consumer ring of variable-length records, shared
// between the engine thread and JS (src/native/spsc-ring.ts implements the
// same protocol over an external ArrayBuffer with Atomics). In the style of
// Aeron's spsc_rb; this is its own implementation.
//
// MEMORY LAYOUT (normative; spsc-ring.ts must match it byte for byte)
// ---------------------------------------------------------------------
// All integers are in host byte order (little-endian on every supported
// target: x86-64, arm64).
//
//   total length = capacity + kTrailerLength (384)
//
//   [0, capacity)               record data. capacity is a power of two,
//                               >= 1024, and a multiple of 8.
//   capacity + 0    int64 tail  producer position: bytes ever written.
//                               Written only by the producer (release /
//                               Atomics.store), read by the consumer.
//   capacity + 128  int64 head  consumer position: bytes ever consumed.
//                               Written only by the consumer, read by the
//                               producer. 128 bytes apart (two cache lines)
//                               so the adjacent-line prefetcher does not
//                               make the two sides share a line.
//   capacity + 256  int32 consumer_waiting
//                               1 = the consumer will sleep until woken;
//                               0 = it is awake or a wake-up is already on
//                               its way. See "Wake-ups" below.
//   capacity + 260 .. +384      reserved, zero.
//
// Positions only grow; a position p lives at index p & (capacity - 1).
// head <= tail <= head + capacity always. JS reads positions as Numbers,
// exact up to 2^53 bytes (9 PB) of traffic per ring.
//
// Record at index i (i is a multiple of 8):
//   int32 length   header + payload bytes (not padded), >= 8
//   int32 type     > 0 for messages; kPaddingType (-1) for padding
//   payload        length - 8 bytes
// The next record starts at i + align8(length). A record never wraps: when
// it does not fit before the end of the data, the producer fills the rest
// with one padding record (length = bytes to the end, type -1) and writes
// the record at index 0. The largest record is capacity / 8 bytes, header
// included.
//
// Publication: the producer writes any number of records with plain stores,
// then publishes them all with ONE store of tail (release). The consumer
// loads tail (acquire), reads every record below it, then stores head
// (release) once. So a batch costs two atomic stores, not two per record.
//
// Wake-ups (the consumer_waiting word; Dekker-style, needs a full fence on
// both sides, which Atomics give in JS and std::atomic_thread_fence(seq_cst)
// gives here):
//   consumer, before sleeping:  waiting = 1; fence; if ring not empty:
//                               waiting = 0 and consume instead of sleeping.
//   producer, after publishing: fence; if exchange(waiting, 0) == 1: wake it.
// Either the consumer sees the new tail or the producer sees waiting == 1,
// so no wake-up is lost, and a busy consumer costs the producer one load.
//   toEngine:   consumer = engine; waiting = "engine parked in epoll"; the
//               JS producer wakes it with notify() (an eventfd write).
//   fromEngine: consumer = JS; waiting = "no wake pending" (the inverse of
//               js_wake_pending); the engine wakes JS with one
//               ThreadSafeFunction call per batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace qpgate::engine {

namespace ring_layout {
inline constexpr std::int64_t kTailOffset = 0;
inline constexpr std::int64_t kHeadOffset = 128;
inline constexpr std::int64_t kWaitingOffset = 256;
inline constexpr std::int64_t kTrailerLength = 384;
inline constexpr std::int32_t kHeaderLength = 8;
inline constexpr std::int32_t kAlignment = 8;
inline constexpr std::int32_t kPaddingType = -1;
inline constexpr std::int64_t kMinCapacity = 1024;
inline constexpr std::int64_t kMaxCapacity = std::int64_t{1} << 30;
}  // namespace ring_layout

constexpr std::int64_t align8(std::int64_t n) { return (n + 7) & ~std::int64_t{7}; }

constexpr bool valid_ring_capacity(std::int64_t capacity) {
  return capacity >= ring_layout::kMinCapacity && capacity <= ring_layout::kMaxCapacity &&
         (capacity & (capacity - 1)) == 0;
}

// A ring over memory someone else owns (a NodeBuffer, or a test's vector).
class RingView {
 public:
  RingView() = default;
  // `base` must be 8-byte aligned and hold capacity + kTrailerLength bytes.
  RingView(std::byte* base, std::int64_t capacity) : base_(base), capacity_(capacity) {}

  std::byte* data() const { return base_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t mask() const { return capacity_ - 1; }
  std::int32_t max_record_length() const { return static_cast<std::int32_t>(capacity_ / 8); }
  static std::int64_t total_length(std::int64_t capacity) { return capacity + ring_layout::kTrailerLength; }

  std::atomic_ref<std::int64_t> tail() const { return std::atomic_ref<std::int64_t>(word64(ring_layout::kTailOffset)); }
  std::atomic_ref<std::int64_t> head() const { return std::atomic_ref<std::int64_t>(word64(ring_layout::kHeadOffset)); }
  std::atomic_ref<std::int32_t> waiting() const {
    return std::atomic_ref<std::int32_t>(*reinterpret_cast<std::int32_t*>(base_ + capacity_ + ring_layout::kWaitingOffset));
  }

  // Bytes published and not yet consumed (for stats; racy by nature).
  std::int64_t used() const {
    return tail().load(std::memory_order_acquire) - head().load(std::memory_order_acquire);
  }

 private:
  std::int64_t& word64(std::int64_t offset) const {
    return *reinterpret_cast<std::int64_t*>(base_ + capacity_ + offset);
  }
  std::byte* base_ = nullptr;
  std::int64_t capacity_ = 0;
};

class SpscProducer {
 public:
  SpscProducer() = default;
  explicit SpscProducer(RingView ring)
      : ring_(ring),
        tail_(ring.tail().load(std::memory_order_relaxed)),
        published_(tail_),
        head_cache_(ring.head().load(std::memory_order_acquire)) {}

  // Reserves a record of `length` payload bytes and writes its header.
  // Returns where to write the payload, or nullptr when it does not fit now
  // (nothing is written then). Invisible to the consumer until publish().
  std::byte* claim(std::int32_t type, std::int32_t length) {
    using namespace ring_layout;
    if (length < 0 || type <= 0 || length > ring_.max_record_length() - kHeaderLength) return nullptr;
    const std::int64_t record = kHeaderLength + length;
    const std::int64_t aligned = align8(record);
    const std::int64_t capacity = ring_.capacity();
    std::int64_t index = tail_ & ring_.mask();
    const std::int64_t to_end = capacity - index;
    const std::int64_t padding = aligned > to_end ? to_end : 0;
    const std::int64_t required = padding + aligned;
    if (required > capacity - (tail_ - head_cache_)) {
      head_cache_ = ring_.head().load(std::memory_order_acquire);
      if (required > capacity - (tail_ - head_cache_)) return nullptr;
    }
    if (padding != 0) {
      write_header(index, static_cast<std::int32_t>(padding), kPaddingType);
      tail_ += padding;
      index = 0;
    }
    write_header(index, static_cast<std::int32_t>(record), type);
    tail_ += aligned;
    return ring_.data() + index + kHeaderLength;
  }

  // Copies one record in. False when it does not fit now.
  bool append(std::int32_t type, const void* payload, std::int32_t length) {
    std::byte* dst = claim(type, length);
    if (dst == nullptr) return false;
    if (length > 0) std::memcpy(dst, payload, static_cast<std::size_t>(length));
    return true;
  }

  // Makes everything claimed since the last publish visible: one release
  // store. Returns whether there was anything to publish.
  bool publish() {
    if (tail_ == published_) return false;
    ring_.tail().store(tail_, std::memory_order_release);
    published_ = tail_;
    return true;
  }

  // After publish(): whether the consumer announced it is waiting, taking
  // the duty to wake it (see "Wake-ups" above).
  bool take_wake_duty() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ring_.waiting().load(std::memory_order_relaxed) == 0) return false;
    return ring_.waiting().exchange(0, std::memory_order_seq_cst) == 1;
  }

  std::int64_t unpublished() const { return tail_ - published_; }
  const RingView& ring() const { return ring_; }

 private:
  void write_header(std::int64_t index, std::int32_t length, std::int32_t type) {
    std::byte* at = ring_.data() + index;
    std::memcpy(at, &length, sizeof length);
    std::memcpy(at + 4, &type, sizeof type);
  }

  RingView ring_;
  std::int64_t tail_ = 0;        // claimed
  std::int64_t published_ = 0;   // visible
  std::int64_t head_cache_ = 0;  // last head seen; refreshed only when short of space
};

class SpscConsumer {
 public:
  SpscConsumer() = default;
  explicit SpscConsumer(RingView ring) : ring_(ring), head_(ring.head().load(std::memory_order_relaxed)) {}

  // Calls handler(type, payload, length) for up to `limit` records, in order.
  // A handler returning false leaves that record (and the rest) in the ring:
  // back-pressure, nothing is dropped. head is stored once at the end.
  // The producer may be JS, so every header is checked against the ring
  // bounds; a bad one marks the ring corrupt and stops reading it for good.
  template <class Handler>
  int read(Handler&& handler, int limit = std::numeric_limits<int>::max()) {
    using namespace ring_layout;
    if (corrupt_) return 0;
    const std::int64_t tail = ring_.tail().load(std::memory_order_acquire);
    if (tail - head_ < 0 || tail - head_ > ring_.capacity()) {
      corrupt_ = true;
      return 0;
    }
    std::int64_t head = head_;
    int count = 0;
    while (head < tail && count < limit) {
      const std::int64_t index = head & ring_.mask();
      std::int32_t length = 0;
      std::int32_t type = 0;
      std::memcpy(&length, ring_.data() + index, sizeof length);
      std::memcpy(&type, ring_.data() + index + 4, sizeof type);
      const std::int64_t aligned = align8(length);
      if (length < kHeaderLength || aligned > tail - head || index + aligned > ring_.capacity() ||
          (type <= 0 && type != kPaddingType)) {
        corrupt_ = true;
        break;
      }
      if (type != kPaddingType) {
        if (!handler(type, ring_.data() + index + kHeaderLength, length - kHeaderLength)) break;
        ++count;
      }
      head += aligned;
    }
    if (head != head_) {
      head_ = head;
      ring_.head().store(head, std::memory_order_release);
    }
    return count;
  }

  bool empty() const { return ring_.tail().load(std::memory_order_acquire) == head_; }

  // The consumer's half of the wake-up protocol. Returns true when it may
  // sleep: nothing arrived between announcing and re-checking.
  bool announce_waiting() {
    ring_.waiting().store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!empty()) {
      ring_.waiting().store(0, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  void clear_waiting() { ring_.waiting().store(0, std::memory_order_relaxed); }

  bool corrupt() const { return corrupt_; }
  const RingView& ring() const { return ring_; }

 private:
  RingView ring_;
  std::int64_t head_ = 0;
  bool corrupt_ = false;
};

}  // namespace qpgate::engine
