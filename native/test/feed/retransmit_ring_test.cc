// The retransmission ring: bounded by frames and by bytes, oldest evicted
// first, and a range lookup answers with whole frames or "range gone".
#include <gtest/gtest.h>

#include "feed/retransmit_ring.h"
#include "test_util.h"

namespace qpgate::feed {
namespace {

constexpr std::uint32_t kSession = 0xabc;

// Appends frames of `per` messages each, starting at seq 1; returns the next sequence.
std::uint64_t publish(RetransmitRing& ring, int frames, std::uint16_t per, std::size_t body = 20,
                      std::uint64_t seq = 1) {
  for (int i = 0; i < frames; ++i) {
    EXPECT_EQ(ring.append(test::data_frame(kSession, seq, per, body)), AppendResult::kStored);
    seq += per;
  }
  return seq;
}

TEST(RetransmitRing, KeepsAtMostMaxFramesAndEvictsTheOldest) {
  RetransmitRing ring({.max_frames = 4, .max_bytes = 1 << 20});
  const auto next = publish(ring, 10, 3);  // seqs 1..30
  EXPECT_EQ(ring.frames(), 4u);
  EXPECT_EQ(ring.oldest_seq(), 19u);
  EXPECT_EQ(ring.next_seq(), next);
  EXPECT_EQ(ring.counters().evicted_frames, 6u);
}

TEST(RetransmitRing, KeepsAtMostMaxBytesAndEvictsTheOldest) {
  // Each frame: 32 + 2 * (12 + 50) = 156 bytes; 1000 bytes hold at most 6.
  RetransmitRing ring({.max_frames = 1000, .max_bytes = 1000});
  publish(ring, 50, 2, 50);
  EXPECT_LE(ring.bytes(), 1000u);
  EXPECT_GE(ring.frames(), 5u);  // the wrap may waste the tail
  EXPECT_LE(ring.frames(), 6u);
  EXPECT_EQ(ring.oldest_seq(), ring.next_seq() - 2 * ring.frames());
  // What is held is intact after many wraps.
  const auto r = ring.lookup(ring.oldest_seq(), static_cast<std::uint32_t>(2 * ring.frames()));
  ASSERT_EQ(r.status, RangeStatus::kOk);
  ASSERT_EQ(r.frames.size(), ring.frames());
  std::uint64_t seq = ring.oldest_seq();
  for (const auto& f : r.frames) {
    const auto p = parse_frame(f);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->header().first_seq(), seq);
    EXPECT_EQ(std::vector<std::uint8_t>(f.begin(), f.end()), test::data_frame(kSession, seq, 2, 50));
    seq += 2;
  }
}

TEST(RetransmitRing, ARangeLookupReturnsTheWholeFramesThatCoverIt) {
  RetransmitRing ring({.max_frames = 100, .max_bytes = 1 << 20});
  publish(ring, 10, 5);  // frames at 1, 6, 11, ..., 46; next 51
  const auto r = ring.lookup(8, 6);  // 8..13 → frames 6..10 and 11..15
  ASSERT_EQ(r.status, RangeStatus::kOk);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(parse_frame(r.frames[0])->header().first_seq(), 6u);
  EXPECT_EQ(parse_frame(r.frames[1])->header().first_seq(), 11u);
  EXPECT_EQ(r.oldest_seq, 1u);
  EXPECT_EQ(r.next_seq, 51u);

  const auto tail = ring.lookup(49, 100);  // clipped to what was published
  ASSERT_EQ(tail.status, RangeStatus::kOk);
  ASSERT_EQ(tail.frames.size(), 1u);
  EXPECT_EQ(parse_frame(tail.frames[0])->header().first_seq(), 46u);

  EXPECT_EQ(ring.lookup(51, 1).status, RangeStatus::kInvalidRange);  // not published yet
  EXPECT_EQ(ring.lookup(5, 0).status, RangeStatus::kInvalidRange);
  EXPECT_EQ(ring.lookup(0, 3).status, RangeStatus::kInvalidRange);
}

TEST(RetransmitRing, ARangeThatWasEvictedIsGoneAndOneAcrossTheEvictionPointToo) {
  RetransmitRing ring({.max_frames = 3, .max_bytes = 1 << 20});
  publish(ring, 6, 4);  // frames 1,5,9,13,17,21; holds 13,17,21; next 25
  EXPECT_EQ(ring.oldest_seq(), 13u);
  EXPECT_EQ(ring.lookup(1, 4).status, RangeStatus::kRangeGone);
  const auto across = ring.lookup(10, 8);  // 10..17 straddles the eviction point
  EXPECT_EQ(across.status, RangeStatus::kRangeGone);
  EXPECT_EQ(across.oldest_seq, 13u);  // a subscriber could still take 13.. from here
  const auto kept = ring.lookup(13, 12);
  ASSERT_EQ(kept.status, RangeStatus::kOk);
  EXPECT_EQ(kept.frames.size(), 3u);
  EXPECT_EQ(ring.counters().lookups_gone, 2u);
}

TEST(RetransmitRing, HeartbeatsAndSnapshotFramesAreNotKept) {
  RetransmitRing ring;
  EXPECT_EQ(ring.append(test::heartbeat(kSession, 1)), AppendResult::kNotSequenced);
  auto snap = test::data_frame(kSession, 1, 1);
  snap[1] = flags::kSnapshot;
  EXPECT_EQ(ring.append(snap), AppendResult::kNotSequenced);
  EXPECT_EQ(ring.append(std::vector<std::uint8_t>(5)), AppendResult::kNotSequenced);
  EXPECT_EQ(ring.frames(), 0u);
}

TEST(RetransmitRing, ADiscontinuityStartsTheRingOverRatherThanLie) {
  RetransmitRing ring;
  publish(ring, 3, 2);  // 1..6
  EXPECT_EQ(ring.append(test::data_frame(kSession, 10, 2)), AppendResult::kNotContiguous);
  EXPECT_EQ(ring.frames(), 1u);
  EXPECT_EQ(ring.lookup(3, 1).status, RangeStatus::kRangeGone);
}

TEST(RetransmitRing, AFrameLargerThanTheByteBudgetIsRefused) {
  RetransmitRing ring({.max_frames = 10, .max_bytes = 100});
  EXPECT_EQ(ring.append(test::data_frame(kSession, 1, 3, 40)), AppendResult::kTooLarge);
}

}  // namespace
}  // namespace qpgate::feed
