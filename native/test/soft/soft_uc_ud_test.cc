// UC and UD over the loopback wire.
#include <gtest/gtest.h>

#include "soft_fixture.h"
#include "wire/opcode.h"

namespace qpgate::verbs::soft::testing {
namespace {

TEST(SoftUc, SendCompletesOnceSentWithoutAcks) {
  Pair p(QpType::UC);
  Sge rs = p.b.sge(0, 4096);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 3000);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run();
  EXPECT_EQ(p.a.send_wcs().size(), 1u);
  EXPECT_EQ(p.b.recv_wcs().size(), 1u);
  ASSERT_EQ(p.wire.transmitted(), 3u);  // FIRST MIDDLE LAST, no ACK
  EXPECT_EQ(p.wire.log()[0].opcode(), op(Opcode::kUcSendFirst));
  EXPECT_EQ(p.wire.log()[2].opcode(), op(Opcode::kUcSendLast));
  for (const auto& r : p.wire.log()) EXPECT_FALSE(r.ack_req());
}

TEST(SoftUc, ALostMiddlePacketDropsThatMessageOnlyAndTheNextOneArrives) {
  Pair p(QpType::UC);
  Sge r1 = p.b.sge(0, 4096), r2 = p.b.sge(4096, 4096);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&r1, 1})).ok());
  ASSERT_TRUE(p.qb->post_recv(recv_wr(2, {&r2, 1})).ok());
  fill(p.a.bytes(0), 3000, 1);
  fill(p.a.bytes(8192), 2500, 2);
  Sge s1 = p.a.sge(0, 3000), s2 = p.a.sge(8192, 2500);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&s1, 1})).ok());
  ASSERT_TRUE(p.qa->post_send(send_wr(2, {&s2, 1})).ok());
  p.wire.drop_nth(2);  // message 1's MIDDLE
  p.wire.run();
  EXPECT_EQ(p.a.send_wcs().size(), 2u);  // the sender cannot know
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].wr_id, 1u);  // the receive of the lost message is reused for the next
  EXPECT_EQ(rwc[0].byte_len, 2500u);
  EXPECT_EQ(std::memcmp(p.b.bytes(0), p.a.bytes(8192), 2500), 0);
  EXPECT_EQ(p.qb->counters().uc_msgs_dropped.get(), 1u);
  EXPECT_EQ(p.qb->counters().out_of_seq_request.get(), 0u);  // UC never NAKs
}

TEST(SoftUc, WriteWorksOnUc) {
  Pair p(QpType::UC);
  fill(p.a.bytes(0), 2000, 3);
  Sge ss = p.a.sge(0, 2000);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = p.b.addr(100);
  w.rdma.rkey = p.b.mr.rkey;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(100), 2000), 0);
  EXPECT_EQ(p.wire.log()[0].opcode(), op(Opcode::kUcRdmaWriteFirst));
}

struct UdPair {
  UdPair() : a(wire, ip4(1)), b(wire, ip4(2)) {
    qa = a.make_qp(QpType::UD, 0x51);
    qb = b.make_qp(QpType::UD, 0x52);
    up(*qa);
    up(*qb);
  }
  static void up(SoftQp& qp) {
    QpAttr x;
    x.qp_state = QpState::INIT;
    x.qkey = 0x11111111;
    ASSERT_TRUE(qp.modify(x, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());
    x.qp_state = QpState::RTR;
    ASSERT_TRUE(qp.modify(x, QpAttrMask::STATE).ok());
    x.qp_state = QpState::RTS;
    x.sq_psn = 0x77;
    ASSERT_TRUE(qp.modify(x, QpAttrMask::STATE | QpAttrMask::SQ_PSN).ok());
  }
  struct Ah final : AddressHandle {
    AhAttr a;
    const AhAttr& attr() const override { return a; }
  };
  LoopbackWire wire;
  Host a, b;
  std::unique_ptr<SoftQp> qa, qb;
};

TEST(SoftUd, SendCarriesTheQkeyInDethAndFillsTheGrhArea) {
  UdPair u;
  UdPair::Ah ah;
  ah.a.dgid = gid_of(u.b.ip);
  ah.a.traffic_class = 0x28;
  ah.a.hop_limit = 9;
  Sge rs = u.b.sge(0, 40 + 512);
  ASSERT_TRUE(u.qb->post_recv(recv_wr(3, {&rs, 1})).ok());
  fill(u.a.bytes(0), 300, 5);
  Sge ss = u.a.sge(0, 300);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::SEND_WITH_IMM);
  w.imm_data = 0x01020304;
  w.ud.ah = &ah;
  w.ud.remote_qpn = 0x52;
  w.ud.remote_qkey = 0x11111111;
  ASSERT_TRUE(u.qa->post_send(w).ok());
  u.wire.run();
  ASSERT_EQ(u.wire.transmitted(), 1u);
  const auto& rec = u.wire.log()[0];
  EXPECT_EQ(rec.opcode(), op(Opcode::kUdSendOnlyWithImm));
  EXPECT_EQ(rec.packet().deth()->qkey(), 0x11111111u);
  EXPECT_EQ(rec.packet().deth()->src_qpn(), 0x51u);
  EXPECT_EQ(rec.traffic_class, 0x28);
  EXPECT_EQ(rec.hop_limit, 9);
  EXPECT_EQ(u.a.send_wcs().size(), 1u);
  auto rwc = u.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].byte_len, 340u);
  EXPECT_EQ(rwc[0].src_qp, 0x51u);
  EXPECT_TRUE(rwc[0].wc_flags.has(WcFlag::GRH));
  EXPECT_TRUE(rwc[0].wc_flags.has(WcFlag::WITH_IMM));
  EXPECT_EQ(rwc[0].imm_data, 0x01020304u);
  const std::uint8_t* grh = u.b.bytes(0);
  EXPECT_EQ(grh[20], 0x45);  // IPv4 header at offset 20
  EXPECT_EQ(grh[21], 0x28);  // TOS
  EXPECT_EQ(grh[28], 9);     // TTL
  EXPECT_EQ(grh[29], 17);    // UDP
  EXPECT_EQ(grh[32], 10);    // source 10.0.0.1
  EXPECT_EQ(grh[35], 1);
  EXPECT_EQ(grh[39], 2);     // destination 10.0.0.2
  EXPECT_EQ(std::memcmp(u.b.bytes(40), u.a.bytes(0), 300), 0);
}

TEST(SoftUd, AControlledQkeyInTheWrSendsTheQpsOwn) {
  UdPair u;
  UdPair::Ah ah;
  ah.a.dgid = gid_of(u.b.ip);
  Sge rs = u.b.sge(0, 128);
  ASSERT_TRUE(u.qb->post_recv(recv_wr(3, {&rs, 1})).ok());
  Sge ss = u.a.sge(0, 8);
  SendWr w = send_wr(1, {&ss, 1});
  w.ud.ah = &ah;
  w.ud.remote_qpn = 0x52;
  w.ud.remote_qkey = 0x80000000u;
  ASSERT_TRUE(u.qa->post_send(w).ok());
  u.wire.run();
  EXPECT_EQ(u.wire.log()[0].packet().deth()->qkey(), 0x11111111u);
  EXPECT_EQ(u.b.recv_wcs().size(), 1u);
}

TEST(SoftUd, AWrongQkeyIsDroppedByTheIngress) {
  UdPair u;
  UdPair::Ah ah;
  ah.a.dgid = gid_of(u.b.ip);
  Sge rs = u.b.sge(0, 128);
  ASSERT_TRUE(u.qb->post_recv(recv_wr(3, {&rs, 1})).ok());
  Sge ss = u.a.sge(0, 8);
  SendWr w = send_wr(1, {&ss, 1});
  w.ud.ah = &ah;
  w.ud.remote_qpn = 0x52;
  w.ud.remote_qkey = 0x1234;
  ASSERT_TRUE(u.qa->post_send(w).ok());
  u.wire.run();
  EXPECT_EQ(u.wire.qkey_violations(), 1u);
  EXPECT_TRUE(u.b.recv_wcs().empty());
}

TEST(SoftUd, AMessageLargerThanTheMtuIsRefusedAtPost) {
  UdPair u;
  UdPair::Ah ah;
  Sge ss = u.a.sge(0, 1025);
  SendWr w = send_wr(1, {&ss, 1});
  w.ud.ah = &ah;
  auto r = u.qa->post_send(w);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_EQ(r.bad_wr(), &w);
}

TEST(SoftUd, NoReceivePostedDropsTheDatagramAndCountsIt) {
  UdPair u;
  UdPair::Ah ah;
  ah.a.dgid = gid_of(u.b.ip);
  Sge ss = u.a.sge(0, 8);
  SendWr w = send_wr(1, {&ss, 1});
  w.ud.ah = &ah;
  w.ud.remote_qpn = 0x52;
  w.ud.remote_qkey = 0x11111111;
  ASSERT_TRUE(u.qa->post_send(w).ok());
  u.wire.run();
  EXPECT_EQ(u.qb->counters().ud_no_recv_drops.get(), 1u);
}

TEST(SoftUd, MulticastAttachJoinsOnceAndDelivers) {
  UdPair u;
  const Gid g = *mgid_for_ipv4_group(0xef010206);  // 239.1.2.6
  ASSERT_TRUE(u.qb->attach_mcast(g).ok());
  ASSERT_TRUE(u.qb->attach_mcast(g).ok());
  ASSERT_EQ(u.b.membership.joined.size(), 1u);
  Sge rs = u.b.sge(0, 128);
  ASSERT_TRUE(u.qb->post_recv(recv_wr(3, {&rs, 1})).ok());
  UdPair::Ah ah;
  ah.a.dgid = g;
  Sge ss = u.a.sge(0, 16);
  SendWr w = send_wr(1, {&ss, 1});
  w.ud.ah = &ah;
  w.ud.remote_qpn = kMulticastQpn;
  w.ud.remote_qkey = 0x11111111;
  ASSERT_TRUE(u.qa->post_send(w).ok());
  u.wire.run();
  EXPECT_EQ(u.b.recv_wcs().size(), 1u);
  ASSERT_TRUE(u.qb->detach_mcast(g).ok());
  EXPECT_EQ(u.b.membership.left.size(), 1u);
  EXPECT_FALSE(u.qb->detach_mcast(g).ok());
  Pair rc;
  EXPECT_FALSE(rc.qa->attach_mcast(g).ok());  // UD only
}

}  // namespace
}  // namespace qpgate::verbs::soft::testing
