#include "verbs/gid.h"

#include <gtest/gtest.h>

namespace qpgate::verbs {
namespace {

TEST(Gid, AnIpv4AddressBecomesTheIpv4MappedGidAndBack) {
  const Gid g = Gid::from_ipv4(0x0a000001);
  EXPECT_TRUE(g.is_ipv4_mapped());
  EXPECT_EQ(g.to_ipv4(), 0x0a000001u);
  EXPECT_EQ(g.raw[10], 0xff);
  EXPECT_EQ(g.raw[11], 0xff);
  EXPECT_EQ(g.raw[12], 10);
  EXPECT_EQ(g.raw[15], 1);
  EXPECT_FALSE(g.is_multicast());
}

TEST(Gid, PrintsAsInetNtopAndAsIbvDevinfo) {
  const Gid g = Gid::from_ipv4(0x0a000001);
  EXPECT_EQ(g.to_string(), "::ffff:10.0.0.1");
  EXPECT_EQ(g.to_long_string(), "0000:0000:0000:0000:0000:ffff:0a00:0001");
  EXPECT_EQ(Gid{}.to_string(), "::");
}

TEST(Gid, ParsesDottedQuadsAndIpv6Text) {
  EXPECT_EQ(Gid::parse("127.0.0.2"), Gid::from_ipv4(0x7f000002));
  EXPECT_EQ(Gid::parse("::ffff:127.0.0.2"), Gid::from_ipv4(0x7f000002));
  auto v6 = Gid::parse("fe80::1");
  ASSERT_TRUE(v6.has_value());
  EXPECT_FALSE(v6->is_ipv4_mapped());
  EXPECT_FALSE(v6->to_ipv4().has_value());
  EXPECT_EQ(v6->to_string(), "fe80::1");
  EXPECT_FALSE(Gid::parse("").has_value());
  EXPECT_FALSE(Gid::parse("10.0.0").has_value());
  EXPECT_FALSE(Gid::parse("not a gid").has_value());
  EXPECT_FALSE(Gid::parse(std::string(100, '1')).has_value());
}

TEST(Gid, MulticastMeansFf00Slash8OrAnIpv4MappedClassDGroup) {
  EXPECT_TRUE(Gid::from_ipv4(0xe0000001).is_multicast());
  EXPECT_TRUE(Gid::from_ipv4(0xefffffff).is_multicast());
  EXPECT_FALSE(Gid::from_ipv4(0xf0000000).is_multicast());
  EXPECT_TRUE(Gid::parse("ff0e::ffff:239.1.2.3")->is_multicast());
  EXPECT_TRUE(Gid{}.is_zero());
}

TEST(Ipv4, FormatsAndParsesHostOrderAddresses) {
  EXPECT_EQ(ipv4_to_string(0xc0a80101), "192.168.1.1");
  EXPECT_EQ(ipv4_parse("192.168.1.1"), 0xc0a80101u);
  EXPECT_FALSE(ipv4_parse("192.168.1.256").has_value());
  EXPECT_TRUE(ipv4_is_multicast(0xe0000000));
  EXPECT_FALSE(ipv4_is_multicast(0xdfffffff));
}

}  // namespace
}  // namespace qpgate::verbs
