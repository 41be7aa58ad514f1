#include "feed/retransmit_ring.h"

#include <algorithm>
#include <cstring>

#include "feed/frame.h"

namespace qpgate::feed {

RetransmitRing::RetransmitRing(RetransmitConfig config)
    : config_(config),
      data_(std::max<std::size_t>(config.max_bytes, 1)),
      entries_(std::max<std::size_t>(config.max_frames, 1)) {}

std::size_t RetransmitRing::reserved_bytes(const RetransmitConfig& c) {
  return std::max<std::size_t>(c.max_bytes, 1) + std::max<std::size_t>(c.max_frames, 1) * sizeof(Entry);
}

void RetransmitRing::clear() {
  head_ = count_ = bytes_ = write_ = 0;
  next_seq_ = 0;
}

std::uint64_t RetransmitRing::oldest_seq() const { return count_ == 0 ? 0 : at(0).first_seq; }

void RetransmitRing::evict_oldest() {
  const Entry& e = entries_[head_];
  bytes_ -= e.length;
  head_ = (head_ + 1) % entries_.size();
  --count_;
  ++counters_.evicted_frames;
  if (count_ == 0) write_ = 0;
}

std::size_t RetransmitRing::make_room(std::size_t length) {
  const std::size_t cap = data_.size();
  for (;;) {
    if (count_ == 0) {
      write_ = 0;
      return 0;
    }
    const std::size_t oldest = entries_[head_].offset;
    if (oldest < write_) {
      // Held bytes are [oldest, write_): free space is the tail, then the head.
      if (write_ + length <= cap) return write_;
      if (length <= oldest) return 0;  // wrap; the unused tail is wasted until the ring turns over
    } else if (write_ + length <= oldest) {
      // Wrapped: held bytes are [oldest, cap) and [0, write_); free is [write_, oldest).
      return write_;
    }
    evict_oldest();
  }
}

AppendResult RetransmitRing::append(std::span<const std::uint8_t> frame) {
  const auto parsed = parse_frame(frame);
  if (!parsed.ok() || parsed->header().is_control() || (parsed->header().flags() & flags::kSnapshot) != 0) {
    return AppendResult::kNotSequenced;
  }
  if (frame.size() > data_.size()) return AppendResult::kTooLarge;
  const FrameHeaderView h = parsed->header();
  AppendResult result = AppendResult::kStored;
  if (count_ != 0 && h.first_seq() != next_seq_) {
    // A hole (or a rewind) would make lookups lie: start over from this frame.
    ++counters_.discontinuities;
    clear();
    result = AppendResult::kNotContiguous;
  }
  if (count_ == entries_.size()) evict_oldest();
  const std::size_t off = make_room(frame.size());
  std::memcpy(data_.data() + off, frame.data(), frame.size());
  entries_[(head_ + count_) % entries_.size()] =
      Entry{h.first_seq(), static_cast<std::uint32_t>(off), static_cast<std::uint16_t>(frame.size()),
            h.message_count()};
  ++count_;
  bytes_ += frame.size();
  write_ = off + frame.size();
  next_seq_ = h.end_seq();
  ++counters_.appended;
  return result;
}

RangeLookup RetransmitRing::lookup(std::uint64_t from_seq, std::uint32_t count) const {
  RangeLookup r;
  r.oldest_seq = oldest_seq();
  r.next_seq = next_seq_;
  if (count == 0 || count_ == 0 || from_seq == 0 || from_seq >= next_seq_) {
    r.status = (count_ != 0 && from_seq != 0 && from_seq < r.oldest_seq) ? RangeStatus::kRangeGone
                                                                          : RangeStatus::kInvalidRange;
    ++(r.status == RangeStatus::kRangeGone ? counters_.lookups_gone : counters_.lookups_invalid);
    return r;
  }
  if (from_seq < r.oldest_seq) {
    r.status = RangeStatus::kRangeGone;
    ++counters_.lookups_gone;
    return r;
  }
  // First entry whose end is after from_seq (entries are in sequence order).
  std::size_t lo = 0, hi = count_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const Entry& e = at(mid);
    if (e.first_seq + e.count <= from_seq) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const std::uint64_t end = from_seq + count;
  for (std::size_t i = lo; i < count_; ++i) {
    const Entry& e = at(i);
    if (e.first_seq >= end) break;
    r.frames.emplace_back(data_.data() + e.offset, e.length);
  }
  r.status = RangeStatus::kOk;
  ++counters_.lookups_ok;
  return r;
}

}  // namespace qpgate::feed
