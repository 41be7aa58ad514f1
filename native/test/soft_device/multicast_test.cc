// UD multicast over loopback: QPs of two devices attached to 239.61.x.y
// each get exactly one copy (a QP attached twice too); a QP whose Q_Key
// differs drops it and counts it; detaching the last QP leaves the group.
#include <gtest/gtest.h>

#include <set>

#include "soft_fixture.h"
#include "verbs/soft/mcast_table.h"

namespace qpgate::verbs::soft {
namespace {

using test::ip;
using test::Node;

Gid mgid(const char* group) { return *Gid::parse(group); }

std::size_t drain_count(Node& n, std::vector<Wc>& into) {
  Wc wc[32];
  auto got = n.cq->poll(wc);
  if (got.ok()) into.insert(into.end(), wc, wc + *got);
  return into.size();
}

TEST(SoftMulticast, EveryAttachedQpInTwoDevicesGetsOneCopyAndAWrongQkeyIsDropped) {
  Node sender("127.61.40.1");
  Node a("127.61.40.2");
  Node b("127.61.40.3");
  ASSERT_TRUE(sender.ok() && a.ok() && b.ok());
  const Gid group = mgid("239.61.40.1");
  auto a1 = a.ud_qp();
  auto a2 = a.ud_qp();
  auto b1 = b.ud_qp();
  auto b_wrong = b.ud_qp(test::kQkey + 1);
  for (auto* qp : {a1.get(), a2.get()}) ASSERT_TRUE(qp->attach_mcast(group).ok());
  ASSERT_TRUE(a1->attach_mcast(group).ok());  // twice: still one copy
  ASSERT_TRUE(b1->attach_mcast(group).ok());
  ASSERT_TRUE(b_wrong->attach_mcast(group).ok());
  EXPECT_EQ(a.device->group_refs(ip("239.61.40.1")), 1u);  // one membership for the device
  for (int i = 0; i < 4; ++i) {
    a.post_recv(*a1, 100 + static_cast<std::uint64_t>(i), 0, 1024);
    a.post_recv(*a2, 200 + static_cast<std::uint64_t>(i), 1024, 1024);
    b.post_recv(*b1, 300 + static_cast<std::uint64_t>(i), 0, 1024);
    b.post_recv(*b_wrong, 400 + static_cast<std::uint64_t>(i), 1024, 1024);
  }

  auto tx = sender.ud_qp();
  AhAttr ah_attr;
  ah_attr.dgid = group;
  auto ah = sender.pd->create_ah(ah_attr);
  ASSERT_TRUE(ah.ok()) << ah.error().message;
  std::memcpy(sender.buffer.data(), "frame", 5);
  const Sge s = sender.sge(0, 5);
  SendWr wr;
  wr.wr_id = 1;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = kMulticastQpn;
  wr.ud.remote_qkey = test::kQkey;
  wr.send_flags = SendFlag::SIGNALED;
  ASSERT_TRUE(tx->post_send(wr).ok());

  std::vector<Wc> at_a, at_b;
  test::spin_until([&] { return at_a.size() >= 2 && at_b.size() >= 1; }, [&] {
    sender.work();
    a.work();
    b.work();
    drain_count(a, at_a);
    drain_count(b, at_b);
  });
  // Give stray duplicates a chance to show up.
  for (int i = 0; i < 20; ++i) {
    a.work();
    b.work();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  drain_count(a, at_a);
  drain_count(b, at_b);
  ASSERT_EQ(at_a.size(), 2u);
  ASSERT_EQ(at_b.size(), 1u);
  std::set<std::uint32_t> qps_a{at_a[0].qp_num, at_a[1].qp_num};
  EXPECT_EQ(qps_a, (std::set<std::uint32_t>{a1->qp_num(), a2->qp_num()}));
  EXPECT_EQ(at_b[0].qp_num, b1->qp_num());
  for (const Wc& wc : at_a) {
    EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS);
    EXPECT_EQ(wc.src_qp, tx->qp_num());
    EXPECT_EQ(wc.byte_len, 45u);
  }
  EXPECT_EQ(b.device->ingress_counters().bad_qkey.get(), 1u);
  EXPECT_EQ(a.device->ingress_counters().delivered.get(), 2u);
  EXPECT_EQ(std::memcmp(a.buffer.data() + 40, "frame", 5), 0);
}

TEST(SoftMulticast, DetachingTheLastQpLeavesTheGroupAndItsSocket) {
  Node a("127.61.41.2");
  const Gid group = mgid("239.61.41.1");
  auto q1 = a.ud_qp();
  auto q2 = a.ud_qp();
  const std::size_t fds_before = a.device->receive_fds().size();
  ASSERT_TRUE(q1->attach_mcast(group).ok());
  ASSERT_TRUE(q2->attach_mcast(group).ok());
  EXPECT_EQ(a.device->receive_fds().size(), fds_before + 1);
  ASSERT_TRUE(q1->detach_mcast(group).ok());
  EXPECT_EQ(a.device->group_refs(ip("239.61.41.1")), 1u);
  q2.reset();  // destroying the QP detaches it
  EXPECT_EQ(a.device->group_refs(ip("239.61.41.1")), 0u);
  EXPECT_EQ(a.device->receive_fds().size(), fds_before);
}

TEST(SoftMulticast, AMulticastPacketToAGroupWithNoLocalQpIsCounted) {
  Node sender("127.61.42.1");
  Node a("127.61.42.2");
  const Gid group = mgid("239.61.42.1");
  auto q = a.ud_qp();
  ASSERT_TRUE(q->attach_mcast(group).ok());
  auto tx = sender.ud_qp();
  AhAttr ah_attr;
  ah_attr.dgid = group;
  auto ah = sender.pd->create_ah(ah_attr);
  const Sge s = sender.sge(0, 4);
  SendWr wr;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = kMulticastQpn;
  wr.ud.remote_qkey = test::kQkey;
  ASSERT_TRUE(tx->post_send(wr).ok());
  // No receive WQE posted: the QP counts it, the ingress delivered it.
  ASSERT_TRUE(test::spin_until([&] { return a.device->ingress_counters().delivered.get() == 1; }, [&] {
    sender.work();
    a.work();
  }));
  EXPECT_EQ(a.device->find_qp(q->qp_num())->counters().ud_no_recv_drops.get(), 1u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
