// UD on both backends: unicast with the 40-byte GRH area in front of the
// payload, a wrong Q_Key dropped, and multicast to an attached QP only.
#include <cstring>

#include "backend.h"

namespace qpgate::verbs::conformance {
namespace {

constexpr std::uint32_t kQkey = 0x11111111;
constexpr std::size_t kGrh = 40;

SendWr ud_send(std::uint64_t id, const Sge& sge, const AddressHandle& ah, std::uint32_t qpn, std::uint32_t qkey) {
  SendWr w;
  w.wr_id = id;
  w.sg_list = std::span<const Sge>(&sge, 1);
  w.opcode = WrOpcode::SEND;
  w.send_flags = SendFlag::SIGNALED;
  w.ud = {&ah, qpn, qkey};
  return w;
}

TEST_P(Conformance, UdUnicastArrivesAfterTheGrhAreaAndAWrongQkeyIsDropped) {
  auto q0 = make_qp(0, QpType::UD);
  auto q1 = make_qp(1, QpType::UD);
  ASSERT_TRUE(q0 && q1);
  ready_ud(*q0, kQkey);
  ready_ud(*q1, kQkey);
  for (int i = 0; i < 2; ++i) {
    const Sge in = side[1].sge(static_cast<std::size_t>(i) * 2048, 2048);
    ASSERT_TRUE(q1->post_recv(RecvWr{static_cast<std::uint64_t>(i), nullptr, std::span(&in, 1)}).ok());
  }
  auto ah = side[0].pd->create_ah(side[0].ah_to(side[1]));
  ASSERT_TRUE(ah.ok()) << ah.error().message;
  std::memcpy(side[0].buffer.data(), "wrong key", 10);
  std::memcpy(side[0].buffer.data() + 64, "right key", 10);
  const Sge wrong = side[0].sge(0, 10), right = side[0].sge(64, 10);
  ASSERT_TRUE(q0->post_send(ud_send(1, wrong, **ah, q1->qp_num(), kQkey + 1)).ok());
  ASSERT_TRUE(q0->post_send(ud_send(2, right, **ah, q1->qp_num(), kQkey)).ok());
  ASSERT_EQ(poll(0, 2).size(), 2u);  // UD sends complete once on the wire, delivered or not
  const auto got = poll(1, 2, std::chrono::milliseconds(1500));
  ASSERT_EQ(got.size(), 1u) << "only the datagram with the QP's Q_Key is received";
  EXPECT_EQ(got[0].status, WcStatus::IBV_WC_SUCCESS) << wc_text(got[0]);
  EXPECT_EQ(got[0].wr_id, 0u);
  EXPECT_EQ(got[0].byte_len, kGrh + 10);
  EXPECT_TRUE(got[0].wc_flags.has(WcFlag::GRH));
  EXPECT_EQ(got[0].src_qp, q0->qp_num());
  EXPECT_STREQ(reinterpret_cast<const char*>(side[1].buffer.data() + kGrh), "right key");
}

TEST_P(Conformance, UdMulticastReachesTheAttachedQpAndNotTheDetachedOne) {
  // A group per run: the soft backend's groups are shared by every process on the host.
  const std::string group = "239.64." + std::to_string(::testing::UnitTest::GetInstance()->random_seed() % 250) + ".9";
  const Gid mgid = *Gid::parse(group);
  auto sender = make_qp(0, QpType::UD);
  auto member = make_qp(1, QpType::UD);
  auto stranger = make_qp(1, QpType::UD);
  ASSERT_TRUE(sender && member && stranger);
  ready_ud(*sender, kQkey);
  ready_ud(*member, kQkey);
  ready_ud(*stranger, kQkey);
  side[1].in_netns([&] {  // the soft side joins from its namespace
    ASSERT_TRUE(member->attach_mcast(mgid).ok());
    ASSERT_TRUE(stranger->attach_mcast(mgid).ok());
    ASSERT_TRUE(stranger->detach_mcast(mgid).ok());
  });
  constexpr int kCount = 5;
  for (int i = 0; i < kCount; ++i) {
    const Sge in = side[1].sge(static_cast<std::size_t>(i) * 256, 256);
    ASSERT_TRUE(member->post_recv(RecvWr{static_cast<std::uint64_t>(i), nullptr, std::span(&in, 1)}).ok());
    const Sge in2 = side[1].sge(65536 + static_cast<std::size_t>(i) * 256, 256);
    ASSERT_TRUE(stranger->post_recv(RecvWr{100u + static_cast<std::uint64_t>(i), nullptr, std::span(&in2, 1)}).ok());
  }
  AhAttr a = side[0].ah_to(side[1]);
  a.dgid = mgid;
  a.hop_limit = 1;
  auto ah = side[0].pd->create_ah(a);
  ASSERT_TRUE(ah.ok()) << ah.error().message;
  std::memcpy(side[0].buffer.data(), "tick", 5);
  const Sge out = side[0].sge(0, 5);
  for (int i = 0; i < kCount; ++i) ASSERT_TRUE(sender->post_send(ud_send(static_cast<std::uint64_t>(i), out, **ah, kMulticastQpn, kQkey)).ok());
  ASSERT_EQ(poll(0, kCount).size(), static_cast<std::size_t>(kCount));
  const auto got = poll(1, kCount + 1, std::chrono::milliseconds(3000));
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kCount)) << "one copy each, and none for the detached QP";
  for (const Wc& wc : got) {
    EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS) << wc_text(wc);
    EXPECT_EQ(wc.qp_num, member->qp_num());
    EXPECT_EQ(std::memcmp(side[1].buffer.data() + wc.wr_id * 256 + kGrh, "tick", 5), 0);
  }
}

}  // namespace
}  // namespace qpgate::verbs::conformance
