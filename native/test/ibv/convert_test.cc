// The ibv backend's conversions, without a device: byte order of immediate
// data, access flags, the address vector and the QP attribute mask.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {
namespace {

TEST(IbvConvert, ImmediateDataIsHostOrderInOurCompletions) {
  ibv_wc in{};
  in.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
  in.imm_data = htonl(0x01020304);  // ibverbs: big-endian
  in.opcode = IBV_WC_RECV;
  in.byte_len = 48;
  Wc out;
  from_ibv_wc(in, &out);
  EXPECT_EQ(out.imm_data, 0x01020304u);
  EXPECT_TRUE(out.wc_flags.has(WcFlag::WITH_IMM));
  EXPECT_TRUE(out.wc_flags.has(WcFlag::GRH));
  EXPECT_EQ(out.opcode, WcOpcode::RECV);
  in.wc_flags = 0;
  from_ibv_wc(in, &out);
  EXPECT_EQ(out.imm_data, 0u) << "no WITH_IMM flag, no immediate";
}

TEST(IbvConvert, AccessFlagsMapBitForBitBothWays) {
  EXPECT_EQ(to_ibv_access(kAllAccess),
            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  EXPECT_EQ(to_ibv_access(AccessFlags(Access::REMOTE_READ)), IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(from_ibv_access(IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE),
            Access::REMOTE_ATOMIC | Access::LOCAL_WRITE);
}

TEST(IbvConvert, TheAddressVectorIsAlwaysGlobalWithItsQosFields) {
  AhAttr a;
  a.dgid = *Gid::parse("10.77.0.2");
  a.sgid_index = 3;
  a.traffic_class = 0x68;
  a.hop_limit = 8;
  a.flow_label = 0xabcde;
  a.sl = 2;
  ibv_ah_attr out{};
  ASSERT_TRUE(to_ibv_ah_attr(a, &out).ok());
  EXPECT_EQ(out.is_global, 1);
  EXPECT_EQ(out.grh.sgid_index, 3);
  EXPECT_EQ(out.grh.traffic_class, 0x68);
  EXPECT_EQ(out.grh.hop_limit, 8);
  EXPECT_EQ(out.grh.flow_label, 0xabcdeu);
  EXPECT_EQ(out.sl, 2);
  EXPECT_EQ(out.port_num, 1);
  EXPECT_EQ(from_ibv_gid(out.grh.dgid), a.dgid);
  EXPECT_EQ(from_ibv_ah_attr(out), a);
}

TEST(IbvConvert, AUdpSourcePortBecomesTheFlowLabelThatMapsBackToIt) {
  AhAttr a;
  a.dgid = *Gid::parse("10.77.0.2");
  a.udp_sport = 0xc123;
  ibv_ah_attr out{};
  ASSERT_TRUE(to_ibv_ah_attr(a, &out).ok());
  // The kernel's rdma_flow_label_to_udp_sport: low 14 bits XOR the next 6, | 0xC000.
  const std::uint32_t fl = out.grh.flow_label;
  EXPECT_EQ(((fl & 0x3fffu) ^ ((fl & 0xfc000u) >> 14)) | 0xc000u, 0xc123u);
  a.udp_sport = 0x1234;
  auto s = to_ibv_ah_attr(a, &out);
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_NE(s.message().find("outside the RoCEv2 source port range"), std::string::npos) << s.message();
  a.udp_sport = 0xc001;
  a.flow_label = 7;
  EXPECT_EQ(to_ibv_ah_attr(a, &out).code(), EINVAL);
}

TEST(IbvConvert, TheQpAttributeMaskIsPassedThroughBitForBit) {
  QpAttr a;
  a.qp_state = QpState::RTR;
  a.path_mtu = Mtu::MTU_1024;
  a.dest_qp_num = 0x42;
  a.rq_psn = 0x123456;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.dgid = *Gid::parse("10.77.0.2");
  const auto mask = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
                    QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
  ibv_qp_attr out{};
  int m = 0;
  ASSERT_TRUE(to_ibv_qp_attr(a, mask, &out, &m).ok());
  EXPECT_EQ(m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  EXPECT_EQ(out.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(out.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(out.dest_qp_num, 0x42u);
  EXPECT_EQ(out.rq_psn, 0x123456u);
  EXPECT_EQ(out.ah_attr.is_global, 1);
  const QpAttr back = from_ibv_qp_attr(out);
  EXPECT_EQ(back.dest_qp_num, 0x42u);
  EXPECT_EQ(back.max_dest_rd_atomic, 4);
  EXPECT_EQ(back.ah_attr.dgid, a.ah_attr.dgid);
}

}  // namespace
}  // namespace qpgate::verbs::ibv
