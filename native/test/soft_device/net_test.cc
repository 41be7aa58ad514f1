// The soft device's sockets over real loopback UDP: IPv4 ID 0, per-flow
// source ports, per-packet TOS/TTL, batching, multicast membership.
// Every test uses its own 127.61.N.x addresses and 239.61.N.x groups, so
// ctest -j can run them side by side.
#include <gtest/gtest.h>

#include <netinet/in.h>

#include <algorithm>
#include <string>
#include <vector>

#include "udp_helpers.h"
#include "verbs/soft/net.h"

namespace qpgate::verbs::soft {
namespace {

using test::ip;
using test::PlainSocket;

std::unique_ptr<UdpNet> open_net(const char* addr, bool probe = false) {
  NetConfig c;
  c.address = ip(addr);
  c.probe_ipv4_id = probe;
  auto r = UdpNet::open(c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(*r) : nullptr;
}

TxPacket packet_to(const char* src, const char* dst, std::uint16_t sport, std::span<const std::uint8_t> bytes) {
  TxPacket p;
  p.flow.src = ip(src);
  p.flow.dst = ip(dst);
  p.flow.src_port = sport;
  p.roce = bytes;
  return p;
}

TEST(SoftNet, OurDatagramsCarryIpv4IdZeroAsSeenOnTheWire) {
  auto net = open_net("127.61.1.1", true);
  ASSERT_TRUE(net);
  if (geteuid() != 0) GTEST_SKIP() << net->report().ipv4_id_detail;
  EXPECT_EQ(net->report().ipv4_id, Ipv4IdProbe::ZERO) << net->report().ipv4_id_detail;
}

TEST(SoftNet, ReportsTheSocketBuffersTheKernelGranted) {
  auto net = open_net("127.61.2.1");
  ASSERT_TRUE(net);
  EXPECT_GT(net->report().rcvbuf_granted, 0);
  EXPECT_GT(net->report().sndbuf_granted, 0);
  EXPECT_NE(net->report().source_port_mode.find("per-flow"), std::string::npos);
}

TEST(SoftNet, ASecondDeviceOnTheSameAddressIsRefusedWithEaddrinuse) {
  auto first = open_net("127.61.3.1");
  ASSERT_TRUE(first);
  NetConfig c;
  c.address = ip("127.61.3.1");
  c.probe_ipv4_id = false;
  auto second = UdpNet::open(c);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, EADDRINUSE);
  EXPECT_NE(second.error().message.find("one device per IP address"), std::string::npos) << second.error().message;
}

TEST(SoftNet, APacketLeavesFromItsFlowsSourcePortAndArrivesWithMeta) {
  auto a = open_net("127.61.4.1");
  auto b = open_net("127.61.4.2");
  ASSERT_TRUE(a && b);
  const std::vector<std::uint8_t> bytes(64, 0xab);
  ASSERT_TRUE(a->transmit(packet_to("127.61.4.1", "127.61.4.2", 0xC123, bytes)));
  EXPECT_EQ(a->queued(), 1u);
  EXPECT_EQ(a->flush(), 1);
  std::vector<std::uint8_t> got;
  RxMeta meta;
  ASSERT_TRUE(test::spin_until([&] { return !got.empty(); }, [&] {
    b->receive([&](std::span<const std::uint8_t> roce, const RxMeta& m) {
      got.assign(roce.begin(), roce.end());
      meta = m;
    });
  }));
  EXPECT_EQ(got, bytes);
  EXPECT_EQ(meta.flow.src, ip("127.61.4.1"));
  EXPECT_EQ(meta.flow.src_port, 0xC123);
  EXPECT_EQ(meta.flow.dst, ip("127.61.4.2"));
  EXPECT_EQ(meta.flow.dst_port, 4791);
  EXPECT_EQ(meta.hop_limit, 64);
  EXPECT_GT(meta.rx_ns, 0);
  EXPECT_EQ(a->counters().tx_sockets.get(), 1u);
  EXPECT_EQ(a->counters().tx_sport_fallback.get(), 0u);
}

TEST(SoftNet, TrafficClassAndHopLimitGoIntoEachDatagramsTosAndTtl) {
  auto a = open_net("127.61.5.1");
  ASSERT_TRUE(a);
  PlainSocket plain("127.61.5.2", 4791);
  ASSERT_TRUE(plain.bound());
  const std::vector<std::uint8_t> bytes(32, 1);
  TxPacket p1 = packet_to("127.61.5.1", "127.61.5.2", 0xC200, bytes);
  p1.traffic_class = 0x28;  // DSCP 10 (AF11), ECN 0
  p1.hop_limit = 7;
  TxPacket p2 = packet_to("127.61.5.1", "127.61.5.2", 0xC200, bytes);
  p2.traffic_class = 0xb8;  // DSCP 46 (EF)
  p2.hop_limit = 200;
  ASSERT_TRUE(a->transmit(p1));
  ASSERT_TRUE(a->transmit(p2));
  ASSERT_EQ(a->flush(), 2);
  PlainSocket::Datagram d1, d2;
  ASSERT_TRUE(plain.recv(d1));
  ASSERT_TRUE(plain.recv(d2));
  EXPECT_EQ(d1.tos, 0x28);
  EXPECT_EQ(d1.ttl, 7);
  EXPECT_EQ(d2.tos, 0xb8);
  EXPECT_EQ(d2.ttl, 200);
  EXPECT_EQ(d1.src_port, 0xC200);
}

TEST(SoftNet, ReceivedTosAndTtlReachRxMeta) {
  auto b = open_net("127.61.6.2");
  ASSERT_TRUE(b);
  PlainSocket plain("127.61.6.1", 0);
  int tos = 0x48;
  int ttl = 9;
  setsockopt(plain.fd(), IPPROTO_IP, IP_TOS, &tos, sizeof tos);
  setsockopt(plain.fd(), IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
  const std::uint8_t data[16] = {};
  ASSERT_TRUE(plain.send_to("127.61.6.2", 4791, data, sizeof data));
  RxMeta meta;
  int n = 0;
  ASSERT_TRUE(test::spin_until([&] { return n > 0; }, [&] {
    b->receive([&](std::span<const std::uint8_t>, const RxMeta& m) { meta = m; ++n; });
  }));
  EXPECT_EQ(meta.traffic_class, 0x48);
  EXPECT_EQ(meta.hop_limit, 9);
  EXPECT_EQ(meta.flow.src_port, plain.port());
}

TEST(SoftNet, ASourcePortHeldByAnotherSocketFallsBackTo4791AndIsCounted) {
  PlainSocket squatter("127.61.7.1", 0xC321);
  ASSERT_TRUE(squatter.bound());
  auto a = open_net("127.61.7.1");
  PlainSocket peer("127.61.7.2", 4791);
  ASSERT_TRUE(a && peer.bound());
  const std::vector<std::uint8_t> bytes(8, 2);
  ASSERT_TRUE(a->transmit(packet_to("127.61.7.1", "127.61.7.2", 0xC321, bytes)));
  ASSERT_TRUE(a->transmit(packet_to("127.61.7.1", "127.61.7.2", 0xC321, bytes)));
  a->flush();
  PlainSocket::Datagram d;
  ASSERT_TRUE(peer.recv(d));
  EXPECT_EQ(d.src_port, 4791);
  EXPECT_EQ(a->counters().tx_sport_fallback.get(), 2u);
  EXPECT_EQ(a->counters().tx_sockets.get(), 0u);
}

TEST(SoftNet, ABatchGoesOutInFewSyscallsAndInOrder) {
  auto a = open_net("127.61.8.1");
  auto b = open_net("127.61.8.2");
  ASSERT_TRUE(a && b);
  for (std::uint32_t i = 0; i < 100; ++i) {
    std::vector<std::uint8_t> bytes(16, 0);
    std::memcpy(bytes.data(), &i, 4);
    ASSERT_TRUE(a->transmit(packet_to("127.61.8.1", "127.61.8.2", 0xC400, bytes)));
  }
  EXPECT_EQ(a->flush(), 100);
  EXPECT_LE(a->counters().tx_syscalls.get(), 2u);
  std::vector<std::uint32_t> seen;
  ASSERT_TRUE(test::spin_until([&] { return seen.size() == 100; }, [&] {
    b->receive([&](std::span<const std::uint8_t> roce, const RxMeta&) {
      std::uint32_t i = 0;
      std::memcpy(&i, roce.data(), 4);
      seen.push_back(i);
    });
  }));
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_LT(b->counters().rx_syscalls.get(), 100u);
}

TEST(SoftNet, AFullQueueFlushesItselfRatherThanRefusing) {
  NetConfig c;
  c.address = ip("127.61.9.1");
  c.probe_ipv4_id = false;
  c.tx_queue = 4;
  auto a = UdpNet::open(c);
  ASSERT_TRUE(a.ok());
  PlainSocket peer("127.61.9.2", 4791);
  const std::vector<std::uint8_t> bytes(8, 3);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*a)->transmit(packet_to("127.61.9.1", "127.61.9.2", 0, bytes)));
  (*a)->flush();
  EXPECT_EQ((*a)->counters().tx_packets.get(), 10u);
  EXPECT_EQ((*a)->counters().tx_queue_full.get(), 0u);
}

TEST(SoftNet, ADatagramTooLargeForRoceIsCountedAsTruncatedAndDropped) {
  auto b = open_net("127.61.10.2");
  ASSERT_TRUE(b);
  PlainSocket plain("127.61.10.1", 0);
  std::vector<std::uint8_t> big(kMaxRocePacket + 100, 0);
  ASSERT_TRUE(plain.send_to("127.61.10.2", 4791, big.data(), big.size()));
  int delivered = 0;
  test::spin_until([&] { return b->counters().rx_truncated.get() == 1; },
                   [&] { b->receive([&](std::span<const std::uint8_t>, const RxMeta&) { ++delivered; }); });
  EXPECT_EQ(b->counters().rx_truncated.get(), 1u);
  EXPECT_EQ(delivered, 0);
}

TEST(SoftNet, MulticastMembershipIsReferenceCountedWithOneSocketPerGroup) {
  auto a = open_net("127.61.11.1");
  ASSERT_TRUE(a);
  const auto group = ip("239.61.11.1");
  EXPECT_EQ(a->receive_fds().size(), 1u);
  ASSERT_TRUE(a->join(group).ok());
  ASSERT_TRUE(a->join(group).ok());
  EXPECT_EQ(a->group_refs(group), 2u);
  EXPECT_EQ(a->receive_fds().size(), 2u);
  ASSERT_TRUE(a->leave(group).ok());
  EXPECT_EQ(a->receive_fds().size(), 2u);
  ASSERT_TRUE(a->leave(group).ok());
  EXPECT_EQ(a->group_refs(group), 0u);
  EXPECT_EQ(a->receive_fds().size(), 1u);
  const Status again = a->leave(group);
  EXPECT_EQ(again.code(), EINVAL);
  const Status unicast = a->join(ip("10.1.2.3"));
  EXPECT_EQ(unicast.code(), EINVAL);
  EXPECT_NE(unicast.message().find("224.0.0.0/4"), std::string_view::npos);
}

TEST(SoftNet, AGroupDatagramReachesEveryMemberOnTheHostOnceAndNotTheUnicastSocket) {
  auto sender = open_net("127.61.12.1");
  auto r1 = open_net("127.61.12.2");
  auto r2 = open_net("127.61.12.3");
  ASSERT_TRUE(sender && r1 && r2);
  const auto group = ip("239.61.12.1");
  ASSERT_TRUE(r1->join(group).ok());
  ASSERT_TRUE(r2->join(group).ok());
  // A member of another group must not see it (IP_MULTICAST_ALL = 0).
  ASSERT_TRUE(r2->join(ip("239.61.12.2")).ok());
  const std::vector<std::uint8_t> bytes(24, 5);
  ASSERT_TRUE(sender->transmit(packet_to("127.61.12.1", "239.61.12.1", 0xC500, bytes)));
  sender->flush();
  std::vector<wire::IpAddress> r1_dst, r2_dst;
  auto collect = [](std::vector<wire::IpAddress>& into) {
    return [&into](std::span<const std::uint8_t>, const RxMeta& m) { into.push_back(m.flow.dst); };
  };
  test::spin_until([&] { return r1_dst.size() >= 1 && r2_dst.size() >= 1; }, [&] {
    r1->receive(collect(r1_dst));
    r2->receive(collect(r2_dst));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r1->receive(collect(r1_dst));
  r2->receive(collect(r2_dst));
  ASSERT_EQ(r1_dst.size(), 1u);
  ASSERT_EQ(r2_dst.size(), 1u);
  EXPECT_EQ(r1_dst[0], group);
  EXPECT_EQ(r2_dst[0], group);
}

// Groups are read through one readiness set, at most kMaxReadySockets (64)
// sockets a pass: with more groups ready than that, the rest are read on the
// next passes, each datagram once and with its own group as destination;
// a group left is read no more.
TEST(SoftNet, EveryReadyGroupIsReadWhenMoreAreReadyThanOnePassTakes) {
  auto sender = open_net("127.61.13.1");
  auto r = open_net("127.61.13.2");
  ASSERT_TRUE(sender && r);
  constexpr int kGroups = 70;
  std::vector<std::string> groups;
  for (int i = 0; i < kGroups; ++i) groups.push_back("239.61.13." + std::to_string(i + 1));
  for (const std::string& g : groups) ASSERT_TRUE(r->join(ip(g.c_str())).ok()) << g;
  const std::vector<std::uint8_t> bytes(24, 7);
  for (const std::string& g : groups) ASSERT_TRUE(sender->transmit(packet_to("127.61.13.1", g.c_str(), 0xC501, bytes)));
  ASSERT_TRUE(sender->transmit(packet_to("127.61.13.1", "127.61.13.2", 0xC501, bytes)));
  sender->flush();
  std::vector<wire::IpAddress> seen;
  const auto collect = [&seen](std::span<const std::uint8_t>, const RxMeta& m) { seen.push_back(m.flow.dst); };
  test::spin_until([&] { return seen.size() >= kGroups + 1; }, [&] { r->receive(collect); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r->receive(collect);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kGroups + 1));
  for (const std::string& g : groups) EXPECT_EQ(std::count(seen.begin(), seen.end(), ip(g.c_str())), 1) << g;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), ip("127.61.13.2")), 1);

  ASSERT_TRUE(r->leave(ip(groups[0].c_str())).ok());
  ASSERT_TRUE(sender->transmit(packet_to("127.61.13.1", groups[0].c_str(), 0xC501, bytes)));
  ASSERT_TRUE(sender->transmit(packet_to("127.61.13.1", groups[1].c_str(), 0xC501, bytes)));
  sender->flush();
  seen.clear();
  test::spin_until([&] { return !seen.empty(); }, [&] { r->receive(collect); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r->receive(collect);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], ip(groups[1].c_str()));
}

}  // namespace
}  // namespace qpgate::verbs::soft
