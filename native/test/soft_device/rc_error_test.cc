// Issue 3, "Done when": the RC error paths over real UDP (127.62.2x.y).
//  - a peer that stops answering: the requester exhausts retry_cnt, the
//    first WR completes IBV_WC_RETRY_EXC_ERR, the QP is in ERR and the
//    other outstanding WRs flush with IBV_WC_WR_FLUSH_ERR;
//  - no posted receive: RNR NAKs; rnr_retry exhausted →
//    IBV_WC_RNR_RETRY_EXC_ERR; rnr_retry = 7 retries for ever (until a
//    receive is posted, then the SEND succeeds);
//  - a bad rkey, an out-of-bounds address, a region without the access:
//    NAK remote access error, IBV_WC_REM_ACCESS_ERR at the requester, both
//    QPs in ERR, and not a byte outside the region (nor in it) changed.
//  - a requester that did not run for longer than its ACK timeout (parked,
//    or descheduled on a busy host) while the ACK arrived: the ACK is
//    progress, not a timeout (with retry_cnt = 0 a timeout would end the QP).
// Local ACK timeout 10 (≈ 4.2 ms); every case asserts a wall-time bound.
#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

#include "rc_pair.h"
#include "verbs/soft/fault.h"

namespace qpgate::verbs::soft {
namespace {

using namespace std::chrono_literals;
using test::Endpoint;
using test::RcOptions;
using test::RcPair;
using test::send_wr;

TEST(SoftRcErrors, APeerThatStopsAnsweringExhaustsRetryCntAndFlushesTheRest) {
  RcOptions o;
  o.timeout = 10;
  o.retry_cnt = 3;
  RcPair p("127.62.20.1", "127.62.20.2", 1 << 16, o);
  ASSERT_TRUE(p.ok());
  // A first message gets through: the connection works.
  ASSERT_TRUE(p.b.post_recv(*p.qb, 1, 0, 4096).ok());
  const Sge s100 = p.a.sge(0, 100);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, s100)).ok());
  ASSERT_EQ(p.poll(p.a, 1, 2000ms).size(), 1u);
  // On a loaded machine that ACK may come after the 4.2 ms timeout: the
  // retransmission it then costs is not part of what is counted below.
  const auto& c = p.a.soft(*p.qa).counters();
  const std::uint64_t timeouts_before = c.timeouts.get();
  // Then B goes silent: everything it receives is lost.
  FaultPlan silent;
  silent.rx.drop = 1.0;
  p.b.device->inject_faults(silent);
  const auto t0 = std::chrono::steady_clock::now();
  const Sge s3000 = p.a.sge(0, 3000);
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(p.qa->post_send(send_wr(10 + i, s3000)).ok());
  auto wcs = p.poll(p.a, 4, 3000ms);
  const auto elapsed = test::ms_since(t0);
  ASSERT_EQ(wcs.size(), 4u);
  EXPECT_EQ(wcs[0].wr_id, 10u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_RETRY_EXC_ERR) << wc_status_name(wcs[0].status);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(wcs[i].wr_id, 10u + static_cast<std::uint64_t>(i));
    EXPECT_EQ(wcs[i].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  }
  EXPECT_EQ(p.qa->state(), QpState::ERR);
  EXPECT_EQ(c.timeouts.get() - timeouts_before, 4u);  // the first try and retry_cnt = 3 retries
  EXPECT_EQ(c.retry_exceeded.get(), 1u);
  // 4 timeouts of ≈ 4.2 ms: well under a second even on a loaded machine.
  EXPECT_GE(elapsed, 16);
  EXPECT_LT(elapsed, 1000);
}

// Waits until one of the endpoint's receive sockets holds a datagram.
bool wait_readable(const Endpoint& e, std::chrono::milliseconds limit) {
  std::vector<pollfd> fds;
  for (int fd : e.device->receive_fds()) fds.push_back(pollfd{fd, POLLIN, 0});
  return ::poll(fds.data(), fds.size(), static_cast<int>(limit.count())) > 0;
}

TEST(SoftRcErrors, AnAckThatArrivedWhileTheRequesterDidNotRunIsProgressNotATimeout) {
  RcOptions o;
  o.timeout = 10;  // ≈ 4.2 ms
  o.retry_cnt = 0;  // one counted timeout would end the QP with RETRY_EXC
  RcPair p("127.62.20.7", "127.62.20.8", 1 << 16, o);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p.b.post_recv(*p.qb, 1, 0, 4096).ok());
  const Sge s100 = p.a.sge(0, 100);
  ASSERT_TRUE(p.qa->post_send(send_wr(7, s100)).ok());
  p.a.work();  // the SEND leaves; A's ACK timer runs from now
  // B receives it and its ACK leaves (queued by the receive, sent by the
  // next pass's flush); B's receive completes.
  ASSERT_TRUE(wait_readable(p.b, 1000ms));
  for (int i = 0; i < 3; ++i) p.b.work();
  Wc wc[4];
  auto got = p.b.cq->poll(std::span<Wc>(wc, 4));
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(*got, 1u);
  ASSERT_TRUE(wait_readable(p.a, 1000ms));
  // A does not run past its ACK timeout: the ACK waits in its socket.
  std::this_thread::sleep_for(20ms);
  p.a.work();
  got = p.a.cq->poll(std::span<Wc>(wc, 4));
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(*got, 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].status, WcStatus::IBV_WC_SUCCESS) << wc_status_name(wc[0].status);
  const auto& c = p.a.soft(*p.qa).counters();
  EXPECT_EQ(c.timeouts.get(), 0u);
  EXPECT_EQ(c.completer_retry.get(), 0u);
  EXPECT_EQ(p.qa->state(), QpState::RTS);
}

TEST(SoftRcErrors, NoPostedReceiveDrawsRnrNaksUntilRnrRetryIsExhausted) {
  RcOptions o;
  o.timeout = 10;
  o.rnr_retry = 2;
  o.min_rnr_timer = 1;  // 0.01 ms
  RcPair p("127.62.21.1", "127.62.21.2", 1 << 16, o);
  ASSERT_TRUE(p.ok());
  const auto t0 = std::chrono::steady_clock::now();
  const Sge s64 = p.a.sge(0, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, s64)).ok());
  ASSERT_TRUE(p.qa->post_send(send_wr(2, s64)).ok());
  auto wcs = p.poll(p.a, 2, 2000ms);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_RNR_RETRY_EXC_ERR) << wc_status_name(wcs[0].status);
  EXPECT_EQ(wcs[1].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(p.qa->state(), QpState::ERR);
  // The requester gives up at its third RNR NAK (the first try and 2
  // retries). The responder may have NAKed one more: a resend the ACK timer
  // made while a NAK was on its way (a loaded machine stretches the 4 ms).
  EXPECT_GE(p.b.soft(*p.qb).counters().rnr_naks_sent.get(), 3u);
  EXPECT_EQ(p.a.soft(*p.qa).counters().rcvd_rnr_err.get(), 3u);
  EXPECT_EQ(p.a.soft(*p.qa).counters().rnr_retry_exceeded.get(), 1u);
  EXPECT_LT(test::ms_since(t0), 1000);
}

TEST(SoftRcErrors, RnrRetrySevenRetriesForEverUntilAReceiveIsPosted) {
  RcOptions o;
  o.timeout = 10;
  o.rnr_retry = 7;
  o.min_rnr_timer = 1;
  RcPair p("127.62.22.1", "127.62.22.2", 1 << 16, o);
  ASSERT_TRUE(p.ok());
  std::memcpy(p.a.at(0), "patience", 8);
  const Sge s8 = p.a.sge(0, 8);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, s8)).ok());
  // 300 ms without a receive: far more RNR NAKs than any finite rnr_retry (6) allows.
  auto wcs = p.poll(p.a, 1, 300ms);
  EXPECT_TRUE(wcs.empty());
  EXPECT_EQ(p.qa->state(), QpState::RTS);
  const std::uint64_t naks = p.b.soft(*p.qb).counters().rnr_naks_sent.get();
  EXPECT_GT(naks, 6u);
  ASSERT_TRUE(p.b.post_recv(*p.qb, 77, 1024, 64).ok());
  const auto t0 = std::chrono::steady_clock::now();
  wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_LT(test::ms_since(t0), 500);
  auto rx = p.poll(p.b, 1, 1000ms);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].wr_id, 77u);
  EXPECT_EQ(std::memcmp(p.b.at(1024), "patience", 8), 0);
}

// The target region is the middle of B's buffer with guard bytes on both
// sides; a failing access must leave every byte of the buffer as it was.
struct AccessCase {
  const char* name;
  const char* addr_a;
  const char* addr_b;
  WrOpcode op;
  AccessFlags mr_access;  // of the target region
  std::int64_t offset;    // of the remote address from the region's start
  std::uint32_t length;
  bool bad_rkey;
};

class SoftRcRemoteAccess : public ::testing::TestWithParam<AccessCase> {};

TEST_P(SoftRcRemoteAccess, ARemoteAccessErrorIsNakedBothQpsEndInErrAndNoByteChanges) {
  const AccessCase& c = GetParam();
  constexpr std::size_t kGuard = 4096;
  constexpr std::size_t kRegion = 8192;
  RcOptions o;
  o.timeout = 10;
  RcPair p(c.addr_a, c.addr_b, 1 << 16, o);
  ASSERT_TRUE(p.ok());
  for (std::size_t i = 0; i < p.a.buffer.size(); ++i) p.a.buffer[i] = static_cast<std::uint8_t>(i * 13 + 1);
  std::fill(p.b.buffer.begin(), p.b.buffer.end(), 0xA5);  // guards and region alike
  auto region = p.b.pd->reg_mr(p.b.at(kGuard), kRegion, c.mr_access);
  ASSERT_TRUE(region.ok()) << region.error().message;
  const std::vector<std::uint8_t> before = p.b.buffer;
  const std::uint64_t remote = (*region)->addr() + static_cast<std::uint64_t>(c.offset);
  const std::uint32_t rkey = c.bad_rkey ? (*region)->rkey() ^ 0x5a5a00 : (*region)->rkey();
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = c.op;
  wr.send_flags = SendFlag::SIGNALED;
  const Sge s = p.a.sge(0, c.length);
  wr.sg_list = std::span<const Sge>(&s, 1);
  if (c.op == WrOpcode::ATOMIC_FETCH_AND_ADD) {
    wr.atomic.remote_addr = remote;
    wr.atomic.rkey = rkey;
    wr.atomic.compare_add = 1;
  } else {
    wr.rdma.remote_addr = remote;
    wr.rdma.rkey = rkey;
  }
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.qa->post_send(wr).ok());
  const Sge s8 = p.a.sge(0, 8);
  ASSERT_TRUE(p.qa->post_send(send_wr(10, s8)).ok());  // behind it: flushed
  auto wcs = p.poll(p.a, 2, 2000ms);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 9u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_REM_ACCESS_ERR) << wc_status_name(wcs[0].status);
  EXPECT_EQ(wcs[1].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_LT(test::ms_since(t0), 500);  // a NAK, not a timeout
  // Both ends are in ERR (a class C error), the responder said why.
  test::spin_until([&] { return p.qb->state() == QpState::ERR; }, [&] { p.work(); }, 500ms);
  EXPECT_EQ(p.qa->state(), QpState::ERR);
  EXPECT_EQ(p.qb->state(), QpState::ERR);
  EXPECT_EQ(p.b.soft(*p.qb).counters().naks_sent_rem_access.get(), 1u);
  EXPECT_EQ(p.a.soft(*p.qa).counters().rcvd_nak_rem_access.get(), 1u);
  bool access_event = false;
  while (auto ev = p.b.device->get_async_event()) access_event |= ev->event_type == EventType::QP_ACCESS_ERR;
  EXPECT_TRUE(access_event);
  // No byte of B's buffer changed: guards, region, everything.
  EXPECT_TRUE(p.b.buffer == before);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SoftRcRemoteAccess,
    ::testing::Values(
        AccessCase{"write_bad_rkey", "127.62.23.1", "127.62.23.2", WrOpcode::RDMA_WRITE, kAllAccess, 0, 100, true},
        // Starts inside, ends 1 byte past the region (3 packets at MTU 1024).
        AccessCase{"write_past_the_end", "127.62.24.1", "127.62.24.2", WrOpcode::RDMA_WRITE, kAllAccess, 8192 - 3000,
                   3001, false},
        AccessCase{"write_before_the_start", "127.62.25.1", "127.62.25.2", WrOpcode::RDMA_WRITE, kAllAccess, -8, 16,
                   false},
        AccessCase{"write_without_remote_write", "127.62.26.1", "127.62.26.2", WrOpcode::RDMA_WRITE,
                   Access::LOCAL_WRITE | Access::REMOTE_READ, 0, 64, false},
        AccessCase{"read_without_remote_read", "127.62.27.1", "127.62.27.2", WrOpcode::RDMA_READ,
                   Access::LOCAL_WRITE | Access::REMOTE_WRITE, 0, 64, false},
        AccessCase{"read_past_the_end", "127.62.28.1", "127.62.28.2", WrOpcode::RDMA_READ, kAllAccess, 8000, 200,
                   false},
        AccessCase{"atomic_past_the_end", "127.62.29.1", "127.62.29.2", WrOpcode::ATOMIC_FETCH_AND_ADD, kAllAccess,
                   8192, 8, false},
        AccessCase{"atomic_without_remote_atomic", "127.62.30.1", "127.62.30.2", WrOpcode::ATOMIC_FETCH_AND_ADD,
                   Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ, 0, 8, false}),
    [](const ::testing::TestParamInfo<AccessCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace qpgate::verbs::soft
