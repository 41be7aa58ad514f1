// RC ACK coalescing (resp.h): how many ACKs the responder sends, that one
// ACK completes every SEND it covers, and that loss and RNR are handled as
// exactly as before; the ACK hold and the requester's AckRequests::WINDOW.
#include <gtest/gtest.h>

#include "soft_fixture.h"
#include "verbs/soft/resp.h"
#include "wire/opcode.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft::testing {
namespace {

// kBatch signaled SENDs leave in one duty cycle and arrive together: one batch.
constexpr int kBatch = 8;

void post_signaled_sends(Pair& p, int n, std::uint64_t first_id = 0) {
  static Sge ss;
  ss = p.a.sge(0, 64);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(p.qa->post_send(send_wr(first_id + static_cast<std::uint64_t>(i), {&ss, 1})).ok());
}

void post_recvs(Pair& p, int n) {
  static Sge rs;
  rs = p.b.sge(0, 256);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(p.qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rs, 1})).ok());
}

TEST(SoftRcAck, OneAckAnswersTheAckReqSendsOfOneReceiveBatch) {
  Pair p;
  post_recvs(p, kBatch);
  post_signaled_sends(p, kBatch);
  p.wire.run();
  const auto reqs = requests(p.wire, p.a.ip);
  ASSERT_EQ(reqs.size(), static_cast<std::size_t>(kBatch));
  for (const auto* r : reqs) EXPECT_TRUE(r->ack_req());  // each one asks
  const auto answers = p.wire.sent_by(p.b.ip);
  ASSERT_EQ(answers.size(), 1u);                          // one answers them all
  EXPECT_EQ(answers[0]->opcode(), op(Opcode::kRcAcknowledge));
  EXPECT_EQ(answers[0]->psn(), wire::psn_add(0x100, kBatch - 1));
  EXPECT_EQ(p.qb->counters().acks_sent.get(), 1u);
  EXPECT_EQ(p.qb->counters().acks_coalesced.get(), static_cast<std::uint64_t>(kBatch - 1));
  EXPECT_EQ(p.a.send_wcs().size(), static_cast<std::size_t>(kBatch));
  EXPECT_EQ(p.b.recv_wcs().size(), static_cast<std::size_t>(kBatch));
  EXPECT_EQ(p.qa->counters().timeouts.get(), 0u);
}

TEST(SoftRcAck, ALostCoalescedAckIsRepairedByTheTimeoutAndTheDuplicatesAreDeliveredOnce) {
  Pair p;
  post_recvs(p, kBatch);
  post_signaled_sends(p, kBatch);
  p.wire.drop_if([](const WireRecord& r) { return r.opcode() == op(Opcode::kRcAcknowledge); }, 1);
  p.wire.run();
  EXPECT_EQ(p.qa->counters().timeouts.get(), 1u);
  EXPECT_EQ(p.qa->counters().retransmitted_pkts.get(), static_cast<std::uint64_t>(kBatch));  // go-back-N from the first
  EXPECT_EQ(p.qb->counters().duplicate_request.get(), static_cast<std::uint64_t>(kBatch));
  EXPECT_EQ(p.b.recv_wcs().size(), static_cast<std::size_t>(kBatch));  // delivered once
  EXPECT_EQ(p.qb->counters().acks_sent.get(), 2u);                  // the lost one, one for the resent batch
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), static_cast<std::size_t>(kBatch));
  for (int i = 0; i < kBatch; ++i) {
    EXPECT_EQ(swc[static_cast<std::size_t>(i)].wr_id, static_cast<std::uint64_t>(i));
    EXPECT_EQ(swc[static_cast<std::size_t>(i)].status, WcStatus::IBV_WC_SUCCESS);
  }
}

TEST(SoftRcAck, AnRnrNakLeavesAtOnceAndCoversTheAckOwedBeforeIt) {
  RcOptions o;
  o.min_rnr_timer = 14;  // 1.28 ms
  Pair p(QpType::RC, o);
  post_recvs(p, 2);
  post_signaled_sends(p, 4);
  p.wire.run_now();                   // the four SENDs leave
  p.wire.advance(1000);               // and arrive together (latency 1 µs)
  p.wire.run_now();
  const auto answers = p.wire.sent_by(p.b.ip);
  ASSERT_EQ(answers.size(), 1u);      // no ACK for the first two: the RNR NAK covers them
  EXPECT_EQ(answers[0]->opcode(), op(Opcode::kRcAcknowledge));
  EXPECT_EQ(answers[0]->syndrome(), 0x20 | 14);
  EXPECT_EQ(answers[0]->psn(), wire::psn_add(0x100, 2));
  EXPECT_EQ(answers[0]->sent_ns, requests(p.wire, p.a.ip).back()->sent_ns + 1000);  // at once
  EXPECT_EQ(p.qb->counters().acks_sent.get(), 0u);
  EXPECT_EQ(p.qb->counters().rnr_naks_sent.get(), 1u);
  p.wire.advance(1000);
  p.wire.run_now();
  EXPECT_EQ(p.a.send_wcs().size(), 2u);  // the NAK acknowledged the SENDs before it
  post_recvs(p, 2);
  p.wire.run();
  auto swc = p.a.send_wcs();  // the ones since the last look: the SENDs the NAK held back
  ASSERT_EQ(swc.size(), 2u);
  EXPECT_EQ(swc[0].wr_id, 2u);
  EXPECT_EQ(swc[1].wr_id, 3u);
  EXPECT_EQ(p.b.recv_wcs().size(), 4u);
  EXPECT_EQ(p.qa->counters().rcvd_rnr_err.get(), 1u);
}

TEST(SoftRcAck, ABurstOfUnsignaledSendsAsksForFewAcks) {
  Pair p;
  constexpr int kN = 256;
  Sge rs = p.b.sge(0, 2048);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(p.qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 1500);  // two packets each
  for (int i = 0; i < kN; ++i) {
    const SendFlags f = i + 1 == kN ? SendFlags(SendFlag::SIGNALED) : SendFlags();
    ASSERT_TRUE(p.qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&ss, 1}, WrOpcode::SEND, f)).ok());
  }
  p.wire.run();
  EXPECT_EQ(p.b.recv_wcs().size(), static_cast<std::size_t>(kN));
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].wr_id, static_cast<std::uint64_t>(kN - 1));
  const auto pkts = requests(p.wire, p.a.ip).size();
  EXPECT_EQ(pkts, 2u * kN);
  const auto acks = p.qb->counters().acks_sent.get();
  EXPECT_GE(acks, 1u);
  EXPECT_LE(acks * 32, pkts) << acks << " ACKs for " << pkts << " packets";
  EXPECT_EQ(p.qa->counters().timeouts.get(), 0u);
}

std::size_t count_acks(const LoopbackWire& w, const wire::IpAddress& from) {
  std::size_t n = 0;
  for (const auto* r : w.sent_by(from)) n += r->opcode() == op(Opcode::kRcAcknowledge) ? 1 : 0;
  return n;
}

// Virtual time in 1 µs steps until `done` (the wire's latency is 1 µs).
template <class Done>
void step_until(LoopbackWire& w, Done done) {
  for (int i = 0; i < 100'000 && !done(); ++i) {
    w.advance(1000);
    w.run_now();
  }
}

TEST(SoftRcAck, AWindowPingPongCarriesOnlyItsSendsUntilTheAckHoldEnds) {
  Pair p;
  ASSERT_TRUE(p.qa->set_ack_requests(AckRequests::WINDOW).ok());
  ASSERT_TRUE(p.qb->set_ack_requests(AckRequests::WINDOW).ok());
  constexpr int kRounds = 20;
  Sge ra = p.a.sge(0, 256), rb = p.b.sge(0, 256), sa = p.a.sge(4096, 64), sb = p.b.sge(4096, 64);
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(p.qa->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&ra, 1})).ok());
    ASSERT_TRUE(p.qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rb, 1})).ok());
  }
  const std::int64_t start = p.wire.now();
  std::size_t at_a = 0, at_b = 0;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(p.qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&sa, 1})).ok());
    step_until(p.wire, [&] { return (at_b += p.b.recv_wcs().size()) > static_cast<std::size_t>(i); });
    ASSERT_TRUE(p.qb->post_send(send_wr(static_cast<std::uint64_t>(i), {&sb, 1})).ok());
    step_until(p.wire, [&] { return (at_a += p.a.recv_wcs().size()) > static_cast<std::size_t>(i); });
  }
  ASSERT_EQ(at_a, static_cast<std::size_t>(kRounds));
  ASSERT_LT(p.wire.now() - start, kAckHoldNs);  // the whole ping-pong within one hold
  // Two SENDs per round trip and nothing else: no request asked, no ACK left.
  EXPECT_EQ(p.wire.transmitted(), 2u * kRounds);
  for (const auto* r : requests(p.wire, p.a.ip)) EXPECT_FALSE(r->ack_req());
  EXPECT_EQ(p.qa->counters().ack_requests.get() + p.qb->counters().ack_requests.get(), 0u);
  EXPECT_TRUE(p.a.send_wcs().empty());
  // The hold ends: one ACK each way covers every SEND, nothing is resent.
  p.wire.run();
  EXPECT_EQ(count_acks(p.wire, p.b.ip), 1u);
  EXPECT_EQ(count_acks(p.wire, p.a.ip), 1u);
  EXPECT_EQ(p.qb->counters().acks_held.get(), 1u);
  EXPECT_EQ(p.a.send_wcs().size(), static_cast<std::size_t>(kRounds));
  EXPECT_EQ(p.b.send_wcs().size(), static_cast<std::size_t>(kRounds));
  EXPECT_EQ(p.qa->counters().timeouts.get() + p.qb->counters().timeouts.get(), 0u);
  EXPECT_EQ(p.qa->counters().retransmitted_pkts.get() + p.qb->counters().retransmitted_pkts.get(), 0u);
}

TEST(SoftRcAck, AWindowRequesterAsksOnceHalfItsSendQueueWaitsAndThatAckCoversTheHeldOnes) {
  LoopbackWire w;
  Host a(w, ip4(1)), b(w, ip4(2));
  QpCap cap = Host::default_cap();
  cap.max_send_wr = 8;
  auto qa = a.make_qp(QpType::RC, 0x11, nullptr, cap);
  auto qb = b.make_qp(QpType::RC, 0x22);
  const RcOptions o;
  bring_up(*qa, QpType::RC, b.ip, 0x22, o.psn_a, o.psn_b, o);
  bring_up(*qb, QpType::RC, a.ip, 0x11, o.psn_b, o.psn_a, o);
  ASSERT_TRUE(qa->set_ack_requests(AckRequests::WINDOW).ok());
  Sge rs = b.sge(0, 256), ss = a.sge(0, 64);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rs, 1})).ok());
  std::size_t delivered = 0;
  for (int i = 0; i < 4; ++i) {  // one at a time: each arrives in a receive batch of its own
    ASSERT_TRUE(qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&ss, 1})).ok());
    step_until(w, [&] { return (delivered += b.recv_wcs().size()) > static_cast<std::size_t>(i); });
  }
  const auto reqs = requests(w, a.ip);
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_FALSE(reqs[0]->ack_req());
  EXPECT_FALSE(reqs[2]->ack_req());
  EXPECT_TRUE(reqs[3]->ack_req());  // 4 of 8 send WQEs outstanding
  EXPECT_EQ(qa->counters().ack_requests.get(), 1u);
  std::size_t completed = 0;
  step_until(w, [&] { return (completed += a.send_wcs().size()) >= 4; });
  EXPECT_EQ(completed, 4u);  // one ACK acknowledged all four, before the hold ran out
  EXPECT_EQ(count_acks(w, b.ip), 1u);
  EXPECT_EQ(qb->counters().acks_held.get(), 0u);
  w.run();                             // past the hold: the held ACK was covered, none follows
  EXPECT_EQ(count_acks(w, b.ip), 1u);
  EXPECT_EQ(qb->counters().acks_held.get(), 0u);
  EXPECT_EQ(qa->counters().timeouts.get(), 0u);
}

TEST(SoftRcAck, AckRequestsAreAnRcSetting) {
  Pair p(QpType::UC);
  const Status s = p.qa->set_ack_requests(AckRequests::WINDOW);
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_EQ(s.message(), "ack requests: only an RC queue pair asks for ACKs");
}
}  // namespace
}  // namespace qpgate::verbs::soft::testing
