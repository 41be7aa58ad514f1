#include "verbs/timers.h"

#include <gtest/gtest.h>

namespace qpgate::verbs {
namespace {

TEST(LocalAckTimeout, IsFourPoint096MicrosecondsTimesTwoToTheTimeout) {
  EXPECT_EQ(local_ack_timeout_ns(1), 8192u);
  EXPECT_EQ(local_ack_timeout_ns(14), 67108864u) << "≈67 ms, rc_pingpong's default";
  EXPECT_EQ(local_ack_timeout_ns(31), 4096ull << 31) << "≈2.4 hours";
}

TEST(LocalAckTimeout, ZeroMeansInfinite) {
  EXPECT_EQ(local_ack_timeout_ns(0), kInfiniteNs);
  EXPECT_EQ(local_ack_timeout_ns(32), kInfiniteNs);
}

TEST(RnrTimer, FollowsTheIbaTableNotRxesTypo) {
  EXPECT_EQ(rnr_timer_us(0), 655360u) << "code 0 is the longest: 655.36 ms";
  EXPECT_EQ(rnr_timer_us(1), 10u);
  EXPECT_EQ(rnr_timer_us(12), 640u) << "rc_pingpong's min_rnr_timer";
  EXPECT_EQ(rnr_timer_us(14), 1280u);
  EXPECT_EQ(rnr_timer_us(25), 61440u) << "61.44 ms; rxe's table says 61410";
  EXPECT_EQ(rnr_timer_us(31), 491520u);
  EXPECT_EQ(rnr_timer_ns(1), 10000u);
}

TEST(RnrTimer, CodesOneToThirtyOneGrowStrictly) {
  for (std::uint8_t c = 2; c <= 31; ++c) EXPECT_GT(rnr_timer_us(c), rnr_timer_us(c - 1)) << int{c};
}

TEST(RnrTimer, TheCodeForADelayIsTheSmallestThatWaitsAtLeastThatLong) {
  EXPECT_EQ(rnr_timer_code_for_us(1), 1);
  EXPECT_EQ(rnr_timer_code_for_us(10), 1);
  EXPECT_EQ(rnr_timer_code_for_us(11), 2);
  EXPECT_EQ(rnr_timer_code_for_us(640), 12);
  EXPECT_EQ(rnr_timer_code_for_us(491520), 31);
  EXPECT_EQ(rnr_timer_code_for_us(500000), 0) << "only code 0 waits longer";
}

}  // namespace
}  // namespace qpgate::verbs
