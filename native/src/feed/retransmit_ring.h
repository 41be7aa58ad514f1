// A channel's retransmission ring: the last frames it multicast, bounded by a
// number of frames AND a number of bytes, oldest evicted first. The recovery
// service (over RC) looks up a sequence range and gets the original frames, or
// learns that the range is gone and sends the subscriber to a snapshot.
//
// Single-threaded: the engine thread that publishes the channel appends and
// answers lookups. Spans returned by lookup() stay valid until the next append().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "feed/feed_limits.h"

namespace qpgate::feed {

struct RetransmitConfig {
  std::size_t max_frames = limits::ring_frames.fallback;  // feed_config_limits.def
  std::size_t max_bytes = limits::ring_bytes.fallback;
};

// The numbers of qpgate.recovery.v1.Status where they overlap.
enum class RangeStatus : std::uint8_t {
  kOk = 1,
  kRangeGone = 2,     // starts before the oldest frame the ring still holds
  kInvalidRange = 6,  // count 0, or starts at or beyond the next sequence
};

constexpr std::string_view range_status_name(RangeStatus s) {
  switch (s) {
    case RangeStatus::kOk: return "ok";
    case RangeStatus::kRangeGone: return "range_gone";
    case RangeStatus::kInvalidRange: return "invalid_range";
  }
  return "unknown";
}

enum class AppendResult : std::uint8_t {
  kStored,
  kNotSequenced,  // not a parseable data frame (control and snapshot frames are not kept)
  kNotContiguous, // first_seq is not the ring's next sequence (the ring was reset to it)
  kTooLarge,      // larger than max_bytes
};

struct RangeLookup {
  RangeStatus status = RangeStatus::kInvalidRange;
  // Whole frames covering [from, from + count) clipped to what was published:
  // the first may start before `from`, the last may end after the range.
  std::vector<std::span<const std::uint8_t>> frames;
  std::uint64_t oldest_seq = 0;  // first sequence held (0 when empty)
  std::uint64_t next_seq = 0;    // sequence after the newest frame
};

class RetransmitRing {
 public:
  // Allocates (and so touches: zeroed) all of it: max_bytes of frames and
  // max_frames entries. Throws std::bad_alloc.
  explicit RetransmitRing(RetransmitConfig config = {});
  // What the constructor allocates for `config`.
  static std::size_t reserved_bytes(const RetransmitConfig& config);
  std::size_t reserved_bytes() const { return data_.size() + entries_.size() * sizeof(Entry); }

  // Keeps a copy of a sequenced frame just multicast (validated by parse_frame).
  AppendResult append(std::span<const std::uint8_t> frame);
  RangeLookup lookup(std::uint64_t from_seq, std::uint32_t count) const;
  void clear();

  std::size_t frames() const { return count_; }
  std::size_t bytes() const { return bytes_; }
  std::uint64_t oldest_seq() const;
  std::uint64_t next_seq() const { return next_seq_; }
  const RetransmitConfig& config() const { return config_; }

  struct Counters {
    std::uint64_t appended = 0;
    std::uint64_t evicted_frames = 0;
    std::uint64_t lookups_ok = 0;
    std::uint64_t lookups_gone = 0;
    std::uint64_t lookups_invalid = 0;
    std::uint64_t discontinuities = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Entry {
    std::uint64_t first_seq;
    std::uint32_t offset;  // into data_
    std::uint16_t length;
    std::uint16_t count;
  };
  const Entry& at(std::size_t i) const { return entries_[(head_ + i) % entries_.size()]; }
  void evict_oldest();
  // Finds room for `length` contiguous bytes, evicting as needed; returns the offset.
  std::size_t make_room(std::size_t length);

  RetransmitConfig config_;
  std::vector<std::uint8_t> data_;
  std::vector<Entry> entries_;
  std::size_t head_ = 0;   // oldest entry
  std::size_t count_ = 0;  // entries held
  std::size_t bytes_ = 0;  // sum of held frame lengths
  std::size_t write_ = 0;  // next free byte (when count_ > 0: just past the newest frame)
  std::uint64_t next_seq_ = 0;
  mutable Counters counters_;
};

}  // namespace qpgate::feed
