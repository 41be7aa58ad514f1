// Conversions between the verbs interface and <infiniband/verbs.h>. Our enum
// values are verbs.h's (types.h); the static_asserts keep it so here, where
// the casts rely on it (test/verbs/ibv_abi_test.cc checks every value).
#include <arpa/inet.h>

#include <cstring>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

static_assert(static_cast<int>(QpType::RC) == IBV_QPT_RC && static_cast<int>(QpType::UC) == IBV_QPT_UC &&
              static_cast<int>(QpType::UD) == IBV_QPT_UD);
static_assert(static_cast<int>(QpState::RESET) == IBV_QPS_RESET && static_cast<int>(QpState::ERR) == IBV_QPS_ERR &&
              static_cast<int>(QpState::SQE) == IBV_QPS_SQE && static_cast<int>(QpState::SQD) == IBV_QPS_SQD);
static_assert(static_cast<int>(Mtu::MTU_256) == IBV_MTU_256 && static_cast<int>(Mtu::MTU_4096) == IBV_MTU_4096);
static_assert(static_cast<int>(WrOpcode::RDMA_WRITE) == IBV_WR_RDMA_WRITE &&
              static_cast<int>(WrOpcode::RDMA_WRITE_WITH_IMM) == IBV_WR_RDMA_WRITE_WITH_IMM &&
              static_cast<int>(WrOpcode::SEND) == IBV_WR_SEND &&
              static_cast<int>(WrOpcode::SEND_WITH_IMM) == IBV_WR_SEND_WITH_IMM &&
              static_cast<int>(WrOpcode::RDMA_READ) == IBV_WR_RDMA_READ &&
              static_cast<int>(WrOpcode::ATOMIC_CMP_AND_SWP) == IBV_WR_ATOMIC_CMP_AND_SWP &&
              static_cast<int>(WrOpcode::ATOMIC_FETCH_AND_ADD) == IBV_WR_ATOMIC_FETCH_AND_ADD);
static_assert(static_cast<unsigned>(SendFlag::FENCE) == IBV_SEND_FENCE &&
              static_cast<unsigned>(SendFlag::SIGNALED) == IBV_SEND_SIGNALED &&
              static_cast<unsigned>(SendFlag::SOLICITED) == IBV_SEND_SOLICITED &&
              static_cast<unsigned>(SendFlag::INLINE) == IBV_SEND_INLINE);
static_assert(static_cast<int>(WcStatus::IBV_WC_REM_ACCESS_ERR) == IBV_WC_REM_ACCESS_ERR &&
              static_cast<int>(WcStatus::IBV_WC_TM_RNDV_INCOMPLETE) == IBV_WC_TM_RNDV_INCOMPLETE);
static_assert(static_cast<int>(WcOpcode::RECV) == IBV_WC_RECV &&
              static_cast<int>(WcOpcode::RECV_RDMA_WITH_IMM) == IBV_WC_RECV_RDMA_WITH_IMM &&
              static_cast<int>(WcOpcode::FETCH_ADD) == IBV_WC_FETCH_ADD);
static_assert(static_cast<unsigned>(WcFlag::GRH) == IBV_WC_GRH && static_cast<unsigned>(WcFlag::WITH_IMM) == IBV_WC_WITH_IMM);
static_assert(static_cast<int>(EventType::CQ_ERR) == IBV_EVENT_CQ_ERR &&
              static_cast<int>(EventType::GID_CHANGE) == IBV_EVENT_GID_CHANGE &&
              static_cast<int>(EventType::WQ_FATAL) == IBV_EVENT_WQ_FATAL);
static_assert(static_cast<int>(PortState::ACTIVE) == IBV_PORT_ACTIVE);
// Each of our mask bits is the ibv_qp_attr_mask bit of the same name.
static_assert(static_cast<int>(QpAttrMask::STATE) == IBV_QP_STATE && static_cast<int>(QpAttrMask::AV) == IBV_QP_AV &&
              static_cast<int>(QpAttrMask::DEST_QPN) == IBV_QP_DEST_QPN &&
              static_cast<int>(QpAttrMask::RATE_LIMIT) == IBV_QP_RATE_LIMIT &&
              static_cast<int>(QpAttrMask::MAX_DEST_RD_ATOMIC) == IBV_QP_MAX_DEST_RD_ATOMIC);

int to_ibv_access(AccessFlags a) {
  int f = 0;
  if (a.has(Access::LOCAL_WRITE)) f |= IBV_ACCESS_LOCAL_WRITE;
  if (a.has(Access::REMOTE_WRITE)) f |= IBV_ACCESS_REMOTE_WRITE;
  if (a.has(Access::REMOTE_READ)) f |= IBV_ACCESS_REMOTE_READ;
  if (a.has(Access::REMOTE_ATOMIC)) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

AccessFlags from_ibv_access(unsigned f) {
  AccessFlags a;
  if ((f & IBV_ACCESS_LOCAL_WRITE) != 0) a |= Access::LOCAL_WRITE;
  if ((f & IBV_ACCESS_REMOTE_WRITE) != 0) a |= Access::REMOTE_WRITE;
  if ((f & IBV_ACCESS_REMOTE_READ) != 0) a |= Access::REMOTE_READ;
  if ((f & IBV_ACCESS_REMOTE_ATOMIC) != 0) a |= Access::REMOTE_ATOMIC;
  return a;
}

ibv_gid to_ibv_gid(const Gid& g) {
  ibv_gid out{};
  std::memcpy(out.raw, g.raw.data(), sizeof out.raw);
  return out;
}

Gid from_ibv_gid(const ibv_gid& g) {
  Gid out;
  std::memcpy(out.raw.data(), g.raw, sizeof g.raw);
  return out;
}

Status to_ibv_ah_attr(const AhAttr& a, ibv_ah_attr* out) {
  *out = ibv_ah_attr{};
  std::uint32_t flow_label = a.flow_label;
  if (a.udp_sport != 0) {
    if (a.udp_sport < 0xc000) {
      return Error{EINVAL, "AhAttr.udp_sport " + std::to_string(a.udp_sport) +
                               " is outside the RoCEv2 source port range 0xC000..0xFFFF"};
    }
    const std::uint32_t from_sport = a.udp_sport & 0x3fffu;  // maps back to exactly udp_sport
    if (flow_label != 0 && flow_label != from_sport) {
      return Error{EINVAL, "AhAttr.udp_sport " + std::to_string(a.udp_sport) + " and flow_label " +
                               std::to_string(flow_label) +
                               " disagree: through libibverbs the UDP source port is derived from the flow label; "
                               "set one of them"};
    }
    flow_label = from_sport;
  }
  if (flow_label > 0xfffff) {
    return Error{EINVAL, "AhAttr.flow_label " + std::to_string(flow_label) + " is wider than 20 bits"};
  }
  out->is_global = 1;
  out->grh.dgid = to_ibv_gid(a.dgid);
  out->grh.flow_label = flow_label;
  out->grh.sgid_index = a.sgid_index;
  out->grh.hop_limit = a.hop_limit;
  out->grh.traffic_class = a.traffic_class;
  out->sl = a.sl;
  out->port_num = a.port_num;
  out->dlid = 0;  // RoCE: no LIDs
  out->src_path_bits = 0;
  out->static_rate = 0;
  return {};
}

AhAttr from_ibv_ah_attr(const ibv_ah_attr& a) {
  AhAttr out;
  out.dgid = from_ibv_gid(a.grh.dgid);
  out.sgid_index = a.grh.sgid_index;
  out.traffic_class = a.grh.traffic_class;
  out.hop_limit = a.grh.hop_limit;
  out.flow_label = a.grh.flow_label;
  out.sl = a.sl;
  out.port_num = a.port_num;
  return out;
}

Status to_ibv_qp_attr(const QpAttr& a, QpAttrMaskFlags mask, ibv_qp_attr* out, int* ibv_mask) {
  using M = QpAttrMask;
  *out = ibv_qp_attr{};
  out->qp_state = static_cast<ibv_qp_state>(a.qp_state);
  out->cur_qp_state = static_cast<ibv_qp_state>(a.cur_qp_state);
  out->path_mtu = static_cast<ibv_mtu>(a.path_mtu);
  out->qkey = a.qkey;
  out->rq_psn = a.rq_psn;
  out->sq_psn = a.sq_psn;
  out->dest_qp_num = a.dest_qp_num;
  out->qp_access_flags = static_cast<unsigned>(to_ibv_access(a.qp_access_flags));
  out->cap.max_send_wr = a.cap.max_send_wr;
  out->cap.max_recv_wr = a.cap.max_recv_wr;
  out->cap.max_send_sge = a.cap.max_send_sge;
  out->cap.max_recv_sge = a.cap.max_recv_sge;
  out->cap.max_inline_data = a.cap.max_inline_data;
  if (mask.has(M::AV)) {
    if (auto s = to_ibv_ah_attr(a.ah_attr, &out->ah_attr); !s.ok()) {
      return Error{s.code(), "IBV_QP_AV: " + std::string(s.message())};
    }
  }
  out->pkey_index = a.pkey_index;
  out->en_sqd_async_notify = a.en_sqd_async_notify;
  out->max_rd_atomic = a.max_rd_atomic;
  out->max_dest_rd_atomic = a.max_dest_rd_atomic;
  out->min_rnr_timer = a.min_rnr_timer;
  out->port_num = a.port_num;
  out->timeout = a.timeout;
  out->retry_cnt = a.retry_cnt;
  out->rnr_retry = a.rnr_retry;
  *ibv_mask = static_cast<int>(mask.bits());  // the same bits (static_asserts above)
  return {};
}

QpAttr from_ibv_qp_attr(const ibv_qp_attr& a) {
  QpAttr out;
  out.qp_state = static_cast<QpState>(a.qp_state);
  out.cur_qp_state = static_cast<QpState>(a.cur_qp_state);
  out.path_mtu = static_cast<Mtu>(a.path_mtu);
  out.qkey = a.qkey;
  out.rq_psn = a.rq_psn;
  out.sq_psn = a.sq_psn;
  out.dest_qp_num = a.dest_qp_num;
  out.qp_access_flags = from_ibv_access(a.qp_access_flags);
  out.cap = QpCap{a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
                  a.cap.max_inline_data};
  out.ah_attr = from_ibv_ah_attr(a.ah_attr);
  out.pkey_index = a.pkey_index;
  out.en_sqd_async_notify = a.en_sqd_async_notify;
  out.sq_draining = a.sq_draining;
  out.max_rd_atomic = a.max_rd_atomic;
  out.max_dest_rd_atomic = a.max_dest_rd_atomic;
  out.min_rnr_timer = a.min_rnr_timer;
  out.port_num = a.port_num;
  out.timeout = a.timeout;
  out.retry_cnt = a.retry_cnt;
  out.rnr_retry = a.rnr_retry;
  return out;
}

void from_ibv_wc(const ibv_wc& in, Wc* out) {
  out->wr_id = in.wr_id;
  out->status = static_cast<WcStatus>(in.status);
  out->opcode = static_cast<WcOpcode>(in.opcode);
  out->vendor_err = in.vendor_err;
  out->byte_len = in.byte_len;
  out->wc_flags = WcFlags::from_bits(in.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM));
  out->imm_data = (in.wc_flags & IBV_WC_WITH_IMM) != 0 ? ntohl(in.imm_data) : 0;  // host order here
  out->qp_num = in.qp_num;
  out->src_qp = in.src_qp;
  out->pkey_index = in.pkey_index;
  out->slid = in.slid;
  out->sl = in.sl;
  out->dlid_path_bits = in.dlid_path_bits;
}

}  // namespace qpgate::verbs::ibv
