// Latency recording on the engine thread, HdrHistogram-style: a fixed array
// of counters allocated once, O(1) record with no allocation, no lock and no
// syscall, so the hot path can time every tick and every order.
//
// The layout is HdrHistogram's with lowest discernible value 1 (ns) and 2
// significant digits: 256 sub-buckets per power of two (values are kept to
// within 1/128 of themselves), up to 2^36 ns (about 68.7 s; larger values
// are clamped and counted as saturated). Because the layout is exactly
// HdrHistogram's, the JS side rebuilds an hdr-histogram-js Histogram from
// the raw counts (value_at_index gives each counter's value) and reads
// percentiles, windows and the Prometheus buckets from it: JS does no
// per-message timing work, only a per-scrape copy.
//
// One writer (the engine thread), any number of readers. Counters are
// 64-bit atomics written with relaxed load+store (single writer, so no
// read-modify-write is needed) and read with relaxed loads: a reader may see
// a record's count before `total`, never a torn value.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <span>

namespace qpgate::metrics {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketHalfCountMagnitude = 7;               // 2 significant digits
  static constexpr std::uint64_t kSubBucketHalfCount = 1u << kSubBucketHalfCountMagnitude;  // 128
  static constexpr std::uint64_t kSubBucketCount = kSubBucketHalfCount * 2;                  // 256
  static constexpr std::uint64_t kSubBucketMask = kSubBucketCount - 1;
  static constexpr int kMaxValueMagnitude = 36;                        // 2^36 ns ≈ 68.7 s
  static constexpr std::uint64_t kHighestTrackableValue = (std::uint64_t{1} << kMaxValueMagnitude) - 1;
  // Buckets needed so that kHighestTrackableValue has an index (HdrHistogram's bucketsNeededToCoverValue).
  static constexpr int kBucketCount = kMaxValueMagnitude - (kSubBucketHalfCountMagnitude + 1) + 1;
  static constexpr std::size_t kCountsLength = static_cast<std::size_t>(kBucketCount + 1) * kSubBucketHalfCount;

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Engine thread only.
  void record(std::uint64_t value_ns) {
    if (value_ns > kHighestTrackableValue) {
      bump(saturated_);
      value_ns = kHighestTrackableValue;
    }
    bump(counts_[index_of(value_ns)]);
    bump(total_);
  }

  // Any thread.
  std::uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  std::uint64_t saturated() const { return saturated_.load(std::memory_order_relaxed); }
  std::uint64_t count_at_index(std::size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  // Copies every counter into out (kCountsLength entries).
  void snapshot(std::span<std::uint64_t, kCountsLength> out) const {
    for (std::size_t i = 0; i < kCountsLength; ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  }

  static std::size_t index_of(std::uint64_t value) {
    const int bucket = 64 - std::countl_zero(value | kSubBucketMask) - (kSubBucketHalfCountMagnitude + 1);
    const auto sub_bucket = static_cast<std::size_t>(value >> bucket);
    return (static_cast<std::size_t>(bucket + 1) << kSubBucketHalfCountMagnitude) + sub_bucket - kSubBucketHalfCount;
  }

  // The lowest value that lands in counter i (HdrHistogram's valueFromIndex).
  static std::uint64_t value_at_index(std::size_t i) {
    int bucket = static_cast<int>(i >> kSubBucketHalfCountMagnitude) - 1;
    std::uint64_t sub_bucket = (i & (kSubBucketHalfCount - 1)) + kSubBucketHalfCount;
    if (bucket < 0) {
      sub_bucket -= kSubBucketHalfCount;
      bucket = 0;
    }
    return sub_bucket << bucket;
  }

 private:
  static void bump(std::atomic<std::uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  alignas(64) std::atomic<std::uint64_t> total_{0};
  std::atomic<std::uint64_t> saturated_{0};
  alignas(64) std::array<std::atomic<std::uint64_t>, kCountsLength> counts_{};
};

}  // namespace qpgate::metrics
