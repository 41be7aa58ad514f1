// Issue 3, "Done when": UD multicast from one sender to three receiving
// devices, every one gets every datagram, and a wrong Q_Key is dropped and
// counted. And the fault injector itself (fault.h): off by default, each
// fault counted, the same seed replays the same decisions, tx and rx.
// Real UDP on loopback, 127.62.4x.y and groups 239.62.4x.y.
#include <gtest/gtest.h>

#include <set>

#include "rc_pair.h"  // ms_since
#include "soft_fixture.h"
#include "verbs/soft/fault.h"

namespace qpgate::verbs::soft {
namespace {

using namespace std::chrono_literals;
using test::Node;

struct UdSender {
  UdSender(Node& n, const Gid& dgid) : node(n), qp(n.ud_qp()) {
    AhAttr a;
    a.dgid = dgid;
    auto made = n.pd->create_ah(a);
    EXPECT_TRUE(made.ok());
    if (made.ok()) ah = std::move(*made);
  }
  // Datagram i carries "dg" + its index.
  Status send(std::uint32_t i, std::uint32_t remote_qpn, std::uint32_t qkey = test::kQkey) {
    const std::size_t off = (i % 32) * 64;
    std::snprintf(reinterpret_cast<char*>(node.buffer.data() + off), 64, "dg%06u", i);
    const Sge s = node.sge(off, 8);
    SendWr wr;
    wr.wr_id = i;
    wr.sg_list = std::span<const Sge>(&s, 1);
    wr.ud.ah = ah.get();
    wr.ud.remote_qpn = remote_qpn;
    wr.ud.remote_qkey = qkey;
    auto r = qp->post_send(wr);
    return r.ok() ? Status{} : Status{r.error()};
  }
  Node& node;
  std::unique_ptr<QueuePair> qp;
  std::unique_ptr<AddressHandle> ah;
};

TEST(SoftUdMulticast, OneSenderThreeReceivingDevicesAllGetEveryDatagram) {
  constexpr std::uint32_t kDatagrams = 500;
  constexpr std::uint32_t kPosted = 64;
  Node sender("127.62.40.1");
  Node r1("127.62.40.2"), r2("127.62.40.3"), r3("127.62.40.4");
  ASSERT_TRUE(sender.ok() && r1.ok() && r2.ok() && r3.ok());
  const Gid group = *Gid::parse("239.62.40.1");
  Node* receivers[] = {&r1, &r2, &r3};
  std::vector<std::unique_ptr<QueuePair>> rq;
  for (Node* r : receivers) {
    rq.push_back(r->ud_qp());
    ASSERT_TRUE(rq.back()->attach_mcast(group).ok());
    for (std::uint32_t i = 0; i < kPosted; ++i) r->post_recv(*rq.back(), i, (i % kPosted) * 64, 64);
  }
  // A fourth QP on r3 with another Q_Key: every datagram is dropped there and counted.
  auto wrong = r3.ud_qp(test::kQkey + 1);
  ASSERT_TRUE(wrong->attach_mcast(group).ok());
  r3.post_recv(*wrong, 999, 60000, 64);

  UdSender tx(sender, group);
  std::vector<std::vector<std::uint32_t>> got(3);
  std::uint32_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  // Paced by the slowest receiver, so no receive queue runs dry.
  while (test::ms_since(t0) < 10'000) {
    std::size_t slowest = kDatagrams;
    for (auto& g : got) slowest = std::min(slowest, g.size());
    if (slowest == kDatagrams) break;
    while (sent < kDatagrams && sent < slowest + kPosted / 2) ASSERT_TRUE(tx.send(sent++, kMulticastQpn).ok());
    sender.work();
    for (int k = 0; k < 3; ++k) {
      Node& r = *receivers[k];
      r.work();
      Wc wc[32];
      auto n = r.cq->poll(wc);
      for (std::size_t j = 0; n.ok() && j < *n; ++j) {
        ASSERT_EQ(wc[j].status, WcStatus::IBV_WC_SUCCESS);
        ASSERT_EQ(wc[j].qp_num, rq[k]->qp_num());
        const std::uint8_t* buf = r.buffer.data() + (wc[j].wr_id % kPosted) * 64 + 40;  // after the GRH
        unsigned index = 0;
        ASSERT_EQ(std::sscanf(reinterpret_cast<const char*>(buf), "dg%06u", &index), 1);
        got[k].push_back(index);
        r.post_recv(*rq[k], wc[j].wr_id, (wc[j].wr_id % kPosted) * 64, 64);
      }
    }
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(got[k].size(), kDatagrams) << "receiver " << k;
    std::set<std::uint32_t> distinct(got[k].begin(), got[k].end());
    EXPECT_EQ(distinct.size(), kDatagrams) << "receiver " << k << " got a datagram twice";
  }
  EXPECT_EQ(r3.device->ingress_counters().bad_qkey.get(), kDatagrams);
  Wc none[1];
  EXPECT_EQ(*r3.cq->poll(none), 0u);  // the wrong-Q_Key QP completed nothing
  EXPECT_LT(test::ms_since(t0), 10'000);
}

TEST(SoftUdUnicast, AWrongQkeyIsDroppedAndCounted) {
  Node a("127.62.41.1"), b("127.62.41.2");
  auto rx = b.ud_qp();
  b.post_recv(*rx, 1, 0, 128);
  UdSender tx(a, b.device->gid());
  ASSERT_TRUE(tx.send(0, rx->qp_num(), test::kQkey ^ 0x10).ok());
  ASSERT_TRUE(test::spin_until([&] { return b.device->ingress_counters().bad_qkey.get() == 1; }, [&] {
    a.work();
    b.work();
  }));
  ASSERT_TRUE(tx.send(1, rx->qp_num()).ok());  // the right one still gets through
  auto wcs = b.poll(1, {&a, &b});
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(std::memcmp(b.buffer.data() + 40, "dg000001", 8), 0);
  EXPECT_EQ(b.device->query_port(1)->qkey_viol_cntr, 1u);
}

// ---------------------------------------------------------------- the injector

TEST(SoftFaultInjector, IsOffByDefault) {
  Node a("127.62.42.1");
  std::uint64_t total = 0;
  a.device->fault_counters().for_each([&](std::string_view, std::uint64_t v) { total += v; });
  EXPECT_EQ(total, 0u);
  EXPECT_FALSE(FaultPlan{}.enabled());
}

// Sends n UD datagrams a → b and returns the indices b received, in order.
std::vector<std::uint32_t> send_and_collect(Node& a, Node& b, QueuePair& rx, std::uint32_t n) {
  UdSender tx(a, b.device->gid());
  std::vector<std::uint32_t> got;
  std::uint32_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto idle_since = std::chrono::steady_clock::now();
  while (test::ms_since(t0) < 5000) {
    // Up to 16 ahead of what arrived, or more once nothing moves (drops, corruption).
    const bool stalled = test::ms_since(idle_since) > 5;
    for (int burst = 0; sent < n && (sent < got.size() + 16 || (stalled && burst < 16)); ++burst) {
      EXPECT_TRUE(tx.send(sent++, rx.qp_num()).ok());
      idle_since = std::chrono::steady_clock::now();
    }
    a.work();
    b.work();
    Wc wc[32];
    auto k = b.cq->poll(wc);
    for (std::size_t j = 0; k.ok() && j < *k; ++j) {
      unsigned index = 0;
      std::sscanf(reinterpret_cast<const char*>(b.buffer.data() + (wc[j].wr_id % 64) * 64 + 40), "dg%06u", &index);
      got.push_back(index);
      b.post_recv(rx, wc[j].wr_id, (wc[j].wr_id % 64) * 64, 64);
      idle_since = std::chrono::steady_clock::now();
    }
    // Done when all were sent and nothing arrived for 30 ms (drops never will).
    if (sent == n && test::ms_since(idle_since) > 30) break;
  }
  return got;
}

TEST(SoftFaultInjector, TxDropDuplicateAndReorderAreCountedAndASeedReplaysThem) {
  std::vector<std::uint32_t> runs[2];
  std::uint64_t dropped[2], duplicated[2], reordered[2];
  const char* addrs[2][2] = {{"127.62.43.1", "127.62.43.2"}, {"127.62.44.1", "127.62.44.2"}};
  for (int run = 0; run < 2; ++run) {
    Node a(addrs[run][0]), b(addrs[run][1]);
    auto rx = b.ud_qp();
    for (std::uint64_t i = 0; i < 64; ++i) b.post_recv(*rx, i, i * 64, 64);
    FaultPlan plan;
    plan.seed = 99;
    plan.tx.drop = 0.1;
    plan.tx.duplicate = 0.1;
    plan.tx.reorder = 0.1;
    a.device->inject_faults(plan);
    runs[run] = send_and_collect(a, b, *rx, 400);
    const FaultCounters& c = a.device->fault_counters();
    dropped[run] = c.tx.dropped.get();
    duplicated[run] = c.tx.duplicated.get();
    reordered[run] = c.tx.reordered.get();
    EXPECT_EQ(c.tx.seen.get(), 400u);
    EXPECT_EQ(c.rx.seen.get(), 0u);
    EXPECT_GT(dropped[run], 10u);
    EXPECT_GT(duplicated[run], 10u);
    EXPECT_GT(reordered[run], 10u);
    // What arrived: every datagram not dropped, the duplicated ones twice.
    EXPECT_EQ(runs[run].size(), 400 - dropped[run] + duplicated[run]);
    EXPECT_FALSE(std::is_sorted(runs[run].begin(), runs[run].end()));  // reordered
  }
  EXPECT_EQ(dropped[0], dropped[1]);
  EXPECT_EQ(duplicated[0], duplicated[1]);
  EXPECT_EQ(reordered[0], reordered[1]);
  // The same seed, the same packets, the same outcome: which datagrams were
  // lost and which came twice. (The exact order may differ: a reordered
  // packet also goes when reorder_max_hold_ns passes, and on a loaded host
  // that timing differs from run to run.)
  for (auto& r : runs) std::sort(r.begin(), r.end());
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(SoftFaultInjector, RxCorruptionIsCaughtByTheIcrcAndRxDelayHoldsAPacket) {
  Node a("127.62.45.1"), b("127.62.45.2");
  auto rx = b.ud_qp();
  for (std::uint64_t i = 0; i < 64; ++i) b.post_recv(*rx, i, i * 64, 64);
  FaultPlan plan;
  plan.rx.corrupt = 1.0;
  b.device->inject_faults(plan);
  auto got = send_and_collect(a, b, *rx, 50);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(b.device->fault_counters().rx.corrupted.get(), 50u);
  std::uint64_t rejected = 0;
  for (std::size_t e = 0; e < wire::kDecodeErrorCount; ++e) rejected += b.device->wire_counters().rejected[e].get();
  EXPECT_EQ(rejected, 50u);
  EXPECT_GT(b.device->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 40u);

  // Delay: 20 ms on receive; the datagram comes, but not before.
  FaultPlan delay;
  delay.rx.delay = 1.0;
  delay.delay_ns = 20'000'000;
  b.device->inject_faults(delay);
  UdSender tx(a, b.device->gid());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(tx.send(7, rx->qp_num()).ok());
  std::int64_t deadline = 0;
  ASSERT_TRUE(test::spin_until([&] { return b.device->fault_counters().rx.delayed.get() == 1; }, [&] {
    a.work();
    b.device->do_work(test::now_ns(), &deadline);
  }));
  EXPECT_LE(deadline, test::now_ns() + 20'000'000);  // the held packet is a deadline of the device
  auto wcs = b.poll(1, {&a, &b}, 1000);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_GE(test::ms_since(t0), 19);
  b.device->inject_faults(FaultPlan{});  // off again
}

TEST(SoftFaultInjector, AnOpcodeFilterAndABudgetLimitWhichPacketsAreHit) {
  Node a("127.62.46.1"), b("127.62.46.2");
  auto rx = b.ud_qp();
  for (std::uint64_t i = 0; i < 64; ++i) b.post_recv(*rx, i, i * 64, 64);
  FaultPlan plan;
  plan.tx.drop = 1.0;
  plan.max_faults = 3;
  plan.opcodes = {0x64};  // UD SEND_ONLY
  a.device->inject_faults(plan);
  auto got = send_and_collect(a, b, *rx, 10);
  EXPECT_EQ(got, (std::vector<std::uint32_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(a.device->fault_counters().tx.dropped.get(), 3u);
  plan.opcodes = {0x11};  // RC ACKNOWLEDGE: no UD packet matches
  a.device->inject_faults(plan);
  got = send_and_collect(a, b, *rx, 5);
  EXPECT_EQ(got.size(), 5u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
