// RC recovery: sequence error NAKs, timeouts, duplicates, RNR, retry exhaustion, a lossy soak.
#include <gtest/gtest.h>

#include "soft_fixture.h"
#include "wire/opcode.h"
#include "verbs/timers.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft::testing {
namespace {

[[maybe_unused]] LoopbackWire::Pred from(const wire::IpAddress& ip) {
  return [ip](const WireRecord& r) { return r.flow.src == ip; };
}

TEST(SoftRcLoss, ALostPacketIsRecoveredByTheSequenceErrorNakAndGoBackN) {
  Pair p;
  Sge rs = p.b.sge(0, 8192);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  fill(p.a.bytes(0), 5000, 2);
  Sge ss = p.a.sge(0, 5000);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.drop_nth(2);  // the first MIDDLE
  p.wire.run();
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].byte_len, 5000u);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(0), 5000), 0);
  ASSERT_EQ(p.a.send_wcs().size(), 1u);
  // One NAK 0x60 for PSN 0x101, then silence for the rest of the burst.
  int naks = 0;
  for (const auto* r : p.wire.sent_by(p.b.ip)) {
    if (r->syndrome() == 0x60) {
      ++naks;
      EXPECT_EQ(r->psn(), 0x101u);
    }
  }
  EXPECT_EQ(naks, 1);
  EXPECT_EQ(p.qb->counters().out_of_seq_request.get(), 1u);
  EXPECT_EQ(p.qb->counters().out_of_seq_dropped.get(), 2u);
  EXPECT_EQ(p.qa->counters().rcvd_seq_err.get(), 1u);
  EXPECT_EQ(p.qa->counters().completer_retry.get(), 1u);
  EXPECT_EQ(p.qa->counters().timeouts.get(), 0u);
}

TEST(SoftRcLoss, ALostAckIsRecoveredByTheTimeoutAndTheDuplicateIsReAckedNotDeliveredTwice) {
  Pair p;
  Sge rs = p.b.sge(0, 256);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  ASSERT_TRUE(p.qb->post_recv(recv_wr(2, {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 100);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.drop_if([&](const WireRecord& r) { return r.opcode() == op(Opcode::kRcAcknowledge); }, 1);
  const std::int64_t t0 = p.wire.now();
  p.wire.run();
  EXPECT_GE(p.wire.now() - t0, static_cast<std::int64_t>(local_ack_timeout_ns(14)));
  ASSERT_EQ(p.a.send_wcs().size(), 1u);
  EXPECT_EQ(p.b.recv_wcs().size(), 1u);  // delivered once
  EXPECT_EQ(p.qa->counters().timeouts.get(), 1u);
  EXPECT_EQ(p.qb->counters().duplicate_request.get(), 1u);
  EXPECT_EQ(p.qb->counters().acks_sent.get(), 2u);
}

TEST(SoftRcLoss, ARetriedFetchAddIsAnsweredFromTheCacheNotExecutedTwice) {
  Pair p;
  auto* word = reinterpret_cast<std::uint64_t*>(p.b.bytes(64));
  *word = 10;
  Sge ls = p.a.sge(0, 8);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::ATOMIC_FETCH_AND_ADD);
  w.atomic.remote_addr = p.b.addr(64);
  w.atomic.rkey = p.b.mr.rkey;
  w.atomic.compare_add = 1;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.drop_if([&](const WireRecord& r) { return r.opcode() == op(Opcode::kRcAtomicAcknowledge); }, 1);
  p.wire.run();
  EXPECT_EQ(*word, 11u);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(p.a.bytes(0)), 10u);
  EXPECT_EQ(p.qb->counters().atomics_executed.get(), 1u);
  EXPECT_EQ(p.qb->counters().atomics_replayed.get(), 1u);
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
}

TEST(SoftRcLoss, ALostReadResponseIsReRequestedFromTheMissingPsn) {
  Pair p;
  fill(p.b.bytes(0), 8000, 4);
  Sge ls = p.a.sge(0, 8000);
  SendWr w = send_wr(1, {&ls, 1}, WrOpcode::RDMA_READ);
  w.rdma.remote_addr = p.b.addr(0);
  w.rdma.rkey = p.b.mr.rkey;
  ASSERT_TRUE(p.qa->post_send(w).ok());
  p.wire.drop_if([&](const WireRecord& r) { return r.opcode() == op(Opcode::kRcRdmaReadResponseMiddle); }, 1);
  p.wire.run();
  ASSERT_EQ(p.a.send_wcs().size(), 1u);
  EXPECT_EQ(std::memcmp(p.a.bytes(0), p.b.bytes(0), 8000), 0);
  EXPECT_EQ(p.qa->counters().read_resp_gap.get(), 1u);
  EXPECT_EQ(p.qb->counters().reads_replayed.get(), 1u);
  auto req = p.wire.sent_by(p.a.ip);
  ASSERT_GE(req.size(), 2u);
  EXPECT_EQ(req[1]->psn(), 0x101u);  // re-requested from the lost response on
  EXPECT_EQ(req[1]->packet().reth()->va(), p.b.addr(1024));
}

TEST(SoftRcLoss, APeerThatNeverAnswersExhaustsRetryCntThenEverythingIsFlushed) {
  RcOptions o;
  o.retry_cnt = 7;  // seven retries, not infinite
  o.timeout = 10;
  Pair p(QpType::RC, o);
  p.wire.detach(*p.qb);  // the peer is gone
  Sge ss = p.a.sge(0, 64);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(p.qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&ss, 1})).ok());
  p.wire.run(60'000'000'000);
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 3u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(swc[1].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(swc[2].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(p.qa->state(), QpState::ERR);
  EXPECT_EQ(p.qa->counters().timeouts.get(), 8u);  // the first try + 7 retries all timed out
  EXPECT_EQ(p.qa->counters().completer_retry.get(), 7u);
  EXPECT_EQ(p.qa->counters().retry_exceeded.get(), 1u);
  EXPECT_EQ(p.qa->next_deadline_ns(), kNoDeadline);
}

TEST(SoftRcLoss, NoReceivePostedDrawsAnRnrNakThenSucceedsOnceOneIsPosted) {
  RcOptions o;
  o.min_rnr_timer = 14;  // 1.28 ms
  Pair p(QpType::RC, o);
  Sge ss = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run_now();
  p.wire.run(500'000);  // 0.5 ms: at least one RNR NAK, no success
  EXPECT_GE(p.qb->counters().rnr_naks_sent.get(), 1u);
  EXPECT_GE(p.qa->counters().rcvd_rnr_err.get(), 1u);
  EXPECT_TRUE(p.a.send_wcs().empty());
  bool rnr_on_wire = false;
  for (const auto* r : p.wire.sent_by(p.b.ip)) rnr_on_wire = rnr_on_wire || r->syndrome() == (0x20 | 14);
  EXPECT_TRUE(rnr_on_wire);
  Sge rs = p.b.sge(0, 64);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(p.b.recv_wcs().size(), 1u);
}

TEST(SoftRcLoss, RnrRetryExhaustedIsRnrRetryExcErr) {
  RcOptions o;
  o.rnr_retry = 2;
  o.min_rnr_timer = 1;
  Pair p(QpType::RC, o);
  Sge ss = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(p.qb->counters().rnr_naks_sent.get(), 3u);  // the try and two retries
  EXPECT_EQ(p.qa->counters().rnr_retry_exceeded.get(), 1u);
  EXPECT_EQ(p.qa->state(), QpState::ERR);
}

TEST(SoftRcLoss, RnrRetrySevenRetriesForever) {
  RcOptions o;
  o.rnr_retry = 7;
  o.min_rnr_timer = 1;  // 10 µs
  Pair p(QpType::RC, o);
  Sge ss = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, {&ss, 1})).ok());
  p.wire.run(20'000'000);  // 20 ms of virtual time: hundreds of RNR NAKs
  EXPECT_GT(p.qb->counters().rnr_naks_sent.get(), 100u);
  EXPECT_TRUE(p.a.send_wcs().empty());
  EXPECT_EQ(p.qa->state(), QpState::RTS);
  Sge rs = p.b.sge(0, 64);
  ASSERT_TRUE(p.qb->post_recv(recv_wr(1, {&rs, 1})).ok());
  p.wire.run();
  auto swc = p.a.send_wcs();
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::IBV_WC_SUCCESS);
}

TEST(SoftRcLoss, DuplicatedAndReorderedPacketsAreDeliveredExactlyOnce) {
  Pair p;
  Sge rs = p.b.sge(0, 8192);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(p.qb->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rs, 1})).ok());
  Sge ss = p.a.sge(0, 3000);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(p.qa->post_send(send_wr(static_cast<std::uint64_t>(i), {&ss, 1})).ok());
  p.wire.duplicate_if([](const WireRecord& r) { return r.index % 3 == 0; });
  p.wire.reorder_if([](const WireRecord& r) { return r.index == 5; });
  p.wire.run();
  auto rwc = p.b.recv_wcs();
  ASSERT_EQ(rwc.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(rwc[i].wr_id, static_cast<std::uint64_t>(i));
    EXPECT_EQ(rwc[i].status, WcStatus::IBV_WC_SUCCESS);
  }
  EXPECT_EQ(p.a.send_wcs().size(), 8u);
  EXPECT_GE(p.qb->counters().duplicate_request.get(), 1u);
}

TEST(SoftRcLoss, TwentyPercentLossSoakBothDirectionsDeliversEveryMessageOnceInOrder) {
  RcOptions o;
  o.timeout = 8;  // ≈1 ms
  o.retry_cnt = 7;
  Pair p(QpType::RC, o, 2000);
  p.wire.drop_probability(0.2, 0x5eed);
  constexpr int kMsgs = 1500;
  constexpr std::size_t kSlot = 2048;  // each message has its own receive slot
  struct Side {
    Host* tx;
    Host* rx;
    SoftQp* qtx;
    SoftQp* qrx;
  };
  Side sides[2] = {{&p.a, &p.b, p.qa.get(), p.qb.get()}, {&p.b, &p.a, p.qb.get(), p.qa.get()}};
  std::vector<Sge> rsge(2 * kMsgs), ssge(2 * kMsgs);
  const std::size_t send_base = 256 * 1024;
  for (int d = 0; d < 2; ++d) {
    for (int i = 0; i < kMsgs; ++i) {
      const std::size_t slot = static_cast<std::size_t>(i % 100);
      const auto len = static_cast<std::uint32_t>(1 + (i * 37) % 1800);
      rsge[d * kMsgs + i] = sides[d].rx->sge(slot * kSlot, static_cast<std::uint32_t>(kSlot));
      ssge[d * kMsgs + i] = sides[d].tx->sge(send_base + static_cast<std::size_t>(i) * kSlot % (600 * 1024), len);
    }
  }
  // Messages go in rounds of 100 (one receive slot each), checked after each round.
  std::uint64_t delivered[2] = {0, 0};
  for (int round = 0; round < kMsgs / 100; ++round) {
    for (int d = 0; d < 2; ++d) {
      for (int k = 0; k < 100; ++k) {
        const int i = round * 100 + k;
        ASSERT_TRUE(sides[d].qrx->post_recv(recv_wr(static_cast<std::uint64_t>(i), {&rsge[d * kMsgs + i], 1})).ok());
        fill(sides[d].tx->bytes(ssge[d * kMsgs + i].addr - sides[d].tx->addr()), ssge[d * kMsgs + i].length,
             static_cast<std::uint32_t>(i + d * 7919));
        ASSERT_TRUE(sides[d].qtx->post_send(send_wr(static_cast<std::uint64_t>(i), {&ssge[d * kMsgs + i], 1})).ok());
      }
    }
    p.wire.run(10'000'000'000);
    for (int d = 0; d < 2; ++d) {
      auto rwc = sides[d].rx->recv_wcs();
      ASSERT_EQ(rwc.size(), 100u) << "round " << round << " direction " << d;
      for (int k = 0; k < 100; ++k) {
        const int i = round * 100 + k;
        ASSERT_EQ(rwc[k].wr_id, static_cast<std::uint64_t>(i));  // in order, exactly once
        ASSERT_EQ(rwc[k].status, WcStatus::IBV_WC_SUCCESS);
        ASSERT_EQ(rwc[k].byte_len, ssge[d * kMsgs + i].length);
        std::vector<std::uint8_t> want(rwc[k].byte_len);
        fill(want.data(), want.size(), static_cast<std::uint32_t>(i + d * 7919));
        ASSERT_EQ(std::memcmp(sides[d].rx->bytes(static_cast<std::size_t>(k) * kSlot), want.data(), want.size()), 0);
        ++delivered[d];
      }
      auto swc = sides[d].tx->send_wcs();
      ASSERT_EQ(swc.size(), 100u);
      for (const auto& wc : swc) ASSERT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS);
    }
  }
  EXPECT_EQ(delivered[0], static_cast<std::uint64_t>(kMsgs));
  EXPECT_EQ(delivered[1], static_cast<std::uint64_t>(kMsgs));
  EXPECT_GT(p.wire.dropped(), 0u);
  EXPECT_GT(p.qa->counters().completer_retry.get(), 0u);
  EXPECT_GT(p.qb->counters().duplicate_request.get() + p.qa->counters().duplicate_request.get(), 0u);
}

}  // namespace
}  // namespace qpgate::verbs::soft::testing
