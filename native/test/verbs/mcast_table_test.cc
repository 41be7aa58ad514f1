#include "verbs/soft/mcast_table.h"

#include <gtest/gtest.h>

namespace qpgate::verbs::soft {
namespace {

constexpr std::uint32_t kGroup = 0xef010203;  // 239.1.2.3

TEST(McastMapping, AnIpv4GroupMapsToTheIpv4MappedMgidAndBack) {
  auto mgid = mgid_for_ipv4_group(kGroup);
  ASSERT_TRUE(mgid.has_value());
  EXPECT_EQ(mgid->to_string(), "::ffff:239.1.2.3");
  EXPECT_EQ(ipv4_group_for_mgid(*mgid), kGroup);
  EXPECT_FALSE(mgid_for_ipv4_group(0x0a000001).has_value()) << "10.0.0.1 is not a group";
  EXPECT_FALSE(ipv4_group_for_mgid(Gid::from_ipv4(0x0a000001)).has_value());
  EXPECT_FALSE(ipv4_group_for_mgid(*Gid::parse("ff0e::1")).has_value()) << "an IPv6 MGID has no IPv4 group";
}

TEST(McastTable, TheFirstAttachCreatesTheGroupAndLaterOnesJoinIt) {
  McastTable t;
  const Gid g = *mgid_for_ipv4_group(kGroup);
  EXPECT_EQ(*t.attach(g, 0x11), AttachOutcome::NEW_GROUP);
  EXPECT_EQ(*t.attach(g, 0x12), AttachOutcome::ATTACHED);
  ASSERT_EQ(t.qps(g).size(), 2u);
  EXPECT_EQ(t.qps_for_ipv4(kGroup).size(), 2u) << "an arriving packet's destination IP finds the group";
}

TEST(McastTable, AttachingTheSameQpTwiceIsIdempotentAndDeliversOneCopy) {
  McastTable t;
  const Gid g = *mgid_for_ipv4_group(kGroup);
  ASSERT_TRUE(t.attach(g, 0x11).ok());
  auto again = t.attach(g, 0x11);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, AttachOutcome::ALREADY_ATTACHED);
  EXPECT_EQ(t.qps(g).size(), 1u);
}

TEST(McastTable, AGroupHoldsAtMost56QpsLikeRxe) {
  McastTable t;
  const Gid g = *mgid_for_ipv4_group(kGroup);
  for (std::uint32_t q = 1; q <= 56; ++q) ASSERT_TRUE(t.attach(g, q).ok());
  auto r = t.attach(g, 57);
  EXPECT_EQ(r.code(), ENOMEM);
  EXPECT_EQ(r.message(), "attach_mcast: group ::ffff:239.1.2.3 already has 56 QPs (max_mcast_qp_attach)");
  EXPECT_EQ(*t.attach(g, 56), AttachOutcome::ALREADY_ATTACHED) << "a member re-attaching is still fine";
}

TEST(McastTable, TooManyGroupsIsEnomem) {
  McastTable t(2, 56);
  ASSERT_TRUE(t.attach(Gid::from_ipv4(0xe0000001), 1).ok());
  ASSERT_TRUE(t.attach(Gid::from_ipv4(0xe0000002), 1).ok());
  EXPECT_EQ(t.attach(Gid::from_ipv4(0xe0000003), 1).code(), ENOMEM);
}

TEST(McastTable, AUnicastGidCannotBeAttached) {
  McastTable t;
  auto r = t.attach(Gid::from_ipv4(0x0a000001), 1);
  EXPECT_EQ(r.code(), EINVAL);
  EXPECT_NE(std::string(r.message()).find("::ffff:10.0.0.1 is not a multicast GID"), std::string::npos);
  EXPECT_TRUE(t.attach(*Gid::parse("ff0e::1234"), 1).ok()) << "IPv6 MGIDs are kept verbatim";
}

TEST(McastTable, TheLastDetachEmptiesTheGroupSoTheNetworkLeavesIt) {
  McastTable t;
  const Gid g = *mgid_for_ipv4_group(kGroup);
  ASSERT_TRUE(t.attach(g, 1).ok());
  ASSERT_TRUE(t.attach(g, 2).ok());
  EXPECT_EQ(*t.detach(g, 1), DetachOutcome::DETACHED);
  EXPECT_EQ(t.detach(g, 1).code(), EINVAL) << "no longer attached";
  EXPECT_EQ(*t.detach(g, 2), DetachOutcome::GROUP_EMPTY);
  EXPECT_EQ(t.group_count(), 0u);
  EXPECT_TRUE(t.qps(g).empty());
  EXPECT_EQ(t.detach(g, 2).message(), "detach_mcast: QP 2 is not attached to ::ffff:239.1.2.3");
}

TEST(McastTable, DestroyingAQpDetachesItFromEveryGroup) {
  McastTable t;
  const Gid a = Gid::from_ipv4(0xe0000001);
  const Gid b = Gid::from_ipv4(0xe0000002);
  ASSERT_TRUE(t.attach(a, 7).ok());
  ASSERT_TRUE(t.attach(b, 7).ok());
  ASSERT_TRUE(t.attach(b, 8).ok());
  const auto emptied = t.detach_all(7);
  ASSERT_EQ(emptied.size(), 1u);
  EXPECT_EQ(emptied[0], a);
  EXPECT_EQ(t.qps(b).size(), 1u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
