#include <array>
#include <cstring>

#include "verbs/async_event.h"
#include "verbs/error.h"
#include "verbs/types.h"

namespace qpgate::verbs {

std::string_view qp_type_name(QpType t) {
  switch (t) {
    case QpType::RC: return "RC";
    case QpType::UC: return "UC";
    case QpType::UD: return "UD";
  }
  return "unknown";
}

wire::Transport transport_of(QpType t) {
  switch (t) {
    case QpType::RC: return wire::Transport::kRc;
    case QpType::UC: return wire::Transport::kUc;
    case QpType::UD: return wire::Transport::kUd;
  }
  return wire::Transport::kCnp;  // not a QP type: no work request or packet of a QP matches it
}

std::string_view qp_state_name(QpState s) {
  switch (s) {
    case QpState::RESET: return "RESET";
    case QpState::INIT: return "INIT";
    case QpState::RTR: return "RTR";
    case QpState::RTS: return "RTS";
    case QpState::SQD: return "SQD";
    case QpState::SQE: return "SQE";
    case QpState::ERR: return "ERR";
  }
  return "UNKNOWN";
}

std::string_view mig_state_name(MigState s) {
  switch (s) {
    case MigState::MIGRATED: return "MIGRATED";
    case MigState::REARM: return "REARM";
    case MigState::ARMED: return "ARMED";
  }
  return "UNKNOWN";
}

std::string_view access_name(Access a) {
  switch (a) {
    case Access::LOCAL_WRITE: return "IBV_ACCESS_LOCAL_WRITE";
    case Access::REMOTE_WRITE: return "IBV_ACCESS_REMOTE_WRITE";
    case Access::REMOTE_READ: return "IBV_ACCESS_REMOTE_READ";
    case Access::REMOTE_ATOMIC: return "IBV_ACCESS_REMOTE_ATOMIC";
  }
  return "IBV_ACCESS_unknown";
}

std::string_view qp_attr_mask_name(QpAttrMask m) {
  switch (m) {
    case QpAttrMask::STATE: return "IBV_QP_STATE";
    case QpAttrMask::CUR_STATE: return "IBV_QP_CUR_STATE";
    case QpAttrMask::EN_SQD_ASYNC_NOTIFY: return "IBV_QP_EN_SQD_ASYNC_NOTIFY";
    case QpAttrMask::ACCESS_FLAGS: return "IBV_QP_ACCESS_FLAGS";
    case QpAttrMask::PKEY_INDEX: return "IBV_QP_PKEY_INDEX";
    case QpAttrMask::PORT: return "IBV_QP_PORT";
    case QpAttrMask::QKEY: return "IBV_QP_QKEY";
    case QpAttrMask::AV: return "IBV_QP_AV";
    case QpAttrMask::PATH_MTU: return "IBV_QP_PATH_MTU";
    case QpAttrMask::TIMEOUT: return "IBV_QP_TIMEOUT";
    case QpAttrMask::RETRY_CNT: return "IBV_QP_RETRY_CNT";
    case QpAttrMask::RNR_RETRY: return "IBV_QP_RNR_RETRY";
    case QpAttrMask::RQ_PSN: return "IBV_QP_RQ_PSN";
    case QpAttrMask::MAX_QP_RD_ATOMIC: return "IBV_QP_MAX_QP_RD_ATOMIC";
    case QpAttrMask::ALT_PATH: return "IBV_QP_ALT_PATH";
    case QpAttrMask::MIN_RNR_TIMER: return "IBV_QP_MIN_RNR_TIMER";
    case QpAttrMask::SQ_PSN: return "IBV_QP_SQ_PSN";
    case QpAttrMask::MAX_DEST_RD_ATOMIC: return "IBV_QP_MAX_DEST_RD_ATOMIC";
    case QpAttrMask::PATH_MIG_STATE: return "IBV_QP_PATH_MIG_STATE";
    case QpAttrMask::CAP: return "IBV_QP_CAP";
    case QpAttrMask::DEST_QPN: return "IBV_QP_DEST_QPN";
    case QpAttrMask::RATE_LIMIT: return "IBV_QP_RATE_LIMIT";
  }
  return "IBV_QP_unknown";
}

bool mtu_for_ip_mtu(std::uint32_t ip_mtu, Mtu* out) {
  constexpr std::uint32_t kOverhead = 40 + 8 + 12 + 4 + 28 + 4;
  if (ip_mtu < kOverhead + 256) return false;
  const std::uint32_t room = ip_mtu - kOverhead;
  for (std::uint8_t c = 5; c >= 1; --c) {
    if ((256u << (c - 1)) <= room) { *out = static_cast<Mtu>(c); return true; }
  }
  return false;
}

std::string_view mtu_name(Mtu m) {
  switch (m) {
    case Mtu::MTU_256: return "256";
    case Mtu::MTU_512: return "512";
    case Mtu::MTU_1024: return "1024";
    case Mtu::MTU_2048: return "2048";
    case Mtu::MTU_4096: return "4096";
  }
  return "invalid";
}

std::string_view wr_opcode_name(WrOpcode op) {
  const wire::WrOpcodeInfo* info = wire::wr_opcode_info(static_cast<std::uint8_t>(op));
  return info != nullptr ? info->name : "IBV_WR_unknown";
}

const wire::WrOpcodeInfo& wr_opcode_info(WrOpcode op) { return *wire::wr_opcode_info(static_cast<std::uint8_t>(op)); }

bool opcode_valid_for(QpType type, WrOpcode op) {
  const wire::WrOpcodeInfo* info = wire::wr_opcode_info(static_cast<std::uint8_t>(op));
  return info != nullptr && info->valid_on(transport_of(type));
}

namespace {
// ibv_wc_status_str() strings (rdma-core), index = status value.
constexpr std::array<std::string_view, kWcStatusCount> kWcStatusStr = {
    "success",
    "local length error",
    "local QP operation error",
    "local EE context operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "local RDD violation error",
    "remote invalid RD request",
    "aborted error",
    "invalid EE context number",
    "invalid EE context state",
    "fatal error",
    "response timeout error",
    "general error",
    "TM error",
    "TM software rendezvous",
};
constexpr std::array<std::string_view, kWcStatusCount> kWcStatusEnum = {
    "IBV_WC_SUCCESS",         "IBV_WC_LOC_LEN_ERR",       "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",    "IBV_WC_WR_FLUSH_ERR",      "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",  "IBV_WC_REM_INV_REQ_ERR",   "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",   "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",   "IBV_WC_INV_EECN_ERR",      "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",      "IBV_WC_TM_ERR",            "IBV_WC_TM_RNDV_INCOMPLETE",
};

// ibv_event_type_str() strings (rdma-core), index = event value.
constexpr std::array<std::string_view, kEventTypeCount> kEventStr = {
    "CQ error",
    "local work queue catastrophic error",
    "invalid request local work queue error",
    "local access violation work queue error",
    "communication established",
    "send queue drained",
    "path migrated",
    "path migration request error",
    "local catastrophic error",
    "port active",
    "port error",
    "LID change",
    "P_Key change",
    "SM change",
    "SRQ catastrophic error",
    "SRQ limit reached",
    "last WQE reached",
    "client reregistration",
    "GID table change",
    "WQ fatal",
};
constexpr std::array<std::string_view, kEventTypeCount> kEventEnum = {
    "IBV_EVENT_CQ_ERR",          "IBV_EVENT_QP_FATAL",         "IBV_EVENT_QP_REQ_ERR",
    "IBV_EVENT_QP_ACCESS_ERR",   "IBV_EVENT_COMM_EST",         "IBV_EVENT_SQ_DRAINED",
    "IBV_EVENT_PATH_MIG",        "IBV_EVENT_PATH_MIG_ERR",     "IBV_EVENT_DEVICE_FATAL",
    "IBV_EVENT_PORT_ACTIVE",     "IBV_EVENT_PORT_ERR",         "IBV_EVENT_LID_CHANGE",
    "IBV_EVENT_PKEY_CHANGE",     "IBV_EVENT_SM_CHANGE",        "IBV_EVENT_SRQ_ERR",
    "IBV_EVENT_SRQ_LIMIT_REACHED", "IBV_EVENT_QP_LAST_WQE_REACHED", "IBV_EVENT_CLIENT_REREGISTER",
    "IBV_EVENT_GID_CHANGE",      "IBV_EVENT_WQ_FATAL",
};
}  // namespace

std::string_view wc_status_name(WcStatus s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kWcStatusStr.size() ? kWcStatusStr[i] : "unknown";
}

std::string_view wc_status_enum_name(WcStatus s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kWcStatusEnum.size() ? kWcStatusEnum[i] : "IBV_WC_unknown";
}

std::string_view wc_opcode_name(WcOpcode op) {
  switch (op) {
    case WcOpcode::SEND: return "IBV_WC_SEND";
    case WcOpcode::RDMA_WRITE: return "IBV_WC_RDMA_WRITE";
    case WcOpcode::RDMA_READ: return "IBV_WC_RDMA_READ";
    case WcOpcode::COMP_SWAP: return "IBV_WC_COMP_SWAP";
    case WcOpcode::FETCH_ADD: return "IBV_WC_FETCH_ADD";
    case WcOpcode::RECV: return "IBV_WC_RECV";
    case WcOpcode::RECV_RDMA_WITH_IMM: return "IBV_WC_RECV_RDMA_WITH_IMM";
  }
  return "IBV_WC_unknown";
}

WcOpcode wc_opcode_for(WrOpcode op) { return static_cast<WcOpcode>(wr_opcode_info(op).wc_opcode); }

std::string_view event_type_name(EventType e) {
  const auto i = static_cast<std::size_t>(e);
  return i < kEventStr.size() ? kEventStr[i] : "unknown";
}

std::string_view event_type_enum_name(EventType e) {
  const auto i = static_cast<std::size_t>(e);
  return i < kEventEnum.size() ? kEventEnum[i] : "IBV_EVENT_unknown";
}

EventElement event_element_of(EventType e) {
  switch (e) {
    case EventType::CQ_ERR: return EventElement::CQ;
    case EventType::QP_FATAL:
    case EventType::QP_REQ_ERR:
    case EventType::QP_ACCESS_ERR:
    case EventType::COMM_EST:
    case EventType::SQ_DRAINED:
    case EventType::PATH_MIG:
    case EventType::PATH_MIG_ERR:
    case EventType::QP_LAST_WQE_REACHED: return EventElement::QP;
    case EventType::SRQ_ERR:
    case EventType::SRQ_LIMIT_REACHED: return EventElement::SRQ;
    case EventType::PORT_ACTIVE:
    case EventType::PORT_ERR:
    case EventType::LID_CHANGE:
    case EventType::PKEY_CHANGE:
    case EventType::SM_CHANGE:
    case EventType::CLIENT_REREGISTER:
    case EventType::GID_CHANGE: return EventElement::PORT;
    case EventType::DEVICE_FATAL:
    case EventType::WQ_FATAL: return EventElement::DEVICE;
  }
  return EventElement::DEVICE;
}

std::string_view port_state_name(PortState s) {
  switch (s) {
    case PortState::NOP: return "PORT_NOP";
    case PortState::DOWN: return "PORT_DOWN";
    case PortState::INIT: return "PORT_INIT";
    case PortState::ARMED: return "PORT_ARMED";
    case PortState::ACTIVE: return "PORT_ACTIVE";
    case PortState::ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
  }
  return "PORT_UNKNOWN";
}

std::string_view errno_name(int code) {
  switch (code) {
    case 0: return "OK";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EBUSY: return "EBUSY";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EOVERFLOW: return "EOVERFLOW";
    case EAGAIN: return "EAGAIN";
    case EIO: return "EIO";
    case ENOSPC: return "ENOSPC";
    case ERANGE: return "ERANGE";
    case EFAULT: return "EFAULT";
  }
  const char* name = strerrorname_np(code);  // glibc's name for the rest (ENOSYS, ENODEV, ENETDOWN...)
  return name != nullptr ? std::string_view(name) : std::string_view("E?");
}

}  // namespace qpgate::verbs
