// RC over the loopback wire: the operations, the wire format they produce,
// and the remote error paths.
#include <gtest/gtest.h>

#include <atomic>

#include "soft_fixture.h"
#include "verbs/soft/srq.h"
#include "wire/opcode.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft::testing {
namespace {

TEST(SoftRc, SmallSendIsOneSendOnlyPacketAndOneAck) {
  Pair p;
  Sge rs = p.b.sge(0, 256);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(7, {&rs, 1})).ok());
  fill(p.a.bytes(0), 100, 1);
  Sge ss = p.a.sge(0, 100);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run();

  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(swc[0].opcode, WcOpcode::SEND);
  EXPECT_EQ(swc[0].wr_id, 1u);
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(rwc[0].opcode, WcOpcode::RECV);
  EXPECT_EQ(rwc[0].byte_len, 100u);
  EXPECT_EQ(rwc[0].wr_id, 7u);
  EXPECT_EQ(rwc[0].src_qp, 0x11u);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(0), 100), 0);

  ASSERT_EQ(p.wire.transmitted(), 2u);
  EXPECT_EQ(p.wire.log()[0].opcode(), op(Opcode::kRcSendOnly));
  EXPECT_EQ(p.wire.log()[0].psn(), 0x100u);
  EXPECT_TRUE(p.wire.log()[0].ack_req());
  EXPECT_EQ(p.wire.log()[1].opcode(), op(Opcode::kRcAcknowledge));
  EXPECT_EQ(p.wire.log()[1].syndrome(), 0x1f);
  EXPECT_EQ(p.wire.icrc_failures(), 0u);
  EXPECT_EQ(p.qa->next_deadline_ns(), kNoDeadline);  // nothing outstanding: no timer
}

void multi_packet_send(Mtu mtu, std::uint32_t len, std::uint32_t start_psn) {
  RcOptions o;
  o.mtu = mtu;
  o.psn_a = start_psn;
  Pair p(QpType::RC, o);
  Sge rs = p.b.sge(0, len);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  fill(p.a.bytes(0), len, 3);
  Sge ss = p.a.sge(0, len);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run();
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].byte_len, len);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(0), len), 0);
  ASSERT_EQ(p.a.send_wcs().size(), 1u);

  const std::uint32_t m = mtu_to_bytes(mtu);
  const std::uint32_t n = (len + m - 1) / m;
  auto req = requests(p.wire, p.a.ip);
  ASSERT_EQ(req.size(), n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint8_t want = i == 0 ? op(Opcode::kRcSendFirst) : i + 1 == n ? op(Opcode::kRcSendLast)
                                                                            : op(Opcode::kRcSendMiddle);
    EXPECT_EQ(req[i]->opcode(), want) << i;
    EXPECT_EQ(req[i]->psn(), wire::psn_add(start_psn, i)) << i;
    EXPECT_EQ(req[i]->packet().payload.size(), i + 1 == n ? len - m * (n - 1) : m);
  }
  EXPECT_TRUE(req.back()->ack_req());
  EXPECT_FALSE(req.front()->ack_req());
}

TEST(SoftRc, MultiPacketSendAtMtu1024IsFirstMiddleLast) { multi_packet_send(Mtu::MTU_1024, 5000, 0x1000); }
TEST(SoftRc, MultiPacketSendAtMtu4096IsFirstMiddleLast) { multi_packet_send(Mtu::MTU_4096, 3 * 4096 + 10, 0x1000); }
TEST(SoftRc, PsnsWrapAt24Bits) { multi_packet_send(Mtu::MTU_1024, 6 * 1024, 0xfffffd); }

TEST(SoftRc, SendWithImmDeliversImmediateInTheCompletion) {
  Pair p;
  Sge rs = p.b.sge(0, 4096);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 3000);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::SEND_WITH_IMM);
  w.imm_data = 0xdeadbeef;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_TRUE(rwc[0].wc_flags.has(WcFlag::WITH_IMM));
  EXPECT_EQ(rwc[0].imm_data, 0xdeadbeefu);
  EXPECT_EQ(rwc[0].byte_len, 3000u);
  auto req = requests(p.wire, p.a.ip);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[2]->opcode(), op(Opcode::kRcSendLastWithImm));
}

TEST(SoftRc, InlineSendCopiesAtPostTime) {
  Pair p;
  Sge rs = p.b.sge(0, 256);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  std::uint8_t local[64];
  fill(local, sizeof local, 9);
  Sge ss{reinterpret_cast<std::uint64_t>(local), sizeof local, 0};
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1}, WrOpcode::SEND, SendFlag::SIGNALED | SendFlag::INLINE)).ok());
  std::uint8_t expect[64];
  std::memcpy(expect, local, 64);
  std::memset(local, 0, sizeof local);
  p.wire.run();
  ASSERT_EQ(p.b.recv_wcs().size(), 1u);
  EXPECT_EQ(std::memcmp(p.b.bytes(0), expect, 64), 0);
}

TEST(SoftRc, WriteLandsInRemoteMemoryWithoutConsumingAReceive) {
  Pair p;
  fill(p.a.bytes(0), 5000, 5);
  Sge ss = p.a.sge(0, 5000);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = p.b.addr(8192);
  w.rdma.rkey = p.b.mr.rkey;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(swc[0].opcode, WcOpcode::RDMA_WRITE);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(8192), 5000), 0);
  EXPECT_TRUE(p.b.recv_wcs().empty());
  auto req = requests(p.wire, p.a.ip);
  ASSERT_EQ(req.size(), 5u);
  EXPECT_EQ(req[0]->opcode(), op(Opcode::kRcRdmaWriteFirst));
  EXPECT_EQ(req[0]->packet().reth()->dma_len(), 5000u);
  EXPECT_EQ(req[4]->opcode(), op(Opcode::kRcRdmaWriteLast));
}

TEST(SoftRc, WriteWithImmConsumesAReceiveAndCompletesWithImm) {
  Pair p;
  Sge rs = p.b.sge(0, 16);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(9, {&rs, 1})).ok());
  fill(p.a.bytes(0), 2048, 5);
  Sge ss = p.a.sge(0, 2048);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE_WITH_IMM);
  w.rdma.remote_addr = p.b.addr(8192);
  w.rdma.rkey = p.b.mr.rkey;
  w.imm_data = 42;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].opcode, WcOpcode::RECV_RDMA_WITH_IMM);
  EXPECT_EQ(rwc[0].imm_data, 42u);
  EXPECT_EQ(rwc[0].byte_len, 2048u);
  EXPECT_EQ(rwc[0].wr_id, 9u);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(8192), 2048), 0);
  auto req = requests(p.wire, p.a.ip);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[1]->opcode(), op(Opcode::kRcRdmaWriteLastWithImm));
}

TEST(SoftRc, MultiPacketReadFillsTheLocalBuffer) {
  Pair p;
  fill(p.b.bytes(4096), 10000, 11);
  Sge ls = p.a.sge(0, 10000);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::RDMA_READ);
  w.rdma.remote_addr = p.b.addr(4096);
  w.rdma.rkey = p.b.mr.rkey;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(swc[0].opcode, WcOpcode::RDMA_READ);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(4096), 10000), 0);
  auto resp = p.wire.sent_by(p.b.ip);
  ASSERT_EQ(resp.size(), 10u);
  EXPECT_EQ(resp[0]->opcode(), op(Opcode::kRcRdmaReadResponseFirst));
  EXPECT_EQ(resp[1]->opcode(), op(Opcode::kRcRdmaReadResponseMiddle));
  EXPECT_EQ(resp[9]->opcode(), op(Opcode::kRcRdmaReadResponseLast));
  EXPECT_EQ(resp[9]->psn(), wire::psn_add(0x100, 9));
  // The next WQE starts after the PSNs the READ reserved.
  Sge rs = p.b.sge(0, 64);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 8);
  ASSERT_TRUE(p.qa->post_send(send_wr(2, {&ss, 1})).ok());
  p.wire.run();
  EXPECT_EQ(requests(p.wire, p.a.ip).back()->psn(), wire::psn_add(0x100, 10));
  EXPECT_EQ(p.a.send_wcs().size(), 1u);
}

TEST(SoftRc, FetchAddReturnsTheOriginalValueInHostOrder) {
  Pair p;
  auto* word = reinterpret_cast<std::uint64_t*>(p.b.bytes(64));
  *word = 1000;
  Sge ls = p.a.sge(0, 8);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::ATOMIC_FETCH_AND_ADD);
  w.atomic.remote_addr = p.b.addr(64);
  w.atomic.rkey = p.b.mr.rkey;
  w.atomic.compare_add = 5;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(swc[0].opcode, WcOpcode::FETCH_ADD);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(p.a.bytes(0)), 1000u);
  EXPECT_EQ(*word, 1005u);
  EXPECT_EQ(p.qb->counters().atomics_executed.get(), 1u);
}

TEST(SoftRc, CompareSwapSwapsOnlyWhenEqual) {
  Pair p;
  auto* word = reinterpret_cast<std::uint64_t*>(p.b.bytes(64));
  *word = 7;
  Sge ls = p.a.sge(0, 8);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::ATOMIC_CMP_AND_SWP);
  w.atomic.remote_addr = p.b.addr(64);
  w.atomic.rkey = p.b.mr.rkey;
  w.atomic.compare_add = 7;
  w.atomic.swap = 99;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  EXPECT_EQ(*word, 99u);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(p.a.bytes(0)), 7u);
  // Fails now: 99 != 7; the original comes back, nothing changes.
  w.wr_id = 2;
  w.atomic.swap = 1;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.run();
  EXPECT_EQ(*word, 99u);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(p.a.bytes(0)), 99u);
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 2u);
  EXPECT_EQ(swc[1].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(swc[1].opcode, WcOpcode::COMP_SWAP);
}

// ---------------------------------------------------------------- remote errors

struct NakCase {
  Pair p;
  void expect_nak(std::uint8_t code, WcStatus status) {
    p.wire.run();
    auto swc = p.a.send_wcs();
    ASSERT_GE(swc.size(), 1u);
    EXPECT_EQ(swc[0].status, status);
    bool nak_seen = false;
    for (const auto* r : p.wire.sent_by(p.b.ip)) nak_seen = nak_seen || r->syndrome() == code;
    EXPECT_TRUE(nak_seen) << "no NAK 0x" << std::hex << int(code) << " on the wire";
    EXPECT_EQ(p.qa->state(), QpState::ERR);
    EXPECT_EQ(p.qb->state(), QpState::ERR);  // class C at the responder too
  }
};

TEST(SoftRcErrors, BadRkeyIsRemoteAccessErrorAndNak0x62) {
  NakCase c;
  Sge ss = c.p.a.sge(0, 64);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = c.p.b.addr(0);
  w.rdma.rkey = c.p.b.mr.rkey ^ 0x5a5a;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x62, WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(c.p.qb->counters().naks_sent_rem_access.get(), 1u);
  auto ev = c.p.b.drain_events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].event_type, EventType::QP_ACCESS_ERR);
}

TEST(SoftRcErrors, BadRkeyOnReadIsRemoteAccessError) {
  NakCase c;
  Sge ls = c.p.a.sge(0, 64);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::RDMA_READ);
  w.rdma.remote_addr = c.p.b.addr(0);
  w.rdma.rkey = 12345;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x62, WcStatus::IBV_WC_REM_ACCESS_ERR);
}

TEST(SoftRcErrors, WritePastTheEndOfTheRegionIsNak0x62) {
  NakCase c;
  Sge ss = c.p.a.sge(0, 128);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = c.p.b.addr(Host::kMemBytes - 64);
  w.rdma.rkey = c.p.b.mr.rkey;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x62, WcStatus::IBV_WC_REM_ACCESS_ERR);
}

TEST(SoftRcErrors, WriteToARegionWithoutRemoteWriteIsNak0x62) {
  NakCase c;
  static std::uint64_t ro[16];
  auto mr = c.p.b.mrs.register_mr(Host::kPd, reinterpret_cast<std::uint64_t>(ro), sizeof ro, Access::REMOTE_READ);
  ASSERT_TRUE(mr.ok());
  Sge ss = c.p.a.sge(0, 64);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = reinterpret_cast<std::uint64_t>(ro);
  w.rdma.rkey = mr->rkey;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x62, WcStatus::IBV_WC_REM_ACCESS_ERR);
}

TEST(SoftRcErrors, WriteToAQpWithoutRemoteWriteAccessIsInvalidRequest0x61AsRxe) {
  RcOptions o;
  o.access = AccessFlags(Access::REMOTE_READ);
  NakCase c{Pair(QpType::RC, o)};
  Sge ss = c.p.a.sge(0, 64);
  SendWr w = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  w.rdma.remote_addr = c.p.b.addr(0);
  w.rdma.rkey = c.p.b.mr.rkey;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x61, WcStatus::IBV_WC_REM_INV_REQ_ERR);
  auto ev = c.p.b.drain_events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].event_type, EventType::QP_REQ_ERR);
}

TEST(SoftRcErrors, MisalignedAtomicIsInvalidRequest) {
  NakCase c;
  Sge ls = c.p.a.sge(0, 8);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::ATOMIC_FETCH_AND_ADD);
  w.atomic.remote_addr = c.p.b.addr(68);
  w.atomic.rkey = c.p.b.mr.rkey;
  ASSERT_TRUE(c.p.qa->post_send(w).ok());
  c.expect_nak(0x61, WcStatus::IBV_WC_REM_INV_REQ_ERR);
}

TEST(SoftRcErrors, SendBiggerThanTheReceiveIsNak0x63AndLocalLengthErrorAtTheResponder) {
  NakCase c;
  Sge rs = c.p.b.sge(0, 100);
  ASSERT_TRUE(c.p.qb->post_recv(recv_wr(5, {&rs, 1})).ok());
  ASSERT_TRUE(c.p.qb->post_recv(recv_wr(6, {&rs, 1})).ok());
  Sge ss = c.p.a.sge(0, 200);
  ASSERT_TRUE(c.p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  c.expect_nak(0x63, WcStatus::IBV_WC_REM_OP_ERR);
  auto rwc = c.p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 2u);
  EXPECT_EQ(rwc[0].wr_id, 5u);
  EXPECT_EQ(rwc[0].status, WcStatus::IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(rwc[1].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
}

TEST(SoftRcErrors, RemoteErrorFlushesEveryLaterWqe) {
  NakCase c;
  Sge ss = c.p.a.sge(0, 64);
  SendWr bad = send_wr(1, {&ss, 1}, WrOpcode::RDMA_WRITE);
  bad.rdma.rkey = 1;
  ASSERT_TRUE(c.p.qa->post_send(bad).ok());
  for (int i = 2; i < 6; ++i) {
    SendWr w = bad;
    w.wr_id = static_cast<std::uint64_t>(i);
    w.send_flags = SendFlags();  // unsignaled: flushed all the same
    ASSERT_TRUE(c.p.qa->post_send(w).ok());
  }
  Sge rs = c.p.a.sge(0, 64);
  ASSERT_TRUE(c.p.qa->post_recv(recv_wr(77, {&rs, 1})).ok());
  c.p.wire.run();
  auto swc = c.p.a.send_wcs();
  ASSERT_EQ(swc.size(), 5u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_REM_ACCESS_ERR);
  for (int i = 1; i < 5; ++i) {
    EXPECT_EQ(swc[i].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(swc[i].wr_id, static_cast<std::uint64_t>(i + 1));
  }
  auto rwc = c.p.a.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
}

// ---------------------------------------------------------------- flow control

TEST(SoftRc, MaxRdAtomicOneKeepsASecondReadWaitingUntilTheFirstCompletes) {
  RcOptions o;
  o.max_rd_atomic = 1;
  Pair p(QpType::RC, o, 50'000);
  Sge l1 = p.a.sge(0, 64), l2 = p.a.sge(128, 64);
  SendWr r1 = send_wr(1, {&l1, 1}, WrOpcode::RDMA_READ);
  r1.rdma.remote_addr = p.b.addr(0);
  r1.rdma.rkey = p.b.mr.rkey;
  SendWr r2 = r1;
  r2.wr_id = 2;
  r2.sg_list = {&l2, 1};
  ASSERT_TRUE(p.qa->post_send(r1).ok());
  ASSERT_TRUE(p.qa->post_send(r2).ok());
  p.qa->do_work(p.wire.now());
  EXPECT_EQ(requests(p.wire, p.a.ip).size(), 1u);  // the second READ waits
  EXPECT_GE(p.qa->counters().rd_atomic_waits.get(), 1u);
  p.wire.run();
  auto req = requests(p.wire, p.a.ip);
  ASSERT_EQ(req.size(), 2u);
  // The second request left only after the first READ's response arrived.
  const WireRecord* first_resp = p.wire.sent_by(p.b.ip).front();
  EXPECT_GT(req[1]->sent_ns, first_resp->sent_ns);
  EXPECT_EQ(p.a.send_wcs().size(), 2u);
}

// ---------------------------------------------------------------- SRQ, events, modify

TEST(SoftRc, SrqIsSharedByTwoQps) {
  LoopbackWire wire;
  Host srv(wire, ip4(1)), c1(wire, ip4(2)), c2(wire, ip4(3));
  SrqAttr sa;
  sa.max_wr = 16;
  sa.max_sge = 1;
  SoftSrq srq(sa, 1, 0, &srv.events);
  auto s1 = srv.make_qp(QpType::RC, 0x31, &srq);
  auto s2 = srv.make_qp(QpType::RC, 0x32, &srq);
  auto q1 = c1.make_qp(QpType::RC, 0x41);
  auto q2 = c2.make_qp(QpType::RC, 0x42);
  RcOptions o;
  bring_up(*s1, QpType::RC, c1.ip, 0x41, 1, 2, o);
  bring_up(*q1, QpType::RC, srv.ip, 0x31, 2, 1, o);
  bring_up(*s2, QpType::RC, c2.ip, 0x42, 1, 2, o);
  bring_up(*q2, QpType::RC, srv.ip, 0x32, 2, 1, o);
  std::vector<Sge> rs(4);
  for (int i = 0; i < 4; ++i) {
    rs[i] = srv.sge(static_cast<std::size_t>(i) * 256, 256);
    ASSERT_TRUE(srq.post_recv(recv_wr(static_cast<std::uint64_t>(100 + i), {&rs[i], 1})).ok());
  }
  Sge a = c1.sge(0, 10), b = c2.sge(0, 20);
  ASSERT_TRUE(q1->post_send(send_wr(1, {&a, 1})).ok());
  ASSERT_TRUE(q2->post_send(send_wr(2, {&b, 1})).ok());
  ASSERT_TRUE(q1->post_send(send_wr(3, {&a, 1})).ok());
  wire.run();
  auto rwc = srv.recv_wcs();
  ASSERT_EQ(rwc.size(), 3u);
  int from1 = 0, from2 = 0;
  for (const auto& wc : rwc) {
    EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS);
    if (wc.qp_num == 0x31) ++from1;
    if (wc.qp_num == 0x32) ++from2;
  }
  EXPECT_EQ(from1, 2);
  EXPECT_EQ(from2, 1);
  EXPECT_EQ(srq.size(), 1u);
  EXPECT_FALSE(s1->post_recv(recv_wr(1, {&a, 1})).ok());  // receives go to the SRQ

  // A QP on an SRQ entering ERR says so: IBV_EVENT_QP_LAST_WQE_REACHED.
  srv.drain_events();
  QpAttr e;
  e.qp_state = QpState::ERR;
  ASSERT_TRUE(s1->modify(e, QpAttrMask::STATE).ok());
  auto ev = srv.drain_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].event_type, EventType::QP_LAST_WQE_REACHED);
  EXPECT_EQ(ev[0].element_id, 0x31u);
}

TEST(SoftRc, ModifyToErrFlushesSendAndReceiveQueues) {
  Pair p;
  Sge s = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&s, 1})).ok());
  ASSERT_TRUE(p.qa->post_send(send_wr(2, {&s, 1}, WrOpcode::SEND, SendFlags())).ok());
  ASSERT_TRUE(p.qa->post_recv(recv_wr(3, {&s, 1})).ok());
  QpAttr e;
  e.qp_state = QpState::ERR;
  ASSERT_TRUE(p.qa->modify(e, QpAttrMask::STATE).ok());
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 2u);
  EXPECT_EQ(swc[0].wr_id, 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(swc[1].wr_id, 2u);
  auto rwc = p.a.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  // Posting in ERR completes at once, flushed.
  ASSERT_TRUE(p.qa->post_send(send_wr(4, {&s, 1})).ok());
  swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(p.qa->counters().flushed_wqes.get(), 4u);
  p.wire.run();
  EXPECT_EQ(requests(p.wire, p.a.ip).size(), 0u);
}

TEST(SoftRc, SqdTransitionRaisesSqDrainedOnceNothingIsOutstanding) {
  Pair p(QpType::RC, {}, 10'000);
  Sge rs = p.b.sge(0, 64);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  Sge s = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&s, 1})).ok());
  p.qa->do_work(p.wire.now());  // sent, not yet acknowledged
  ASSERT_TRUE(p.qa->post_send(send_wr(2, {&s, 1})).ok());
  QpAttr d;
  d.qp_state = QpState::SQD;
  d.en_sqd_async_notify = 1;
  ASSERT_TRUE(p.qa->modify(d, QpAttrMask::STATE | QpAttrMask::EN_SQD_ASYNC_NOTIFY).ok());
  EXPECT_TRUE(p.a.drain_events().empty());
  EXPECT_EQ(p.qa->query()->sq_draining, 1);
  p.wire.run();
  auto ev = p.a.drain_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].event_type, EventType::SQ_DRAINED);
  EXPECT_EQ(p.a.send_wcs().size(), 1u);  // the second WQE waits for RTS
  QpAttr r;
  r.qp_state = QpState::RTS;
  ASSERT_TRUE(p.qa->modify(r, QpAttrMask::STATE).ok());
  ASSERT_TRUE(p.qb->post_recv(recv_wr(2, {&rs, 1})).ok());
  p.wire.run();
  EXPECT_EQ(p.a.send_wcs().size(), 1u);
}

TEST(SoftRc, CqOverflowRaisesQpFatalAndTheQpGoesToErr) {
  LoopbackWire wire;
  Host a(wire, ip4(1), 2), b(wire, ip4(2));
  auto qa = a.make_qp(QpType::RC, 0x11);
  auto qb = b.make_qp(QpType::RC, 0x22);
  RcOptions o;
  bring_up(*qa, QpType::RC, b.ip, 0x22, 1, 2, o);
  bring_up(*qb, QpType::RC, a.ip, 0x11, 2, 1, o);
  std::vector<Sge> rs(4, b.sge(0, 64));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rs[i], 1})).ok());
  Sge s = a.sge(0, 8);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&s, 1})).ok());
  wire.run();
  EXPECT_EQ(qa->state(), QpState::ERR);
  bool fatal = false, cq_err = false;
  for (const auto& e : a.drain_events()) {
    fatal = fatal || e.event_type == EventType::QP_FATAL;
    cq_err = cq_err || e.event_type == EventType::CQ_ERR;
  }
  EXPECT_TRUE(fatal);
  EXPECT_TRUE(cq_err);
  EXPECT_GE(qa->counters().cq_overflow.get(), 1u);
}

TEST(SoftRc, CountersEnumerateWithRxeNames) {
  Pair p;
  std::vector<std::string> names;
  p.qa->counters().for_each([&](std::string_view n, std::uint64_t) { names.emplace_back(n); });
  for (const char* want : {"sent_pkts", "rcvd_pkts", "rcvd_seq_err", "duplicate_request", "out_of_seq_request",
                           "rcvd_rnr_err", "retry_exceeded", "rnr_retry_exceeded", "completer_retry",
                           "atomics_replayed"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

}  // namespace
}  // namespace qpgate::verbs::soft::testing
