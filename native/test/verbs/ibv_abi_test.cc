// Our mirrored enums have verbs.h's values, and our names are libibverbs'
// strings. Built only when libibverbs-dev is present (QPGATE_HAVE_IBVERBS).
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <string_view>

#include "verbs/async_event.h"
#include "verbs/types.h"

namespace qpgate::verbs {
namespace {

template <class A, class B>
constexpr bool same(A a, B b) {
  return static_cast<long long>(a) == static_cast<long long>(b);
}

static_assert(same(QpType::RC, IBV_QPT_RC) && same(QpType::UC, IBV_QPT_UC) && same(QpType::UD, IBV_QPT_UD));

static_assert(same(QpState::RESET, IBV_QPS_RESET) && same(QpState::INIT, IBV_QPS_INIT) &&
              same(QpState::RTR, IBV_QPS_RTR) && same(QpState::RTS, IBV_QPS_RTS) && same(QpState::SQD, IBV_QPS_SQD) &&
              same(QpState::SQE, IBV_QPS_SQE) && same(QpState::ERR, IBV_QPS_ERR));

static_assert(same(Access::LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE) && same(Access::REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE) &&
              same(Access::REMOTE_READ, IBV_ACCESS_REMOTE_READ) &&
              same(Access::REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC));

static_assert(same(QpAttrMask::STATE, IBV_QP_STATE) && same(QpAttrMask::CUR_STATE, IBV_QP_CUR_STATE) &&
              same(QpAttrMask::EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
              same(QpAttrMask::ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS) && same(QpAttrMask::PKEY_INDEX, IBV_QP_PKEY_INDEX) &&
              same(QpAttrMask::PORT, IBV_QP_PORT) && same(QpAttrMask::QKEY, IBV_QP_QKEY) &&
              same(QpAttrMask::AV, IBV_QP_AV) && same(QpAttrMask::PATH_MTU, IBV_QP_PATH_MTU) &&
              same(QpAttrMask::TIMEOUT, IBV_QP_TIMEOUT) && same(QpAttrMask::RETRY_CNT, IBV_QP_RETRY_CNT) &&
              same(QpAttrMask::RNR_RETRY, IBV_QP_RNR_RETRY) && same(QpAttrMask::RQ_PSN, IBV_QP_RQ_PSN) &&
              same(QpAttrMask::MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC) &&
              same(QpAttrMask::ALT_PATH, IBV_QP_ALT_PATH) && same(QpAttrMask::MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER) &&
              same(QpAttrMask::SQ_PSN, IBV_QP_SQ_PSN) &&
              same(QpAttrMask::MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC) &&
              same(QpAttrMask::PATH_MIG_STATE, IBV_QP_PATH_MIG_STATE) && same(QpAttrMask::CAP, IBV_QP_CAP) &&
              same(QpAttrMask::DEST_QPN, IBV_QP_DEST_QPN) && same(QpAttrMask::RATE_LIMIT, IBV_QP_RATE_LIMIT));

static_assert(same(Mtu::MTU_256, IBV_MTU_256) && same(Mtu::MTU_512, IBV_MTU_512) && same(Mtu::MTU_1024, IBV_MTU_1024) &&
              same(Mtu::MTU_2048, IBV_MTU_2048) && same(Mtu::MTU_4096, IBV_MTU_4096));

static_assert(same(WrOpcode::RDMA_WRITE, IBV_WR_RDMA_WRITE) &&
              same(WrOpcode::RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM) && same(WrOpcode::SEND, IBV_WR_SEND) &&
              same(WrOpcode::SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM) && same(WrOpcode::RDMA_READ, IBV_WR_RDMA_READ) &&
              same(WrOpcode::ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP) &&
              same(WrOpcode::ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD));

static_assert(same(SendFlag::FENCE, IBV_SEND_FENCE) && same(SendFlag::SIGNALED, IBV_SEND_SIGNALED) &&
              same(SendFlag::SOLICITED, IBV_SEND_SOLICITED) && same(SendFlag::INLINE, IBV_SEND_INLINE));

static_assert(same(WcStatus::IBV_WC_SUCCESS, IBV_WC_SUCCESS) && same(WcStatus::IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR) &&
              same(WcStatus::IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR) &&
              same(WcStatus::IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR) &&
              same(WcStatus::IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR) &&
              same(WcStatus::IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR) &&
              same(WcStatus::IBV_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR) &&
              same(WcStatus::IBV_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR) &&
              same(WcStatus::IBV_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR) &&
              same(WcStatus::IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR) &&
              same(WcStatus::IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR) &&
              same(WcStatus::IBV_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR) &&
              same(WcStatus::IBV_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR) &&
              same(WcStatus::IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR) &&
              same(WcStatus::IBV_WC_LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR) &&
              same(WcStatus::IBV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR) &&
              same(WcStatus::IBV_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR) &&
              same(WcStatus::IBV_WC_INV_EECN_ERR, IBV_WC_INV_EECN_ERR) &&
              same(WcStatus::IBV_WC_INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR) &&
              same(WcStatus::IBV_WC_FATAL_ERR, IBV_WC_FATAL_ERR) &&
              same(WcStatus::IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_RESP_TIMEOUT_ERR) &&
              same(WcStatus::IBV_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR) && same(WcStatus::IBV_WC_TM_ERR, IBV_WC_TM_ERR) &&
              same(WcStatus::IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RNDV_INCOMPLETE));
static_assert(kWcStatusCount == IBV_WC_TM_RNDV_INCOMPLETE + 1);

static_assert(same(WcOpcode::SEND, IBV_WC_SEND) && same(WcOpcode::RDMA_WRITE, IBV_WC_RDMA_WRITE) &&
              same(WcOpcode::RDMA_READ, IBV_WC_RDMA_READ) && same(WcOpcode::COMP_SWAP, IBV_WC_COMP_SWAP) &&
              same(WcOpcode::FETCH_ADD, IBV_WC_FETCH_ADD) && same(WcOpcode::RECV, IBV_WC_RECV) &&
              same(WcOpcode::RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM));
static_assert(same(WcFlag::GRH, IBV_WC_GRH) && same(WcFlag::WITH_IMM, IBV_WC_WITH_IMM));

static_assert(same(MigState::MIGRATED, IBV_MIG_MIGRATED) && same(MigState::REARM, IBV_MIG_REARM) &&
              same(MigState::ARMED, IBV_MIG_ARMED));

static_assert(same(EventType::CQ_ERR, IBV_EVENT_CQ_ERR) && same(EventType::QP_FATAL, IBV_EVENT_QP_FATAL) &&
              same(EventType::QP_REQ_ERR, IBV_EVENT_QP_REQ_ERR) &&
              same(EventType::QP_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR) &&
              same(EventType::COMM_EST, IBV_EVENT_COMM_EST) && same(EventType::SQ_DRAINED, IBV_EVENT_SQ_DRAINED) &&
              same(EventType::PATH_MIG, IBV_EVENT_PATH_MIG) && same(EventType::PATH_MIG_ERR, IBV_EVENT_PATH_MIG_ERR) &&
              same(EventType::DEVICE_FATAL, IBV_EVENT_DEVICE_FATAL) &&
              same(EventType::PORT_ACTIVE, IBV_EVENT_PORT_ACTIVE) && same(EventType::PORT_ERR, IBV_EVENT_PORT_ERR) &&
              same(EventType::LID_CHANGE, IBV_EVENT_LID_CHANGE) && same(EventType::PKEY_CHANGE, IBV_EVENT_PKEY_CHANGE) &&
              same(EventType::SM_CHANGE, IBV_EVENT_SM_CHANGE) && same(EventType::SRQ_ERR, IBV_EVENT_SRQ_ERR) &&
              same(EventType::SRQ_LIMIT_REACHED, IBV_EVENT_SRQ_LIMIT_REACHED) &&
              same(EventType::QP_LAST_WQE_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED) &&
              same(EventType::CLIENT_REREGISTER, IBV_EVENT_CLIENT_REREGISTER) &&
              same(EventType::GID_CHANGE, IBV_EVENT_GID_CHANGE) && same(EventType::WQ_FATAL, IBV_EVENT_WQ_FATAL));
static_assert(kEventTypeCount == IBV_EVENT_WQ_FATAL + 1);

static_assert(same(PortState::NOP, IBV_PORT_NOP) && same(PortState::DOWN, IBV_PORT_DOWN) &&
              same(PortState::INIT, IBV_PORT_INIT) && same(PortState::ARMED, IBV_PORT_ARMED) &&
              same(PortState::ACTIVE, IBV_PORT_ACTIVE) && same(PortState::ACTIVE_DEFER, IBV_PORT_ACTIVE_DEFER));

TEST(IbverbsAbi, EveryWcStatusNameIsWhatIbvWcStatusStrReturns) {
  for (int s = 0; s < kWcStatusCount; ++s) {
    EXPECT_EQ(wc_status_name(static_cast<WcStatus>(s)), std::string_view(ibv_wc_status_str(static_cast<ibv_wc_status>(s))))
        << "status " << s;
  }
}

TEST(IbverbsAbi, EveryEventNameIsWhatIbvEventTypeStrReturns) {
  for (int e = 0; e < kEventTypeCount; ++e) {
    EXPECT_EQ(event_type_name(static_cast<EventType>(e)),
              std::string_view(ibv_event_type_str(static_cast<ibv_event_type>(e))))
        << "event " << e;
  }
}

}  // namespace
}  // namespace qpgate::verbs
