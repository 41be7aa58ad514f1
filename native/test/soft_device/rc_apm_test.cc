// Automatic path migration of RC QPs over real UDP (issue 17 item 1;
// native/src/verbs/soft/soft_apm.cc): two soft devices with two addresses
// each (127.62.4x.y), every QP's primary path between the .40 addresses and
// its alternate between the .41 ones. A path "goes down" when the fault
// injector drops everything leaving from and arriving at one local address.
//  - ARMED, the primary path fails: the requester exhausts retry_cnt there,
//    moves to the alternate path, resends from the oldest unacknowledged PSN,
//    nothing is lost or delivered twice; the responder follows on the first
//    packet with MigReq = 1; both raise IBV_EVENT_PATH_MIG and report MIGRATED
//    with the alternate path as their ah_attr;
//  - re-arming: RTS→RTS with a new ALT_PATH and REARM is ARMED again, and a
//    second failure migrates back; REARM without an alternate path is EINVAL;
//  - both paths fail: IBV_EVENT_PATH_MIG_ERR, IBV_WC_RETRY_EXC_ERR, ERR;
//  - sends in flight both ways at the cut: the side that follows the other's
//    migration resends on the new path with a whole retry_cnt, so neither
//    side's retries spent on the dead path fail it.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "rc_pair.h"
#include "verbs/soft/fault.h"

namespace qpgate::verbs::soft {
namespace {

using namespace std::chrono_literals;
using test::Endpoint;
using test::RcOptions;
using test::send_wr;

using test::gid_of;

// RTS→RTS: load `peer` (our GID index 1 → the peer's address) as the
// alternate path and arm it.
Status arm(QueuePair& qp, const char* peer, std::uint8_t sgid_index = 1) {
  QpAttr a;
  a.alt_ah_attr.dgid = gid_of(peer);
  a.alt_ah_attr.sgid_index = sgid_index;
  a.alt_port_num = 1;
  a.alt_timeout = 10;
  a.path_mig_state = MigState::REARM;
  return qp.modify(a, QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE);
}

// The link of `local` goes down: nothing leaves from it or arrives at it.
void link_down(Endpoint& e, const char* local) {
  FaultPlan p;
  p.tx.drop = 1.0;
  p.rx.drop = 1.0;
  p.local_address = ip_from_gid(gid_of(local));
  e.device->inject_faults(p);
}

std::optional<EventType> next_qp_event(SoftDevice& d) {
  while (auto ev = d.get_async_event()) {
    if (ev->event_type == EventType::PATH_MIG || ev->event_type == EventType::PATH_MIG_ERR) return ev->event_type;
  }
  return std::nullopt;
}

// Two dual-homed endpoints (127.62.40.n and .41.n, 127.62.40.n+1 and
// .41.n+1), one RC QP each, connected on the .40 addresses and armed with
// the .41 ones.
struct ApmPair {
  ApmPair(int n, const RcOptions& o)
      : a1(address(40, n)), a2(address(41, n)), b1(address(40, n + 1)), b2(address(41, n + 1)),
        rc(a1.c_str(), b1.c_str(), 1 << 16, o, 1024, a2.c_str(), b2.c_str()),
        a(rc.a),
        b(rc.b),
        qa(rc.qa),
        qb(rc.qb) {
    if (!rc.ok()) return;
    EXPECT_TRUE(arm(*qa, b2.c_str()).ok());
    EXPECT_TRUE(arm(*qb, a2.c_str()).ok());
  }
  static std::string address(int third, int fourth) {
    return "127.62." + std::to_string(third) + "." + std::to_string(fourth);
  }
  std::vector<Wc> poll(Endpoint& e, std::size_t n, std::chrono::milliseconds timeout) { return rc.poll(e, n, timeout); }

  std::string a1, a2, b1, b2;
  test::RcPair rc;
  Endpoint& a;
  Endpoint& b;
  std::unique_ptr<QueuePair>& qa;
  std::unique_ptr<QueuePair>& qb;
};

RcOptions apm_options() {
  RcOptions o;
  o.timeout = 10;  // ≈ 4.2 ms
  o.retry_cnt = 3;
  return o;
}

TEST(SoftRcApm, AnArmedQpMovesToTheAlternatePathWhenThePrimaryFails) {
  ApmPair p(1, apm_options());
  ASSERT_TRUE(p.qa && p.qb);
  EXPECT_EQ(p.qa->query()->path_mig_state, MigState::ARMED);
  for (std::uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(p.b.post_recv(*p.qb, 100 + i, i * 1024, 1024).ok());
  for (std::size_t i = 0; i < 8; ++i) std::memset(p.a.at(8192 + i * 1024), static_cast<int>('a' + i), 1000);
  const Sge first = p.a.sge(8192, 1000);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, first)).ok());
  ASSERT_EQ(p.poll(p.a, 1, 2000ms).size(), 1u);
  // The primary link goes down on both sides; four more messages are posted.
  link_down(p.a, p.a1.c_str());
  link_down(p.b, p.b1.c_str());
  std::vector<Sge> sges;
  for (std::size_t i = 1; i < 8; ++i) sges.push_back(p.a.sge(8192 + i * 1024, 1000));
  for (std::size_t i = 0; i < sges.size(); ++i) ASSERT_TRUE(p.qa->post_send(send_wr(2 + i, sges[i])).ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto wcs = p.poll(p.a, sges.size(), 3000ms);
  ASSERT_EQ(wcs.size(), sges.size());
  for (std::size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].status, WcStatus::IBV_WC_SUCCESS) << wc_status_name(wcs[i].status);
    EXPECT_EQ(wcs[i].wr_id, 2 + i);
  }
  // 4 timeouts of ≈ 4.2 ms on the primary path, then the alternate answers.
  EXPECT_LT(test::ms_since(t0), 1000);
  auto rwcs = p.poll(p.b, 8, 1000ms);
  ASSERT_EQ(rwcs.size(), 8u);  // each message received once, in order
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(rwcs[i].wr_id, 100 + i);
    EXPECT_EQ(rwcs[i].byte_len, 1000u);
    EXPECT_EQ(p.b.at(i * 1024)[999], static_cast<std::uint8_t>('a' + i));
  }
  for (auto* e : {&p.a, &p.b}) {
    auto* qp = e == &p.a ? p.qa.get() : p.qb.get();
    const QpAttr q = *qp->query();
    EXPECT_EQ(q.path_mig_state, MigState::MIGRATED);
    EXPECT_EQ(q.ah_attr.sgid_index, 1);  // the alternate path is the primary now
    EXPECT_EQ(q.qp_state, QpState::RTS);
    EXPECT_EQ(e->soft(*qp).counters().path_migrations.get(), 1u);
    EXPECT_EQ(next_qp_event(*e->device), EventType::PATH_MIG);
  }
  EXPECT_EQ(p.a.soft(*p.qa).counters().retry_exceeded.get(), 0u);
  // A resend the ACK timer made on a loaded machine is a duplicate the
  // responder drops: still nothing is delivered twice.
  EXPECT_TRUE(p.poll(p.b, 1, 50ms).empty());
}

TEST(SoftRcApm, RearmingWithANewAlternatePathMigratesAgainOnTheNextFailure) {
  ApmPair p(3, apm_options());
  ASSERT_TRUE(p.qa && p.qb);
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(p.b.post_recv(*p.qb, 100 + i, i * 1024, 1024).ok());
  const Sge s = p.a.sge(8192, 64);
  link_down(p.a, p.a1.c_str());
  link_down(p.b, p.b1.c_str());
  ASSERT_TRUE(p.qa->post_send(send_wr(1, s)).ok());
  auto wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  ASSERT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS);
  // MIGRATED: the migration used the alternate path; REARM alone is refused.
  QpAttr rearm;
  rearm.path_mig_state = MigState::REARM;
  const Status refused = p.qa->modify(rearm, QpAttrMaskFlags(QpAttrMask::PATH_MIG_STATE));
  EXPECT_EQ(refused.code(), EINVAL);
  EXPECT_NE(refused.message().find("needs an alternate path"), std::string::npos) << refused.message();
  // The first link is back: it is the new alternate path (GID index 0).
  p.a.device->inject_faults(FaultPlan{});
  p.b.device->inject_faults(FaultPlan{});
  ASSERT_TRUE(arm(*p.qa, p.b1.c_str(), 0).ok());
  ASSERT_TRUE(arm(*p.qb, p.a1.c_str(), 0).ok());
  EXPECT_EQ(p.qa->query()->path_mig_state, MigState::ARMED);
  link_down(p.a, p.a2.c_str());
  link_down(p.b, p.b2.c_str());
  ASSERT_TRUE(p.qa->post_send(send_wr(2, s)).ok());
  wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS) << wc_status_name(wcs[0].status);
  EXPECT_EQ(p.qa->query()->ah_attr.sgid_index, 0);
  EXPECT_EQ(p.a.soft(*p.qa).counters().path_migrations.get(), 2u);
  EXPECT_EQ(p.b.soft(*p.qb).counters().path_migrations.get(), 2u);
  EXPECT_EQ(p.poll(p.b, 2, 1000ms).size(), 2u);
}

TEST(SoftRcApm, WhenTheAlternatePathFailsTooTheQpReportsPathMigErrAndRetryExceeded) {
  ApmPair p(5, apm_options());
  ASSERT_TRUE(p.qa && p.qb);
  ASSERT_TRUE(p.b.post_recv(*p.qb, 100, 0, 1024).ok());
  FaultPlan silent;  // B hears nothing on either path
  silent.rx.drop = 1.0;
  p.b.device->inject_faults(silent);
  const Sge s = p.a.sge(8192, 64);
  ASSERT_TRUE(p.qa->post_send(send_wr(1, s)).ok());
  ASSERT_TRUE(p.qa->post_send(send_wr(2, s)).ok());
  auto wcs = p.poll(p.a, 2, 3000ms);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_RETRY_EXC_ERR) << wc_status_name(wcs[0].status);
  EXPECT_EQ(wcs[1].status, WcStatus::IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(p.qa->state(), QpState::ERR);
  const auto& c = p.a.soft(*p.qa).counters();
  EXPECT_EQ(c.path_migrations.get(), 1u);
  EXPECT_EQ(c.retry_exceeded.get(), 1u);
  EXPECT_EQ(c.timeouts.get(), 8u);  // retry_cnt = 3 on each path: the first try and 3 retries, twice
  EXPECT_EQ(next_qp_event(*p.a.device), EventType::PATH_MIG);
  EXPECT_EQ(next_qp_event(*p.a.device), EventType::PATH_MIG_ERR);
}

// Both sides send when the primary link goes down, B 2 ms after A. A runs
// out of retries first and migrates; B, most of its own retries spent on the
// dead path, follows on A's first packet with MigReq. Before B resent its
// requests on the new path with a whole retry_cnt at that moment, its next
// timeout found the budget spent and failed the QP (8 runs in 8).
TEST(SoftRcApm, WithSendsInFlightBothWaysTheFollowerResendsOnTheNewPathAndLosesNothing) {
  ApmPair p(9, apm_options());
  ASSERT_TRUE(p.qa && p.qb);
  constexpr std::uint64_t kMessages = 4;
  for (std::uint64_t i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(p.a.post_recv(*p.qa, 200 + i, i * 1024, 1024).ok());
    ASSERT_TRUE(p.b.post_recv(*p.qb, 100 + i, i * 1024, 1024).ok());
    std::memset(p.a.at(8192 + i * 1024), static_cast<int>('a' + i), 500);
    std::memset(p.b.at(8192 + i * 1024), static_cast<int>('A' + i), 500);
  }
  link_down(p.a, p.a1.c_str());
  link_down(p.b, p.b1.c_str());
  for (std::uint64_t i = 0; i < kMessages; ++i) ASSERT_TRUE(p.qa->post_send(send_wr(1 + i, p.a.sge(8192 + i * 1024, 500))).ok());
  // Both devices driven meanwhile, so A's sends go out and its ACK timer
  // starts 2 ms before B's (a device does nothing between work() calls).
  for (const auto until = std::chrono::steady_clock::now() + 2ms; std::chrono::steady_clock::now() < until;) p.rc.work();
  for (std::uint64_t i = 0; i < kMessages; ++i) ASSERT_TRUE(p.qb->post_send(send_wr(11 + i, p.b.sge(8192 + i * 1024, 500))).ok());
  // Each side's CQ holds its sends' completions and the other's messages.
  for (auto* e : {&p.a, &p.b}) {
    const bool is_a = e == &p.a;
    auto wcs = p.poll(*e, 2 * kMessages, 3000ms);
    ASSERT_EQ(wcs.size(), 2 * kMessages) << (is_a ? "A" : "B");
    std::uint64_t sends = 0;
    std::uint64_t recvs = 0;
    for (const Wc& wc : wcs) {
      ASSERT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS) << (is_a ? "A: " : "B: ") << wc_status_name(wc.status);
      if (wc_opcode_is_recv(wc.opcode)) {
        EXPECT_EQ(wc.wr_id, (is_a ? 200u : 100u) + recvs);  // in order, each once
        EXPECT_EQ(e->at(recvs * 1024)[499], static_cast<std::uint8_t>((is_a ? 'A' : 'a') + recvs));
        ++recvs;
      } else {
        EXPECT_EQ(wc.wr_id, (is_a ? 1u : 11u) + sends);
        ++sends;
      }
    }
    EXPECT_EQ(sends, kMessages);
    EXPECT_EQ(recvs, kMessages);
    auto* qp = is_a ? p.qa.get() : p.qb.get();
    EXPECT_EQ(qp->query()->path_mig_state, MigState::MIGRATED);
    EXPECT_EQ(qp->query()->qp_state, QpState::RTS);
    EXPECT_EQ(e->soft(*qp).counters().path_migrations.get(), 1u);
    EXPECT_EQ(e->soft(*qp).counters().retry_exceeded.get(), 0u);
  }
  EXPECT_TRUE(p.poll(p.a, 1, 50ms).empty());  // nothing delivered twice
  EXPECT_TRUE(p.poll(p.b, 1, 50ms).empty());
}

TEST(SoftRcApm, AlternatePathAttributesAreCheckedAndReported) {
  ApmPair p(7, apm_options());
  ASSERT_TRUE(p.qa && p.qb);
  const QpAttr q = *p.qa->query();
  EXPECT_EQ(q.alt_ah_attr.dgid, gid_of(p.b2.c_str()));
  EXPECT_EQ(q.alt_ah_attr.sgid_index, 1);
  EXPECT_EQ(q.alt_timeout, 10);
  QpAttr bad;
  bad.alt_ah_attr.dgid = gid_of(p.b2.c_str());
  bad.alt_ah_attr.sgid_index = 2;  // the table has the two addresses
  bad.alt_port_num = 1;
  Status s = p.qa->modify(bad, QpAttrMaskFlags(QpAttrMask::ALT_PATH));
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_EQ(s.message(), "IBV_QP_ALT_PATH: alt_ah_attr.sgid_index 2 is out of range 0..1");
  bad.alt_ah_attr.sgid_index = 1;
  bad.alt_port_num = 2;
  EXPECT_EQ(p.qa->modify(bad, QpAttrMaskFlags(QpAttrMask::ALT_PATH)).code(), EINVAL);
  // A device with one address has one GID: an alternate path on index 1 is refused.
  Endpoint single("127.62.42.1", 4096);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single.device->query_gid_table(1)->size(), 1u);
  EXPECT_EQ(p.a.device->query_gid_table(1)->size(), 2u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
