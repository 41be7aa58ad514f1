// The af-packet receive mode (packet_rx.h): the ICRC is checked against the
// real IP header, so a sender whose IPv4 ID is not 0 — as rxe and NICs send
// — is verified instead of dropped (strict) or accepted unchecked
// (count-unverifiable). The "rxe-like" sender here writes whole IPv4
// datagrams through a raw socket (IP_HDRINCL) with ID 0x4d2a and DF, its
// ICRC computed over exactly those headers. Needs CAP_NET_RAW (root, as CI).
#include <gtest/gtest.h>
#include <netinet/ip.h>

#include "soft_fixture.h"
#include "verbs/soft/net.h"
#include "wire/icrc.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {
namespace {

using test::ip;

constexpr std::uint8_t kUdSendOnly = 0x64;
constexpr std::uint16_t kRxeLikeIpv4Id = 0x4d2a;

bool have_cap_net_raw() {
  const int fd = socket(AF_PACKET, SOCK_DGRAM, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// A UD SEND to `dest_qpn` as rxe would put it on the wire: IPv4 ID from a
// counter (not 0), DF, UDP checksum 0, the ICRC over those real headers.
std::vector<std::uint8_t> rxe_like_datagram(const char* from, const char* to, std::uint32_t dest_qpn,
                                            std::uint16_t ipv4_id) {
  wire::PacketFields f;
  f.bth.opcode = kUdSendOnly;
  f.bth.dest_qpn = dest_qpn;
  f.deth.qkey = test::kQkey;
  f.deth.src_qpn = 0x11;
  const std::vector<std::uint8_t> payload(64, 0x5a);
  std::vector<std::uint8_t> roce(wire::encoded_size(kUdSendOnly, payload.size()));
  EXPECT_TRUE(wire::encode(f, payload, roce).ok());
  const wire::UdpFlow flow{ip(from), ip(to), 0xc123, wire::kRoceV2Port};
  wire::OuterOptions o;
  o.ipv4_id = ipv4_id;
  std::vector<std::uint8_t> datagram(wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes + roce.size());
  const std::size_t h = wire::build_ip_udp_headers(datagram, flow, roce.size(), o);
  EXPECT_EQ(h, wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes);
  wire::icrc_store(roce, std::span<const std::uint8_t>(datagram.data(), h));
  std::copy(roce.begin(), roce.end(), datagram.begin() + static_cast<std::ptrdiff_t>(h));
  return datagram;
}

void send_raw(const std::vector<std::uint8_t>& datagram, const char* to) {
  const int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);  // IP_HDRINCL implied
  ASSERT_GE(fd, 0) << std::strerror(errno);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, to, &sa.sin_addr);
  EXPECT_EQ(sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa),
            static_cast<ssize_t>(datagram.size()))
      << std::strerror(errno);
  close(fd);
}

test::Node af_packet_node(const char* address) {
  SoftDeviceOptions o;
  o.net.receive_mode = ReceiveMode::kAfPacket;
  return test::Node(address, 1 << 16, o);
}

bool wait_for(test::Node& n, const std::function<std::uint64_t()>& counter, std::uint64_t want) {
  return test::spin_until([&] { return counter() >= want; }, [&] { n.work(); });
}

class SoftAfPacket : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_cap_net_raw()) GTEST_SKIP() << "needs CAP_NET_RAW (run as root)";
  }
};

TEST_F(SoftAfPacket, ARxeLikePacketWithANonZeroIpv4IdIsVerifiedAndDelivered) {
  auto n = af_packet_node("127.62.40.2");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.device->net_report().receive_mode, ReceiveMode::kAfPacket);
  auto qp = n.ud_qp();
  n.post_recv(*qp, 7, 0, 1024);
  send_raw(rxe_like_datagram("127.62.40.9", "127.62.40.2", qp->qp_num(), kRxeLikeIpv4Id), "127.62.40.2");
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().delivered.get(); }, 1));
  Wc wc[2];
  ASSERT_EQ(*n.cq->poll(wc), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].byte_len, 40u + 64u);  // GRH area + payload
  EXPECT_EQ(n.buffer[40 + 63], 0x5a);
  // Checked, not waved through: nothing unverifiable, nothing mismatched.
  EXPECT_EQ(n.device->ingress_counters().icrc_unverifiable.get(), 0u);
  EXPECT_EQ(n.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 0u);
}

TEST_F(SoftAfPacket, APlainUdpDeviceCannotVerifyTheSamePacketAndDropsItInStrictMode) {
  test::Node n("127.62.41.2");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.device->net_report().receive_mode, ReceiveMode::kPlainUdp);
  auto qp = n.ud_qp();
  n.post_recv(*qp, 7, 0, 1024);
  send_raw(rxe_like_datagram("127.62.41.9", "127.62.41.2", qp->qp_num(), kRxeLikeIpv4Id), "127.62.41.2");
  ASSERT_TRUE(wait_for(n, [&] { return n.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch); }, 1));
  EXPECT_EQ(n.device->ingress_counters().delivered.get(), 0u);
}

TEST_F(SoftAfPacket, ACorruptedPacketIsStillCaughtWhatEverTheIcrcPolicy) {
  SoftDeviceOptions o;
  o.net.receive_mode = ReceiveMode::kAfPacket;
  o.icrc_policy = IcrcPolicy::COUNT_UNVERIFIABLE;  // no effect on packets whose headers were seen
  test::Node n("127.62.42.2", 1 << 16, o);
  ASSERT_TRUE(n.ok());
  auto qp = n.ud_qp();
  n.post_recv(*qp, 7, 0, 1024);
  auto bad = rxe_like_datagram("127.62.42.9", "127.62.42.2", qp->qp_num(), kRxeLikeIpv4Id);
  bad[wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes + 40] ^= 0x01;  // one payload bit
  send_raw(bad, "127.62.42.2");
  ASSERT_TRUE(wait_for(n, [&] { return n.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch); }, 1));
  EXPECT_EQ(n.device->ingress_counters().delivered.get(), 0u);
  EXPECT_EQ(n.device->ingress_counters().icrc_unverifiable.get(), 0u);
}

TEST_F(SoftAfPacket, TwoAfPacketDevicesRunRcWithoutSeeingTheirOwnOrEachOthersCopies) {
  auto a = af_packet_node("127.62.43.1");
  auto b = af_packet_node("127.62.43.2");
  ASSERT_TRUE(a.ok() && b.ok());
  auto qa = a.connected_qp_init(QpType::RC);
  auto qb = b.connected_qp_init(QpType::RC);
  ASSERT_TRUE(qa && qb);
  a.connect(*qa, b.device->gid(), qb->qp_num(), 0x100, 0x200);
  b.connect(*qb, a.device->gid(), qa->qp_num(), 0x200, 0x100);
  constexpr int kMessages = 60;  // within the QPs' 64 receive WRs
  for (int i = 0; i < kMessages; ++i) b.post_recv(*qb, static_cast<std::uint64_t>(i), 256 * static_cast<std::size_t>(i), 256);
  const Sge payload = a.sge(0, 64);
  int sent = 0, received = 0, completed = 0;
  Wc wc[16];
  ASSERT_TRUE(test::spin_until([&] { return received == kMessages && completed == kMessages; }, [&] {
    if (sent < kMessages && sent - completed < 32) {
      SendWr wr;
      wr.wr_id = static_cast<std::uint64_t>(sent);
      wr.sg_list = std::span<const Sge>(&payload, 1);
      wr.send_flags = SendFlag::SIGNALED;
      if (qa->post_send(wr).ok()) ++sent;
    }
    a.work();
    b.work();
    for (std::size_t i = 0, n = *a.cq->poll(wc); i < n; ++i) completed += wc[i].status == WcStatus::IBV_WC_SUCCESS ? 1 : 0;
    for (std::size_t i = 0, n = *b.cq->poll(wc); i < n; ++i) received += wc[i].status == WcStatus::IBV_WC_SUCCESS ? 1 : 0;
  }));
  // Every packet crossed lo once per direction: each device saw the other's
  // traffic to the other address as "not ours" and its own outgoing copies not at all.
  EXPECT_EQ(b.device->ingress_counters().delivered.get(), b.device->net_counters().rx_packets.get());
  EXPECT_EQ(a.device->net_counters().rx_packets.get(), b.device->net_counters().tx_packets.get());
  EXPECT_EQ(b.device->net_counters().rx_packets.get(), a.device->net_counters().tx_packets.get());
  EXPECT_EQ(a.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 0u);
  EXPECT_EQ(b.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 0u);
}

TEST(SoftAfPacketOpen, AnUnknownInterfaceIsRefusedByName) {
  NetConfig c;
  c.address = ip("127.62.44.2");
  c.receive_mode = ReceiveMode::kAfPacket;
  c.interface_name = "no-such-if0";
  c.probe_ipv4_id = false;
  auto net = UdpNet::open(c);
  ASSERT_FALSE(net.ok());
  EXPECT_EQ(net.error().code, ENODEV);
  EXPECT_NE(net.error().message.find("no interface no-such-if0"), std::string::npos) << net.error().message;
}

}  // namespace
}  // namespace qpgate::verbs::soft
