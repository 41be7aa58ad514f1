#include <gtest/gtest.h>

#include "verbs/async_event.h"
#include "verbs/error.h"
#include "verbs/types.h"

namespace qpgate::verbs {
namespace {

TEST(Types, StatesAndTypesHaveTheirIbverbsNames) {
  EXPECT_EQ(qp_state_name(QpState::RTS), "RTS");
  EXPECT_EQ(qp_state_name(QpState::SQE), "SQE");
  EXPECT_EQ(qp_type_name(QpType::UD), "UD");
  EXPECT_EQ(qp_attr_mask_name(QpAttrMask::DEST_QPN), "IBV_QP_DEST_QPN");
  EXPECT_EQ(access_name(Access::REMOTE_ATOMIC), "IBV_ACCESS_REMOTE_ATOMIC");
  EXPECT_EQ(wr_opcode_name(WrOpcode::ATOMIC_FETCH_AND_ADD), "IBV_WR_ATOMIC_FETCH_AND_ADD");
  EXPECT_EQ(port_state_name(PortState::ACTIVE), "PORT_ACTIVE");
}

TEST(Types, WcStatusNamesAreIbvWcStatusStrs) {
  EXPECT_EQ(wc_status_name(WcStatus::IBV_WC_SUCCESS), "success");
  EXPECT_EQ(wc_status_name(WcStatus::IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
  EXPECT_EQ(wc_status_name(WcStatus::IBV_WC_REM_ACCESS_ERR), "remote access error");
  EXPECT_EQ(wc_status_name(WcStatus::IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
  EXPECT_EQ(wc_status_name(WcStatus::IBV_WC_RNR_RETRY_EXC_ERR), "RNR retry counter exceeded");
  EXPECT_EQ(wc_status_enum_name(WcStatus::IBV_WC_REM_INV_REQ_ERR), "IBV_WC_REM_INV_REQ_ERR");
  EXPECT_EQ(wc_status_name(static_cast<WcStatus>(99)), "unknown");
}

TEST(Types, EventsNameTheirElement) {
  EXPECT_EQ(event_type_name(EventType::QP_FATAL), "local work queue catastrophic error");
  EXPECT_EQ(event_type_enum_name(EventType::SRQ_LIMIT_REACHED), "IBV_EVENT_SRQ_LIMIT_REACHED");
  EXPECT_EQ(event_element_of(EventType::SQ_DRAINED), EventElement::QP);
  EXPECT_EQ(event_element_of(EventType::QP_LAST_WQE_REACHED), EventElement::QP);
  EXPECT_EQ(event_element_of(EventType::SRQ_LIMIT_REACHED), EventElement::SRQ);
  EXPECT_EQ(event_element_of(EventType::PORT_ERR), EventElement::PORT);
  EXPECT_EQ(event_element_of(EventType::CQ_ERR), EventElement::CQ);
}

TEST(Types, PathMtuCodesConvertToAndFromBytes) {
  EXPECT_EQ(mtu_to_bytes(Mtu::MTU_256), 256u);
  EXPECT_EQ(mtu_to_bytes(Mtu::MTU_1024), 1024u);
  EXPECT_EQ(mtu_to_bytes(Mtu::MTU_4096), 4096u);
  EXPECT_EQ(mtu_to_bytes(static_cast<Mtu>(0)), 0u);
  EXPECT_EQ(mtu_to_bytes(static_cast<Mtu>(6)), 0u);
  Mtu m{};
  ASSERT_TRUE(mtu_from_bytes(2048, &m));
  EXPECT_EQ(m, Mtu::MTU_2048);
  EXPECT_FALSE(mtu_from_bytes(1500, &m));
  EXPECT_EQ(mtu_name(Mtu::MTU_512), "512");
}

TEST(Types, TheActiveMtuOfAnEthernetLinkIsTheLargestIbMtuThatFits) {
  Mtu m{};
  ASSERT_TRUE(mtu_for_ip_mtu(1500, &m));
  EXPECT_EQ(m, Mtu::MTU_1024) << "1500-byte Ethernet carries IB MTU 1024, as rxe reports";
  ASSERT_TRUE(mtu_for_ip_mtu(9000, &m));
  EXPECT_EQ(m, Mtu::MTU_4096);
  ASSERT_TRUE(mtu_for_ip_mtu(65536, &m));
  EXPECT_EQ(m, Mtu::MTU_4096) << "loopback";
  ASSERT_TRUE(mtu_for_ip_mtu(352, &m));
  EXPECT_EQ(m, Mtu::MTU_256);
  EXPECT_FALSE(mtu_for_ip_mtu(351, &m));
}

TEST(Types, SendCompletionsReportTheOperationFamily) {
  EXPECT_EQ(wc_opcode_for(WrOpcode::SEND_WITH_IMM), WcOpcode::SEND);
  EXPECT_EQ(wc_opcode_for(WrOpcode::RDMA_WRITE_WITH_IMM), WcOpcode::RDMA_WRITE);
  EXPECT_EQ(wc_opcode_for(WrOpcode::ATOMIC_CMP_AND_SWP), WcOpcode::COMP_SWAP);
  EXPECT_TRUE(wc_opcode_is_recv(WcOpcode::RECV_RDMA_WITH_IMM));
  EXPECT_FALSE(wc_opcode_is_recv(WcOpcode::FETCH_ADD));
}

TEST(Types, FlagsCombineAndTest) {
  const AccessFlags f = Access::LOCAL_WRITE | Access::REMOTE_READ;
  EXPECT_TRUE(f.has(Access::REMOTE_READ));
  EXPECT_FALSE(f.has(Access::REMOTE_WRITE));
  EXPECT_EQ(f.bits(), 0x5u);
  EXPECT_TRUE(kAllAccess.has_all(f));
  EXPECT_EQ(f.without(Access::LOCAL_WRITE), AccessFlags(Access::REMOTE_READ));
}

TEST(Errors, StatusAndResultCarryTheErrnoAndTheMessage) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), 0);
  const Status bad = Error{ENOMEM, "full"};
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "full");
  Result<int> r = 5;
  EXPECT_EQ(*r, 5);
  Result<int> e = Error{EPERM, "no"};
  EXPECT_EQ(e.code(), EPERM);
  EXPECT_EQ(e.status().code(), EPERM);
  EXPECT_EQ(errno_name(EOVERFLOW), "EOVERFLOW");
}

}  // namespace
}  // namespace qpgate::verbs
