// The ingress (recv.cc): every packet that is not for a QP — wrong Q_Key,
// wrong peer, wrong P_Key, unknown or reserved QPN, bad ICRC, truncated or
// malformed — is dropped and counted under its own name, and nothing a
// spoofer sends can crash the device. Packets are crafted with the wire
// codec and sent from a plain UDP socket, as an attacker on the network would.
#include <gtest/gtest.h>

#include <random>

#include "soft_fixture.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {
namespace {

using test::ip;
using test::Node;
using test::PlainSocket;

constexpr std::uint8_t kUdSendOnly = 0x64;
constexpr std::uint8_t kRcSendOnly = 0x04;

struct Spoofer {
  Spoofer(const char* from, const char* to) : sock(from, 0), from_addr(from), to_addr(to) {}

  std::vector<std::uint8_t> packet(const wire::PacketFields& f, std::size_t payload_len = 8) const {
    std::vector<std::uint8_t> payload(payload_len, 0x42);
    std::vector<std::uint8_t> out(wire::encoded_size(f.bth.opcode, payload_len));
    wire::UdpFlow flow{ip(from_addr), ip(to_addr), sock.port(), 4791};
    auto n = wire::encode(f, payload, flow, out);
    EXPECT_TRUE(n.ok());
    return out;
  }
  void send(const std::vector<std::uint8_t>& bytes) const {
    EXPECT_TRUE(sock.send_to(to_addr, 4791, bytes.data(), bytes.size()));
  }
  PlainSocket sock;
  const char* from_addr;
  const char* to_addr;
};

wire::PacketFields ud_fields(std::uint32_t dest_qpn, std::uint32_t qkey) {
  wire::PacketFields f;
  f.bth.opcode = kUdSendOnly;
  f.bth.dest_qpn = dest_qpn;
  f.deth.qkey = qkey;
  f.deth.src_qpn = 0x1234;
  return f;
}

// Drives the node until `counter()` reaches `want`.
bool wait_for(Node& n, const std::function<std::uint64_t()>& counter, std::uint64_t want) {
  return test::spin_until([&] { return counter() >= want; }, [&] { n.work(); });
}

TEST(SoftIngress, AUdPacketWithTheWrongQkeyIsDroppedAndCountedAsAQkeyViolation) {
  Node n("127.61.30.2");
  auto qp = n.ud_qp();
  n.post_recv(*qp, 1, 0, 1024);
  Spoofer s("127.61.30.9", "127.61.30.2");
  s.send(s.packet(ud_fields(qp->qp_num(), test::kQkey + 1)));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().bad_qkey.get(); }, 1));
  EXPECT_EQ(n.device->query_port(1)->qkey_viol_cntr, 1u);
  s.send(s.packet(ud_fields(qp->qp_num(), test::kQkey)));  // the right one gets through
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().delivered.get(); }, 1));
  Wc wc[2];
  EXPECT_EQ(*n.cq->poll(wc), 1u);
}

TEST(SoftIngress, UnknownAndReservedQpnsAreDroppedAndCounted) {
  Node n("127.61.31.2");
  auto qp = n.ud_qp();
  Spoofer s("127.61.31.9", "127.61.31.2");
  std::uint32_t unknown = (qp->qp_num() + 0x1000) & kQpnMask;
  s.send(s.packet(ud_fields(unknown, test::kQkey)));
  s.send(s.packet(ud_fields(0, test::kQkey)));
  s.send(s.packet(ud_fields(1, kGsiQkey)));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().reserved_qpn.get(); }, 2));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().unknown_qpn.get(); }, 1));
  EXPECT_EQ(n.device->ingress_counters().delivered.get(), 0u);
}

TEST(SoftIngress, ABadIcrcIsDroppedInStrictModeAndCountedAsUnverifiableInCountMode) {
  Node n("127.61.32.2");
  auto qp = n.ud_qp();
  n.post_recv(*qp, 1, 0, 1024);
  Spoofer s("127.61.32.9", "127.61.32.2");
  auto bytes = s.packet(ud_fields(qp->qp_num(), test::kQkey));
  bytes.back() ^= 0xff;  // corrupt the ICRC
  s.send(bytes);
  ASSERT_TRUE(wait_for(n, [&] { return n.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch); }, 1));
  EXPECT_EQ(n.device->ingress_counters().delivered.get(), 0u);
  EXPECT_EQ(n.device->icrc_policy(), IcrcPolicy::STRICT);

  n.device->set_icrc_policy(IcrcPolicy::COUNT_UNVERIFIABLE);
  s.send(bytes);
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().icrc_unverifiable.get(); }, 1));
  EXPECT_EQ(n.device->ingress_counters().delivered.get(), 1u);
  EXPECT_EQ(n.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 1u);
}

TEST(SoftIngress, TruncatedAndMalformedDatagramsAreCountedByReason) {
  Node n("127.61.33.2");
  auto qp = n.ud_qp();
  Spoofer s("127.61.33.9", "127.61.33.2");
  const std::vector<std::uint8_t> tiny{0x64, 0, 0xff};
  s.send(tiny);
  auto bad_opcode = s.packet(ud_fields(qp->qp_num(), test::kQkey));
  bad_opcode[0] = 0x5f;  // reserved / RD opcode space
  s.send(bad_opcode);
  auto bad_tver = s.packet(ud_fields(qp->qp_num(), test::kQkey));
  bad_tver[1] |= 0x01;
  s.send(bad_tver);
  const auto& w = n.device->wire_counters();
  ASSERT_TRUE(wait_for(n, [&] {
    return w.rejected_count(wire::DecodeError::kTruncated) + w.rejected_count(wire::DecodeError::kUnknownOpcode) +
           w.rejected_count(wire::DecodeError::kBadTver);
  }, 3));
  EXPECT_EQ(w.rejected_count(wire::DecodeError::kTruncated), 1u);
  EXPECT_EQ(w.rejected_count(wire::DecodeError::kUnknownOpcode), 1u);
  EXPECT_EQ(w.rejected_count(wire::DecodeError::kBadTver), 1u);
}

TEST(SoftIngress, RcPacketsFromAnAddressOtherThanThePeerAreDroppedAsWrongPeer) {
  Node a("127.61.34.1");
  Node b("127.61.34.2");
  auto qa = a.connected_qp_init(QpType::RC);
  auto qb = b.connected_qp_init(QpType::RC);
  b.connect(*qb, a.device->gid(), qa->qp_num(), 0, 0);
  b.post_recv(*qb, 1, 0, 1024);
  Spoofer s("127.61.34.9", "127.61.34.2");  // not 127.61.34.1
  wire::PacketFields f;
  f.bth.opcode = kRcSendOnly;
  f.bth.dest_qpn = qb->qp_num();
  f.bth.psn = 0;
  f.bth.ack_req = true;
  s.send(s.packet(f));
  ASSERT_TRUE(wait_for(b, [&] { return b.device->ingress_counters().wrong_peer.get(); }, 1));
  EXPECT_EQ(b.device->ingress_counters().delivered.get(), 0u);
}

TEST(SoftIngress, AWrongPkeyIsDroppedAndCounted) {
  Node n("127.61.35.2");
  auto qp = n.ud_qp();
  Spoofer s("127.61.35.9", "127.61.35.2");
  auto f = ud_fields(qp->qp_num(), test::kQkey);
  f.bth.pkey = 0x1234;
  s.send(s.packet(f));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().bad_pkey.get(); }, 1));
  EXPECT_EQ(n.device->query_port(1)->bad_pkey_cntr, 1u);
  f.bth.pkey = 0x7fff;  // the limited member of the default partition still matches our full 0xffff
  s.send(s.packet(f));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().delivered.get(); }, 1));
}

TEST(SoftIngress, AQpThatIsNotYetReadyToReceiveDropsAndCountsBadState) {
  Node n("127.61.36.2");
  auto qp = n.create_qp(QpType::UD);
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.qkey = test::kQkey;
  ASSERT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());
  Spoofer s("127.61.36.9", "127.61.36.2");
  s.send(s.packet(ud_fields(qp->qp_num(), test::kQkey)));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().bad_state.get(); }, 1));
}

TEST(SoftIngress, AnRcOpcodeToAUdQpIsDroppedAsTheWrongTransport) {
  Node n("127.61.37.2");
  auto qp = n.ud_qp();
  Spoofer s("127.61.37.9", "127.61.37.2");
  wire::PacketFields f;
  f.bth.opcode = kRcSendOnly;
  f.bth.dest_qpn = qp->qp_num();
  s.send(s.packet(f));
  ASSERT_TRUE(wait_for(n, [&] { return n.device->ingress_counters().bad_opcode_for_qp.get(); }, 1));
}

TEST(SoftIngress, MulticastQpnPacketsMustBeUdAndArriveOnAGroup) {
  Node n("127.61.39.2");
  auto qp = n.ud_qp();
  ASSERT_TRUE(qp->attach_mcast(*Gid::parse("239.61.39.1")).ok());
  Spoofer s("127.61.39.9", "127.61.39.2");
  s.send(s.packet(ud_fields(kMulticastQpn, test::kQkey)));  // to the unicast address
  wire::PacketFields rc;
  rc.bth.opcode = kRcSendOnly;
  rc.bth.dest_qpn = kMulticastQpn;
  s.send(s.packet(rc));  // an RC opcode with the multicast QPN
  // To the group, but with an ordinary DestQP.
  in_addr ifaddr{};
  inet_pton(AF_INET, "127.61.39.9", &ifaddr);
  setsockopt(s.sock.fd(), IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr);
  Spoofer to_group("127.61.39.9", "239.61.39.1");
  setsockopt(to_group.sock.fd(), IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr);
  to_group.send(to_group.packet(ud_fields(qp->qp_num(), test::kQkey)));
  const auto& c = n.device->ingress_counters();
  ASSERT_TRUE(wait_for(n, [&] { return c.mcast_to_unicast.get() + c.mcast_not_ud.get() + c.mcast_bad_qpn.get(); }, 3));
  EXPECT_EQ(c.mcast_to_unicast.get(), 1u);
  EXPECT_EQ(c.mcast_not_ud.get(), 1u);
  EXPECT_EQ(c.mcast_bad_qpn.get(), 1u);
  EXPECT_EQ(c.delivered.get(), 0u);
}

TEST(SoftIngress, ThousandsOfRandomDatagramsAreAllCountedAndNeverCrashTheDevice) {
  Node n("127.61.38.2");
  auto ud = n.ud_qp();
  auto rc = n.connected_qp_init(QpType::RC);
  n.connect(*rc, test::gid_of("::ffff:127.61.38.9"), 0x99, 0, 0);
  for (int i = 0; i < 16; ++i) n.post_recv(*ud, static_cast<std::uint64_t>(i), 0, 2048);
  Spoofer s("127.61.38.9", "127.61.38.2");
  std::mt19937 rng(12345);
  constexpr int kCount = 3000;
  for (int i = 0; i < kCount; ++i) {
    std::vector<std::uint8_t> bytes;
    if (i % 3 == 0) {
      // Well-formed headers with random fields, aimed at our QPs.
      wire::PacketFields f;
      const std::uint8_t ops[] = {0x00, 0x04, 0x06, 0x0a, 0x0c, 0x11, 0x13, 0x14, 0x64, 0x65, 0x81};
      f.bth.opcode = ops[rng() % sizeof ops];
      f.bth.dest_qpn = (rng() % 2 == 0) ? ud->qp_num() : rc->qp_num();
      f.bth.psn = rng() & kPsnMask;
      f.deth.qkey = rng() % 2 == 0 ? test::kQkey : static_cast<std::uint32_t>(rng());
      f.reth.dma_len = rng() % 4096;
      f.reth.rkey = static_cast<std::uint32_t>(rng());
      f.atomic_eth.va = rng();
      const bool payload_ok = f.bth.opcode != 0x0c && f.bth.opcode != 0x11 && f.bth.opcode != 0x13 &&
                              f.bth.opcode != 0x14 && f.bth.opcode != 0x81;
      bytes = s.packet(f, payload_ok ? rng() % 64 : 0);
    } else {
      bytes.resize(rng() % 200);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
      if (!bytes.empty() && i % 2 == 0) bytes[0] = 0x64;
    }
    s.send(bytes);
    if (i % 64 == 0) n.work();
  }
  const auto& net = n.device->net_counters();
  ASSERT_TRUE(test::spin_until([&] { return net.rx_packets.get() >= kCount; }, [&] { n.work(); },
                               std::chrono::milliseconds(5000)));
  // Every datagram ended somewhere: a decode reject, a CNP, or accepted (then delivered or an ingress drop).
  const auto& w = n.device->wire_counters();
  std::uint64_t decoded = w.accepted.get() + w.cnp.get();
  std::uint64_t rejected = 0;
  for (std::size_t e = 0; e < wire::kDecodeErrorCount; ++e) rejected += w.rejected[e].get();
  EXPECT_EQ(decoded + rejected, static_cast<std::uint64_t>(kCount));
  std::uint64_t ingress_total = 0;
  n.device->ingress_counters().for_each([&](std::string_view name, std::uint64_t v) {
    if (name != "icrc_unverifiable" && name != "cnp_ignored") ingress_total += v;
  });
  EXPECT_EQ(ingress_total, w.accepted.get());
  EXPECT_EQ(n.device->ingress_counters().cnp_ignored.get(), w.cnp.get());
}

}  // namespace
}  // namespace qpgate::verbs::soft
