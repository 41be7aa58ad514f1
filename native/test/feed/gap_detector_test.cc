// Gap detection on one channel: in order, duplicates, overlaps, gaps,
// heartbeats at the tail, and a session change.
#include <gtest/gtest.h>

#include "feed/gap_detector.h"

namespace qpgate::feed {
namespace {

TEST(GapDetector, SynchronisesOnTheFirstFrameThenFollowsTheSequence) {
  GapDetector g;
  EXPECT_FALSE(g.synced());
  EXPECT_EQ(g.on_frame(5, 100, 3).verdict, SeqVerdict::kFirst);
  EXPECT_EQ(g.expected(), 103u);
  EXPECT_EQ(g.on_frame(5, 103, 2).verdict, SeqVerdict::kInOrder);
  EXPECT_EQ(g.expected(), 105u);
}

TEST(GapDetector, AFrameAlreadySeenIsADuplicateAndAPartlySeenOneAnOverlap) {
  GapDetector g;
  g.resync(5, 10);
  EXPECT_EQ(g.on_frame(5, 10, 5).verdict, SeqVerdict::kInOrder);
  EXPECT_EQ(g.on_frame(5, 10, 5).verdict, SeqVerdict::kDuplicate);
  const auto r = g.on_frame(5, 13, 4);  // 13..16, expected 15
  EXPECT_EQ(r.verdict, SeqVerdict::kOverlap);
  EXPECT_EQ(r.skip, 2);
  EXPECT_EQ(g.expected(), 17u);
  EXPECT_EQ(g.counters().duplicates, 1u);
}

TEST(GapDetector, AFrameAheadReportsTheMissingRange) {
  GapDetector g;
  g.resync(5, 10);
  const auto r = g.on_frame(5, 14, 2);
  EXPECT_EQ(r.verdict, SeqVerdict::kGap);
  EXPECT_EQ(r.gap_from, 10u);
  EXPECT_EQ(r.gap_count, 4u);
  EXPECT_EQ(g.expected(), 16u);
  EXPECT_EQ(g.counters().gap_messages, 4u);
}

TEST(GapDetector, AHeartbeatAheadRevealsALossAtTheTail) {
  GapDetector g;
  g.resync(5, 10);
  EXPECT_EQ(g.on_frame(5, 10, 0).verdict, SeqVerdict::kInOrder);  // idle, nothing missed
  const auto r = g.on_frame(5, 12, 0);
  EXPECT_EQ(r.verdict, SeqVerdict::kGap);
  EXPECT_EQ(r.gap_from, 10u);
  EXPECT_EQ(r.gap_count, 2u);
  EXPECT_EQ(g.on_frame(5, 11, 0).verdict, SeqVerdict::kDuplicate);  // a late heartbeat from the slow line
}

TEST(GapDetector, ANewSessionIsASessionChangeAndRestartsTheSequence) {
  GapDetector g;
  g.resync(5, 1000);
  const auto r = g.on_frame(6, 1, 4);
  EXPECT_EQ(r.verdict, SeqVerdict::kSessionChange);
  EXPECT_EQ(g.session(), 6u);
  EXPECT_EQ(g.expected(), 5u);
  EXPECT_EQ(g.counters().session_changes, 1u);
}

}  // namespace
}  // namespace qpgate::feed
