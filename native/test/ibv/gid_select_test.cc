// GID selection over tables shaped like real ones, without a device.
#include "verbs/ibv/gid_select.h"

#include <gtest/gtest.h>

namespace qpgate::verbs::ibv {
namespace {

Gid g(const char* text) { return *Gid::parse(text); }
std::uint32_t ip(const char* text) { return *ipv4_parse(text); }

// rxe on eth0 10.77.0.1: link-local and site-local IPv6 at 0 and 2, the
// IPv4-mapped at 1, all RoCE v2 (what the rdma-vm guest shows).
std::vector<GidEntry> rxe_table() {
  return {
      {0, g("fe80::5054:ff:fe12:3456"), GidType::ROCE_V2, "eth0"},
      {1, g("::ffff:10.77.0.1"), GidType::ROCE_V2, "eth0"},
      {2, g("fec0::5054:ff:fe12:3456"), GidType::ROCE_V2, "eth0"},
  };
}

// mlx5: each address twice, RoCE v1 first, then v2; two addresses.
std::vector<GidEntry> mlx5_table() {
  return {
      {0, g("fe80::268a:7ff:fe11:2233"), GidType::ROCE_V1, "ens1f0"},
      {1, g("fe80::268a:7ff:fe11:2233"), GidType::ROCE_V2, "ens1f0"},
      {2, g("::ffff:192.168.10.5"), GidType::ROCE_V1, "ens1f0"},
      {3, g("::ffff:192.168.10.5"), GidType::ROCE_V2, "ens1f0"},
      {4, g("::ffff:192.168.20.5"), GidType::ROCE_V1, "ens1f0"},
      {5, g("::ffff:192.168.20.5"), GidType::ROCE_V2, "ens1f0"},
  };
}

TEST(GidSelect, PicksTheRoceV2Ipv4MappedGidOfTheBoundInterface) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth0", {ip("10.77.0.1")}, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->index, 1);
  EXPECT_EQ(c->gid, g("::ffff:10.77.0.1"));
  EXPECT_TRUE(c->automatic);
  EXPECT_EQ(c->report,
            "rxe0 port 1: GID index 1 ::ffff:10.77.0.1 (RoCE v2, eth0), chosen automatically: "
            "the RoCE v2 IPv4-mapped GID of eth0 10.77.0.1");
}

TEST(GidSelect, SkipsTheRoceV1EntryOfTheSameAddress) {
  const auto t = mlx5_table();
  auto c = select_gid(t, {"mlx5_0", 1, "ens1f0", {ip("192.168.10.5"), ip("192.168.20.5")}, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->index, 3);
  EXPECT_EQ(c->type, GidType::ROCE_V2);
}

TEST(GidSelect, PrefersTheAddressGivenFirst) {
  const auto t = mlx5_table();
  auto c = select_gid(t, {"mlx5_0", 1, "ens1f0", {ip("192.168.20.5"), ip("192.168.10.5")}, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->index, 5);
}

TEST(GidSelect, NoMatchingGidIsEnodevAndListsTheTable) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth1", {ip("10.99.0.1")}, std::nullopt});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), ENODEV);
  EXPECT_NE(c.message().find("no RoCE v2 GID carries an IPv4 address of eth1 (10.99.0.1)"), std::string::npos)
      << c.message();
  EXPECT_NE(c.message().find("[1] ::ffff:10.77.0.1 RoCE v2 eth0"), std::string::npos) << c.message();
}

TEST(GidSelect, AnInterfaceWithoutIpv4HasNoAutomaticChoice) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth0", {}, std::nullopt});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("(no IPv4 address)"), std::string::npos) << c.message();
}

TEST(GidSelect, OverrideWinsAndWarnsWhenItIsNotTheAutomaticChoice) {
  const auto t = mlx5_table();
  auto c = select_gid(t, {"mlx5_0", 1, "ens1f0", {ip("192.168.10.5")}, 2u});
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->index, 2);
  EXPECT_FALSE(c->automatic);
  EXPECT_NE(c->report.find("chosen by override"), std::string::npos);
  EXPECT_NE(c->report.find("WARNING: the automatic choice would be index 3"), std::string::npos) << c->report;
  EXPECT_NE(c->report.find("a RoCE v1 GID"), std::string::npos) << c->report;
}

TEST(GidSelect, OverrideEqualToTheAutomaticChoiceSaysSo) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth0", {ip("10.77.0.1")}, 1u});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->report.find("it is also the automatic choice"), std::string::npos) << c->report;
}

TEST(GidSelect, OverrideOfAnEmptyEntryIsEinval) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth0", {ip("10.77.0.1")}, 7u});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), EINVAL);
  EXPECT_NE(c.message().find("GID index override 7 is not a valid entry"), std::string::npos) << c.message();
}

TEST(GidSelect, OverrideBeyondEightBitsIsEinval) {
  const auto t = rxe_table();
  auto c = select_gid(t, {"rxe0", 1, "eth0", {}, 300u});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("out of range 0..255"), std::string::npos) << c.message();
}

}  // namespace
}  // namespace qpgate::verbs::ibv
