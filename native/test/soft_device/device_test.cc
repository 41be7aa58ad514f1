// The soft device: opening by address or interface, what it reports
// (ibv_devinfo's view), QPN allocation, and real UD and RC traffic between
// two devices in one process over loopback UDP.
#include <gtest/gtest.h>

#include <set>

#include "soft_fixture.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {
namespace {

using test::gid_of;
using test::Node;

TEST(SoftDevice, OpensByAddressAndReportsAnIpv4MappedGidAtIndexZero) {
  Node n("127.61.20.1");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.device->backend(), "soft");
  EXPECT_EQ(n.device->name(), "qpgate_soft_127.61.20.1");
  EXPECT_EQ(n.device->interface_info().name, "lo");
  auto gids = n.device->query_gid_table(1);
  ASSERT_TRUE(gids.ok());
  ASSERT_EQ(gids->size(), 1u);
  EXPECT_EQ((*gids)[0].to_string(), "::ffff:127.61.20.1");
  auto port = n.device->query_port(1);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(port->state, PortState::ACTIVE);
  EXPECT_EQ(port->active_mtu, Mtu::MTU_4096);  // lo's MTU is 65536
  EXPECT_EQ(port->gid_tbl_len, 1u);
  auto dev = n.device->query_device();
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->max_mcast_qp_attach, 56u);
  EXPECT_EQ(dev->phys_port_cnt, 1);
  EXPECT_EQ(n.device->query_port(2).code(), EINVAL);
}

// Each GID's link is its address's interface (an alternate address may sit
// on another link: rearm_rc asks before arming towards it). Both here are on
// lo, which is up; an entry outside the table or another port has no link.
TEST(SoftDevice, GidLinkUpIsTheInterfaceOfEachGidEntry) {
  SoftDeviceOptions o;
  o.address_or_name = "127.61.20.7";
  o.alternate_address = "127.61.21.7";
  o.net.probe_ipv4_id = false;
  auto d = open_soft_device(o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE((*d)->gid_link_up(1, 0));
  EXPECT_TRUE((*d)->gid_link_up(1, 1));
  EXPECT_FALSE((*d)->gid_link_up(1, 2));
  EXPECT_FALSE((*d)->gid_link_up(2, 0));
}

TEST(SoftDevice, OpensByInterfaceNameOnItsFirstIpv4Address) {
  SoftDeviceOptions o;
  o.address_or_name = "lo";
  o.net.probe_ipv4_id = false;
  auto d = open_soft_device(o);
  if (!d.ok() && d.error().code == EADDRINUSE) GTEST_SKIP() << "127.0.0.1:4791 is in use by another process";
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ((*d)->gid().to_string(), "::ffff:127.0.0.1");
}

TEST(SoftDevice, OpeningNamesWhatIsWrong) {
  SoftDeviceOptions o;
  o.net.probe_ipv4_id = false;
  o.address_or_name = "no-such-if0";
  auto a = open_soft_device(o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ENODEV);
  EXPECT_NE(a.error().message.find("no-such-if0"), std::string::npos);
  o.address_or_name = "192.0.2.77";  // TEST-NET-1: on no interface
  auto b = open_soft_device(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, EADDRNOTAVAIL);
  Node first("127.61.21.1");
  o.address_or_name = "127.61.21.1";
  auto c = open_soft_device(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, EADDRINUSE);
}

TEST(SoftDevice, QpNumbersAreNeverZeroOneOrMulticastAndNeverShared) {
  Node n("127.61.22.1");
  ASSERT_TRUE(n.ok());
  std::set<std::uint32_t> seen;
  std::vector<std::unique_ptr<QueuePair>> qps;
  for (int i = 0; i < 50; ++i) {
    qps.push_back(n.create_qp(i % 2 == 0 ? QpType::UD : QpType::RC));
    const std::uint32_t q = qps.back()->qp_num();
    EXPECT_GT(q, 1u);
    EXPECT_LT(q, kMulticastQpn);
    EXPECT_TRUE(seen.insert(q).second) << q;
  }
  EXPECT_EQ(n.device->qp_numbers().size(), 50u);
  qps.clear();
  EXPECT_TRUE(n.device->qp_numbers().empty());
}

TEST(SoftDevice, ObjectsMayBeDestroyedInAnyOrder) {
  auto n = std::make_unique<Node>("127.61.23.1");
  ASSERT_TRUE(n->ok());
  auto qp = n->ud_qp();
  auto mr = std::move(n->mr);
  n.reset();  // device, PD and CQ handles gone; the QP keeps them alive
  EXPECT_EQ(qp->state(), QpState::RTS);
  mr.reset();
  qp.reset();
}

TEST(SoftDevice, ACqOfAnotherDeviceIsRefused) {
  Node a("127.61.24.1");
  Node b("127.61.24.2");
  QpInitAttr init;
  init.qp_type = QpType::UD;
  init.send_cq = b.cq.get();
  init.recv_cq = b.cq.get();
  init.cap.max_send_wr = 1;
  init.cap.max_recv_wr = 1;
  auto qp = a.pd->create_qp(init);
  ASSERT_FALSE(qp.ok());
  EXPECT_EQ(qp.error().code, EINVAL);
}

TEST(SoftDevice, UdSendReachesAnotherDeviceWithTheSendersQpnAndTheGrhArea) {
  Node a("127.61.25.1");
  Node b("127.61.25.2");
  ASSERT_TRUE(a.ok() && b.ok());
  auto qa = a.ud_qp();
  auto qb = b.ud_qp();
  b.post_recv(*qb, 77, 0, 40 + 256);
  AhAttr ah_attr;
  ah_attr.dgid = b.device->gid();
  auto ah = a.pd->create_ah(ah_attr);
  ASSERT_TRUE(ah.ok());
  std::memcpy(a.buffer.data(), "tick 42", 7);
  const Sge s = a.sge(0, 7);
  SendWr wr;
  wr.wr_id = 5;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.opcode = WrOpcode::SEND;
  wr.send_flags = SendFlag::SIGNALED;
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = qb->qp_num();
  wr.ud.remote_qkey = test::kQkey;
  ASSERT_TRUE(qa->post_send(wr).ok());
  auto sent = a.poll(1, {&a, &b});
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::IBV_WC_SUCCESS);
  auto got = b.poll(1, {&a, &b});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].wr_id, 77u);
  EXPECT_EQ(got[0].byte_len, 40u + 7u);
  EXPECT_EQ(got[0].src_qp, qa->qp_num());
  EXPECT_EQ(std::memcmp(b.buffer.data() + 40, "tick 42", 7), 0);
  EXPECT_EQ(b.device->ingress_counters().delivered.get(), 1u);
  EXPECT_EQ(b.device->wire_counters().accepted.get(), 1u);
}

TEST(SoftDevice, PacketsSentFromPort4791AreResealedSoTheirIcrcStillVerifies) {
  SoftDeviceOptions o;
  o.address_or_name = "127.61.26.1";
  o.net.probe_ipv4_id = false;
  o.net.per_flow_source_port = false;  // every packet leaves from 4791, not the QP's RoCEv2 port
  auto fixed = open_soft_device(o);
  ASSERT_TRUE(fixed.ok());
  Node b("127.61.26.2");
  auto pd = (*fixed)->alloc_pd();
  auto cq = (*fixed)->create_cq(16, 0);
  std::vector<std::uint8_t> mem(256, 7);
  auto mr = (*pd)->reg_mr(mem.data(), mem.size(), Access::LOCAL_WRITE);
  QpInitAttr init;
  init.qp_type = QpType::UD;
  init.send_cq = cq->get();
  init.recv_cq = cq->get();
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  auto qa = (*pd)->create_qp(init);
  ASSERT_TRUE(qa.ok());
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.qkey = test::kQkey;
  ASSERT_TRUE((*qa)->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());
  a.qp_state = QpState::RTR;
  ASSERT_TRUE((*qa)->modify(a, QpAttrMask::STATE).ok());
  a.qp_state = QpState::RTS;
  ASSERT_TRUE((*qa)->modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN).ok());
  auto qb = b.ud_qp();
  b.post_recv(*qb, 1, 0, 1024);
  AhAttr ah_attr;
  ah_attr.dgid = b.device->gid();
  auto ah = (*pd)->create_ah(ah_attr);
  const Sge s{reinterpret_cast<std::uint64_t>(mem.data()), 32, (*mr)->lkey()};
  SendWr wr;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = qb->qp_num();
  wr.ud.remote_qkey = test::kQkey;
  ASSERT_TRUE((*qa)->post_send(wr).ok());
  std::vector<Wc> got;
  for (int i = 0; i < 200 && got.empty(); ++i) {
    (*fixed)->do_work(test::now_ns());
    got = b.poll(1, {&b}, 5);
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ((*fixed)->net_counters().tx_icrc_resealed.get(), 1u);
  EXPECT_EQ(b.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 0u);
}

TEST(SoftDevice, AnAddressHandlesTrafficClassAndHopLimitReachTheWireAsTosAndTtl) {
  Node a("127.61.27.1");
  test::PlainSocket peer("127.61.27.2", 4791);
  ASSERT_TRUE(a.ok() && peer.bound());
  auto qp = a.ud_qp();
  AhAttr ah_attr;
  ah_attr.dgid = gid_of("::ffff:127.61.27.2");
  ah_attr.traffic_class = 0xb8;  // DSCP EF
  ah_attr.hop_limit = 3;
  auto ah = a.pd->create_ah(ah_attr);
  ASSERT_TRUE(ah.ok());
  const Sge s = a.sge(0, 16);
  SendWr wr;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = 0x1234;
  wr.ud.remote_qkey = test::kQkey;
  ASSERT_TRUE(qp->post_send(wr).ok());
  a.work();
  test::PlainSocket::Datagram d;
  ASSERT_TRUE(peer.recv(d));
  EXPECT_EQ(d.tos, 0xb8);
  EXPECT_EQ(d.ttl, 3);
  EXPECT_GE(d.src_port, 0xC000);  // the UD QP's RoCEv2 source port, not 4791
  // What left is a RoCEv2 packet whose ICRC verifies for the flow it took.
  wire::UdpFlow flow{test::ip("127.61.27.1"), test::ip("127.61.27.2"), d.src_port, 4791};
  EXPECT_TRUE(wire::decode_verified(d.bytes, flow).ok());
}

// Two devices on 127.61.29.1 and .2 (addresses no other test or process
// uses, so a gateway holding 127.0.0.1:4791 cannot fail it), an RC pair:
// SEND, RDMA WRITE, RDMA READ, FETCH_ADD and CMP_SWAP over real UDP.
TEST(SoftDevice, RcSendWriteReadAndAtomicsBetweenTwoDevicesOnLoopback) {
  SoftDeviceOptions probe;
  Node a("127.61.29.1");
  Node b("127.61.29.2");
  ASSERT_TRUE(a.ok() && b.ok());
  auto qa = a.connected_qp_init(QpType::RC);
  auto qb = b.connected_qp_init(QpType::RC);
  a.connect(*qa, b.device->gid(), qb->qp_num(), 100, 200);
  b.connect(*qb, a.device->gid(), qa->qp_num(), 200, 100);
  const std::vector<Node*> both{&a, &b};

  // SEND
  b.post_recv(*qb, 1, 0, 1024);
  std::memcpy(a.buffer.data(), "order 1", 7);
  Sge s = a.sge(0, 7);
  SendWr wr;
  wr.wr_id = 10;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.opcode = WrOpcode::SEND;
  wr.send_flags = SendFlag::SIGNALED;
  ASSERT_TRUE(qa->post_send(wr).ok());
  auto recv = b.poll(1, both);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].byte_len, 7u);
  EXPECT_EQ(std::memcmp(b.buffer.data(), "order 1", 7), 0);
  auto c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_SUCCESS);

  // RDMA WRITE of 3000 bytes (3 packets at MTU 1024) into b's buffer at 4096
  for (int i = 0; i < 3000; ++i) a.buffer[1000 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i * 7);
  s = a.sge(1000, 3000);
  wr.wr_id = 11;
  wr.opcode = WrOpcode::RDMA_WRITE;
  wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(b.buffer.data() + 4096);
  wr.rdma.rkey = b.mr->rkey();
  ASSERT_TRUE(qa->post_send(wr).ok());
  c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(b.buffer.data() + 4096, a.buffer.data() + 1000, 3000), 0);

  // RDMA READ it back into a's buffer at 8192
  s = a.sge(8192, 3000);
  wr.wr_id = 12;
  wr.opcode = WrOpcode::RDMA_READ;
  ASSERT_TRUE(qa->post_send(wr).ok());
  c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(c[0].opcode, WcOpcode::RDMA_READ);
  EXPECT_EQ(std::memcmp(a.buffer.data() + 8192, a.buffer.data() + 1000, 3000), 0);

  // FETCH_ADD then CMP_SWAP on an 8-byte word of b
  std::uint64_t word = 40;
  std::memcpy(b.buffer.data() + 16384, &word, 8);
  s = a.sge(12288, 8);
  wr.wr_id = 13;
  wr.opcode = WrOpcode::ATOMIC_FETCH_AND_ADD;
  wr.atomic.remote_addr = reinterpret_cast<std::uint64_t>(b.buffer.data() + 16384);
  wr.atomic.rkey = b.mr->rkey();
  wr.atomic.compare_add = 2;
  ASSERT_TRUE(qa->post_send(wr).ok());
  c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_SUCCESS);
  std::uint64_t old = 0;
  std::memcpy(&old, a.buffer.data() + 12288, 8);
  EXPECT_EQ(old, 40u);
  std::memcpy(&word, b.buffer.data() + 16384, 8);
  EXPECT_EQ(word, 42u);
  wr.wr_id = 14;
  wr.opcode = WrOpcode::ATOMIC_CMP_AND_SWP;
  wr.atomic.compare_add = 42;
  wr.atomic.swap = 7;
  ASSERT_TRUE(qa->post_send(wr).ok());
  c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_SUCCESS);
  std::memcpy(&word, b.buffer.data() + 16384, 8);
  EXPECT_EQ(word, 7u);

  // A bad rkey: the responder NAKs, the requester completes with REM_ACCESS_ERR.
  wr.wr_id = 15;
  wr.opcode = WrOpcode::RDMA_WRITE;
  s = a.sge(0, 8);
  wr.rdma.rkey = b.mr->rkey() ^ 0x5a5a;
  ASSERT_TRUE(qa->post_send(wr).ok());
  c = a.poll(1, both);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::IBV_WC_REM_ACCESS_ERR);
}

}  // namespace
}  // namespace qpgate::verbs::soft
