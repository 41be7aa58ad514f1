// The SPSC ring: layout, wrap-around, back-pressure, the wake-up protocol,
// and two threads moving millions of variable-length records.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/spsc_ring.h"
#include "engine/record_types.h"

namespace qpgate::engine {
namespace {

// 8-byte aligned storage for a ring of `capacity` bytes.
struct RingStorage {
  explicit RingStorage(std::int64_t capacity)
      : words(static_cast<std::size_t>(RingView::total_length(capacity) / 8), 0),
        view(reinterpret_cast<std::byte*>(words.data()), capacity) {}
  std::vector<std::uint64_t> words;
  RingView view;
};

// Payload of record `seq`: its length varies with seq, bytes derive from it.
std::int32_t length_of(std::uint64_t seq, std::int32_t max) { return static_cast<std::int32_t>((seq * 37) % static_cast<std::uint64_t>(max + 1)); }
std::byte byte_of(std::uint64_t seq, std::int32_t i) { return static_cast<std::byte>((seq + static_cast<std::uint64_t>(i) * 7) & 0xff); }

void fill(std::byte* dst, std::uint64_t seq, std::int32_t length) {
  for (std::int32_t i = 0; i < length; ++i) dst[i] = byte_of(seq, i);
}

bool matches(const std::byte* p, std::uint64_t seq, std::int32_t length) {
  for (std::int32_t i = 0; i < length; ++i) {
    if (p[i] != byte_of(seq, i)) return false;
  }
  return true;
}

TEST(SpscRing, LayoutConstantsAreTheOnesTheTypeScriptSideUses) {
  EXPECT_EQ(ring_layout::kTailOffset, 0);
  EXPECT_EQ(ring_layout::kHeadOffset, 128);
  EXPECT_EQ(ring_layout::kWaitingOffset, 256);
  EXPECT_EQ(ring_layout::kTrailerLength, 384);
  EXPECT_EQ(ring_layout::kHeaderLength, 8);
  EXPECT_EQ(ring_layout::kPaddingType, -1);
  EXPECT_TRUE(valid_ring_capacity(1024));
  EXPECT_FALSE(valid_ring_capacity(1000));
  EXPECT_FALSE(valid_ring_capacity(512));
}

TEST(SpscRing, RecordsComeOutInOrderWithTheirTypesAndBytes) {
  RingStorage s(4096);
  SpscProducer producer(s.view);
  SpscConsumer consumer(s.view);
  const std::uint8_t a[] = {1, 2, 3};
  const std::uint8_t b[] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  ASSERT_TRUE(producer.append(5, a, sizeof a));
  ASSERT_TRUE(producer.append(6, b, sizeof b));
  ASSERT_TRUE(producer.append(7, nullptr, 0));
  EXPECT_TRUE(consumer.empty()) << "nothing is visible before publish()";
  ASSERT_TRUE(producer.publish());
  // Header of the first record, as JS would read it.
  std::int32_t length = 0;
  std::memcpy(&length, s.view.data(), 4);
  EXPECT_EQ(length, 8 + 3);
  EXPECT_EQ(s.view.tail().load(), align8(11) + align8(17) + 8);

  std::vector<std::pair<std::int32_t, std::vector<std::uint8_t>>> seen;
  const int n = consumer.read([&](std::int32_t type, const std::byte* p, std::int32_t len) {
    const auto* u = reinterpret_cast<const std::uint8_t*>(p);
    seen.emplace_back(type, std::vector<std::uint8_t>(u, u + len));
    return true;
  });
  ASSERT_EQ(n, 3);
  EXPECT_EQ(seen[0].first, 5);
  EXPECT_EQ(seen[0].second, std::vector<std::uint8_t>(a, a + 3));
  EXPECT_EQ(seen[1].second, std::vector<std::uint8_t>(b, b + 9));
  EXPECT_EQ(seen[2].first, 7);
  EXPECT_TRUE(seen[2].second.empty());
  EXPECT_EQ(s.view.head().load(), s.view.tail().load());
}

TEST(SpscRing, WrapsWithAPaddingRecordAndVariableLengths) {
  RingStorage s(1024);
  SpscProducer producer(s.view);
  SpscConsumer consumer(s.view);
  std::vector<std::byte> buf(128);
  std::uint64_t written = 0;
  std::uint64_t read = 0;
  int paddings_seen = 0;
  for (int round = 0; round < 2000; ++round) {
    // Write until full, read about half, so the wrap point keeps moving.
    for (;;) {
      const std::int32_t len = length_of(written, 120);
      fill(buf.data(), written, len);
      if (!producer.append(3, buf.data(), len)) break;
      ++written;
    }
    producer.publish();
    const std::int64_t before_head = s.view.head().load();
    consumer.read(
        [&](std::int32_t type, const std::byte* p, std::int32_t len) {
          EXPECT_EQ(type, 3);
          EXPECT_EQ(len, length_of(read, 120));
          EXPECT_TRUE(matches(p, read, len)) << "record " << read;
          ++read;
          return true;
        },
        1 + round % 7);
    if ((before_head & 1023) > (s.view.head().load() & 1023)) ++paddings_seen;
  }
  consumer.read([&](std::int32_t, const std::byte* p, std::int32_t len) {
    EXPECT_TRUE(matches(p, read, len));
    ++read;
    return true;
  });
  EXPECT_EQ(read, written);
  EXPECT_GT(paddings_seen, 10) << "the test must cross the end of the ring many times";
}

TEST(SpscRing, AFullRingRefusesAndLosesNothing) {
  RingStorage s(1024);
  SpscProducer producer(s.view);
  SpscConsumer consumer(s.view);
  std::uint64_t accepted = 0;
  std::byte payload[24]{};
  while (producer.append(1, payload, sizeof payload)) {
    ++accepted;
  }
  EXPECT_EQ(accepted, 1024u / 32u);
  EXPECT_FALSE(producer.append(1, payload, 0)) << "not even an empty record fits";
  producer.publish();
  EXPECT_EQ(s.view.used(), 1024);
  // The consumer refuses half (back-pressure): they stay.
  std::uint64_t taken = 0;
  consumer.read([&](std::int32_t, const std::byte*, std::int32_t) { return ++taken <= accepted / 2; });
  EXPECT_EQ(s.view.used(), 1024 - static_cast<std::int64_t>(accepted / 2) * 32);
  EXPECT_TRUE(producer.append(1, payload, sizeof payload)) << "space freed by the consumer is reusable";
  producer.publish();
  EXPECT_EQ(consumer.read([](std::int32_t, const std::byte*, std::int32_t) { return true; }),
            static_cast<int>(accepted / 2 + 1));
}

TEST(SpscRing, RecordsLargerThanAnEighthOfTheRingAreRefused) {
  RingStorage s(1024);
  SpscProducer producer(s.view);
  EXPECT_EQ(s.view.max_record_length(), 128);
  EXPECT_NE(producer.claim(1, 120), nullptr);
  EXPECT_EQ(producer.claim(1, 121), nullptr);
  EXPECT_EQ(producer.claim(0, 1), nullptr) << "type 0 is not a message type";
  EXPECT_EQ(producer.claim(ring_layout::kPaddingType, 1), nullptr);
}

TEST(SpscRing, ABadHeaderFromTheProducerMarksTheRingCorruptInsteadOfReadingOutOfBounds) {
  RingStorage s(1024);
  SpscConsumer consumer(s.view);
  const std::int32_t bogus[2] = {4000, 1};  // longer than the ring
  std::memcpy(s.view.data(), bogus, sizeof bogus);
  s.view.tail().store(16);
  int calls = 0;
  EXPECT_EQ(consumer.read([&](std::int32_t, const std::byte*, std::int32_t) { return ++calls > 0; }), 0);
  EXPECT_TRUE(consumer.corrupt());
  EXPECT_EQ(calls, 0);
}

TEST(SpscRing, WakeUpProtocolNeverLosesAWake) {
  RingStorage s(1024);
  SpscProducer producer(s.view);
  SpscConsumer consumer(s.view);
  // A consumer that announces on an empty ring may sleep; the next publish
  // takes the wake duty exactly once.
  EXPECT_TRUE(consumer.announce_waiting());
  ASSERT_TRUE(producer.append(1, nullptr, 0));
  producer.publish();
  EXPECT_TRUE(producer.take_wake_duty());
  EXPECT_FALSE(producer.take_wake_duty()) << "one wake per announcement";
  // A consumer that announces while records are there must not sleep.
  EXPECT_FALSE(consumer.announce_waiting());
  EXPECT_EQ(s.view.waiting().load(), 0);
}

TEST(SpscRing, TwoThreadsMoveMillionsOfVariableLengthRecordsIntactAndInOrder) {
  constexpr std::uint64_t kRecords = 2'000'000;
  RingStorage s(1 << 16);
  std::thread producer_thread([&] {
    SpscProducer producer(s.view);
    std::uint64_t seq = 0;
    while (seq < kRecords) {
      // Batches of 1..64 records, published with one tail store each.
      const std::uint64_t batch = 1 + seq % 64;
      for (std::uint64_t i = 0; i < batch && seq < kRecords; ++i) {
        const std::int32_t len = 8 + length_of(seq, 200);
        std::byte* p = producer.claim(static_cast<std::int32_t>(1 + seq % 5), len);
        if (p == nullptr) break;
        std::memcpy(p, &seq, 8);
        fill(p + 8, seq, len - 8);
        ++seq;
      }
      if (!producer.publish()) std::this_thread::yield();
    }
  });
  SpscConsumer consumer(s.view);
  std::uint64_t expected = 0;
  std::uint64_t bad = 0;
  while (expected < kRecords) {
    const int n = consumer.read([&](std::int32_t type, const std::byte* p, std::int32_t len) {
      std::uint64_t seq = 0;
      std::memcpy(&seq, p, 8);
      if (seq != expected || type != static_cast<std::int32_t>(1 + seq % 5) || len != 8 + length_of(seq, 200) ||
          !matches(p + 8, seq, len - 8)) {
        ++bad;
      }
      ++expected;
      return true;
    });
    if (n == 0) std::this_thread::yield();
  }
  producer_thread.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_TRUE(consumer.empty());
  EXPECT_FALSE(consumer.corrupt());
}

}  // namespace
}  // namespace qpgate::engine
