#include "wire/psn.h"

#include <gtest/gtest.h>

#include <vector>

#include "capture_corpus.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

namespace qpgate::wire {
namespace {

TEST(PsnTest, AddWrapsFromTheTopOf24BitsToZero) {
  EXPECT_EQ(psn_add(0xfffffe, 1), 0xffffffu);
  EXPECT_EQ(psn_add(0xffffff, 1), 0u);
  EXPECT_EQ(psn_add(0xffffff, 2), 1u);
  EXPECT_EQ(psn_add(0xfffffe, 3), 1u);
  EXPECT_EQ(psn_sub(0, 1), 0xffffffu);
  EXPECT_EQ(psn_sub(1, 3), 0xfffffeu);
}

TEST(PsnTest, DistanceIsSignedAndShortestAcrossTheWrap) {
  EXPECT_EQ(psn_distance(0, 0xffffff), 1);
  EXPECT_EQ(psn_distance(1, 0xfffffe), 3);
  EXPECT_EQ(psn_distance(0xfffffe, 1), -3);
  EXPECT_EQ(psn_distance(5, 5), 0);
  // Half the space ahead is "behind": rxe's (s32)((a - b) << 8) has its sign
  // bit at 2^23.
  EXPECT_EQ(psn_distance(0x800000, 0), -0x800000);
  EXPECT_EQ(psn_distance(0x7fffff, 0), 0x7fffff);
}

TEST(PsnTest, CompareMatchesRxePsnCompareEverywhereAroundTheWrap) {
  auto rxe = [](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t shifted = (a - b) << 8;
    const auto s = static_cast<std::int32_t>(shifted);  // two's complement in C++20
    return s < 0 ? -1 : (s > 0 ? 1 : 0);
  };
  const std::vector<std::uint32_t> probes = {0, 1, 2, 0x7ffffe, 0x7fffff, 0x800000, 0x800001,
                                             0xfffffd, 0xfffffe, 0xffffff};
  for (auto a : probes) {
    for (auto b : probes) EXPECT_EQ(psn_compare(a, b), rxe(a, b)) << std::hex << a << " vs " << b;
  }
  EXPECT_TRUE(psn_after(0, 0xffffff));
  EXPECT_TRUE(psn_before(0xfffffe, 1));
}

TEST(PsnTest, RcImmCaptureRequestsAdvanceByOneAcrossTheWrap) {
  QPGATE_REQUIRE_CAPTURES();
  const auto packets = testing::load_reference_packets("more/rc-imm.pcap");
  ASSERT_FALSE(packets.empty());
  std::vector<std::uint32_t> requests;
  for (const auto& cp : packets) {
    const auto outer = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer.ok());
    const auto p = decode(outer->roce);
    ASSERT_TRUE(p.ok()) << decode_error_name(p.error());
    if (p->op->is(kOpRequest)) requests.push_back(p->bth().psn());
  }
  ASSERT_GE(requests.size(), 5u);
  // The capture was made to wrap: 0xfffffe → 0xffffff → 0 → 1 → 2.
  EXPECT_EQ(requests[0], 0xfffffeu);
  EXPECT_EQ(requests[1], 0xffffffu);
  EXPECT_EQ(requests[2], 0u);
  EXPECT_EQ(requests[3], 1u);
  for (std::size_t i = 1; i < requests.size(); ++i) {
    EXPECT_EQ(psn_distance(requests[i], requests[i - 1]), 1) << "request " << i;
    EXPECT_EQ(requests[i], psn_add(requests[i - 1], 1));
    EXPECT_TRUE(psn_after(requests[i], requests[i - 1]));
  }
}

}  // namespace
}  // namespace qpgate::wire
