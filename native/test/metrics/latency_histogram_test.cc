#include "metrics/latency_histogram.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace qpgate::metrics {
namespace {

using H = LatencyHistogram;

TEST(LatencyHistogram, EveryValueLandsInTheCounterWhoseRangeHoldsIt) {
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> values = {0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 4095, 4096, 1'000'000,
                                       H::kHighestTrackableValue};
  for (int i = 0; i < 100'000; ++i) values.push_back(rng() >> (28 + (rng() % 36)));
  for (const std::uint64_t v : values) {
    const std::size_t i = H::index_of(v);
    ASSERT_LT(i, H::kCountsLength) << v;
    EXPECT_LE(H::value_at_index(i), v) << v;
    if (i + 1 < H::kCountsLength) {
      EXPECT_LT(v, H::value_at_index(i + 1)) << v;
    }
  }
}

TEST(LatencyHistogram, ValuesAreKeptToTwoSignificantDigits) {
  for (std::uint64_t v = 1; v < H::kHighestTrackableValue; v = v * 3 / 2 + 1) {
    const std::size_t i = H::index_of(v);
    const std::uint64_t width = H::value_at_index(i + 1) - H::value_at_index(i);
    // A counter spans at most 1/128 of its values: better than 1 % resolution.
    EXPECT_LE(width * 128, std::max<std::uint64_t>(v, 128)) << v;
  }
}

TEST(LatencyHistogram, CounterValuesIncreaseWithTheirIndex) {
  for (std::size_t i = 1; i < H::kCountsLength; ++i) {
    ASSERT_GT(H::value_at_index(i), H::value_at_index(i - 1)) << i;
  }
}

TEST(LatencyHistogram, RecordingCountsEachValueOnceInItsCounter) {
  auto h = std::make_unique<H>();
  h->record(1500);
  h->record(1500);
  h->record(20'000);
  EXPECT_EQ(h->total(), 3u);
  EXPECT_EQ(h->count_at_index(H::index_of(1500)), 2u);
  EXPECT_EQ(h->count_at_index(H::index_of(20'000)), 1u);
  std::array<std::uint64_t, H::kCountsLength> snap{};
  h->snapshot(snap);
  std::uint64_t sum = 0;
  for (const auto c : snap) sum += c;
  EXPECT_EQ(sum, 3u);
}

TEST(LatencyHistogram, AValueBeyondTheRangeIsClampedAndCountedAsSaturated) {
  auto h = std::make_unique<H>();
  h->record(H::kHighestTrackableValue + 12345);
  EXPECT_EQ(h->saturated(), 1u);
  EXPECT_EQ(h->total(), 1u);
  EXPECT_EQ(h->count_at_index(H::kCountsLength - 1), 1u);
}

TEST(LatencyHistogram, AReaderOnAnotherThreadNeverSeesMoreThanWasRecorded) {
  auto h = std::make_unique<H>();
  constexpr int kRecords = 2'000'000;
  std::thread writer([&] {
    for (int i = 0; i < kRecords; ++i) h->record(static_cast<std::uint64_t>(i % 5000));
  });
  std::array<std::uint64_t, H::kCountsLength> snap{};
  std::uint64_t last_total = 0;
  for (int n = 0; n < 200; ++n) {
    const std::uint64_t total_before = h->total();
    EXPECT_GE(total_before, last_total);
    last_total = total_before;
    h->snapshot(snap);
    std::uint64_t sum = 0;
    for (const auto c : snap) sum += c;
    EXPECT_LE(sum, static_cast<std::uint64_t>(kRecords));
  }
  writer.join();
  EXPECT_EQ(h->total(), static_cast<std::uint64_t>(kRecords));
}

}  // namespace
}  // namespace qpgate::metrics
