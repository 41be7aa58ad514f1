// Attribute structs: address vector, QP capabilities and attributes, device,
// port and SRQ attributes. Field names are ibverbs' (struct ibv_qp_attr,
// ibv_ah_attr, ibv_device_attr, ibv_port_attr) so the RTR/RTS code of an
// rc_pingpong port reads the same.
#pragma once

#include <cstdint>
#include <string>

#include "verbs/gid.h"
#include "verbs/types.h"

namespace qpgate::verbs {

class CompletionQueue;
class SharedReceiveQueue;

// ibv_ah_attr for RoCE: always global (a GRH, i.e. an IP header).
struct AhAttr {
  Gid dgid;                        // destination GID (IPv4-mapped for RoCEv2/IPv4), or an MGID
  std::uint8_t sgid_index = 0;     // our GID table entry the packets leave from
  std::uint8_t traffic_class = 0;  // IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN)
  std::uint8_t hop_limit = 64;     // IPv4 TTL / IPv6 hop limit (ibverbs users set 1..255)
  std::uint8_t sl = 0;             // service level (RoCE: maps to PCP/priority)
  std::uint32_t flow_label = 0;    // 20 bits; IPv6 flow label, and the UDP source port when udp_sport is 0
  std::uint8_t port_num = 1;
  // RoCEv2 UDP source port (the entropy of the flow; 0xC000..0xFFFF as rxe and
  // rdma_get_udp_sport() choose). 0 = the backend derives it from the QPNs /
  // flow label. The destination port is always 4791.
  std::uint16_t udp_sport = 0;

  bool operator==(const AhAttr&) const = default;
};

// ibv_qp_cap.
struct QpCap {
  std::uint32_t max_send_wr = 0;
  std::uint32_t max_recv_wr = 0;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline_data = 0;

  bool operator==(const QpCap&) const = default;
};

// ibv_qp_init_attr. The CQs and SRQ are borrowed and must outlive the QP.
struct QpInitAttr {
  QpType qp_type = QpType::RC;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  SharedReceiveQueue* srq = nullptr;  // when set, cap.max_recv_wr/max_recv_sge are ignored
  QpCap cap;
  bool sq_sig_all = false;  // every send WR completes, not only IBV_SEND_SIGNALED ones
  std::uint64_t qp_context = 0;  // opaque to the backend; handed back in async events
};

// ibv_qp_attr: the fields a modify reads are those named by its mask.
struct QpAttr {
  QpState qp_state = QpState::RESET;
  QpState cur_qp_state = QpState::RESET;  // IBV_QP_CUR_STATE: asserts the current state
  Mtu path_mtu = Mtu::MTU_1024;
  std::uint32_t qkey = 0;
  std::uint32_t rq_psn = 0;       // 24 bits
  std::uint32_t sq_psn = 0;       // 24 bits
  std::uint32_t dest_qp_num = 0;  // 24 bits
  AccessFlags qp_access_flags;    // remote operations the responder accepts
  QpCap cap;
  AhAttr ah_attr;
  std::uint16_t pkey_index = 0;
  std::uint8_t en_sqd_async_notify = 0;
  std::uint8_t sq_draining = 0;  // query only
  std::uint8_t max_rd_atomic = 0;       // outstanding READ/atomic as requester (initiator depth)
  std::uint8_t max_dest_rd_atomic = 0;  // outstanding READ/atomic as responder (responder resources)
  std::uint8_t min_rnr_timer = 0;       // RNR timer code 0..31 we advertise in RNR NAKs
  std::uint8_t port_num = 1;
  std::uint8_t timeout = 0;    // local ACK timeout code 0..31: 4.096 µs × 2^timeout, 0 = infinite
  std::uint8_t retry_cnt = 0;  // 0..7 transport retries
  std::uint8_t rnr_retry = 0;  // 0..7 RNR retries, 7 = infinite
  // IBV_QP_ALT_PATH: the alternate path (its own address vector, P_Key
  // index, port and local ACK timeout), used once the QP migrates to it.
  AhAttr alt_ah_attr;
  std::uint16_t alt_pkey_index = 0;
  std::uint8_t alt_port_num = 1;
  std::uint8_t alt_timeout = 0;
  MigState path_mig_state = MigState::MIGRATED;  // IBV_QP_PATH_MIG_STATE
};

// ibv_device_attr, the fields qpgate reports and checks against.
struct DeviceAttr {
  std::string fw_ver;
  std::uint64_t node_guid = 0;
  std::uint64_t max_mr_size = 0;
  std::uint32_t vendor_id = 0;
  std::uint32_t vendor_part_id = 0;
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;
  std::uint32_t max_sge = 0;
  std::uint32_t max_cq = 0;
  std::uint32_t max_cqe = 0;
  std::uint32_t max_mr = 0;
  std::uint32_t max_pd = 0;
  std::uint32_t max_qp_rd_atom = 0;       // bound on max_dest_rd_atomic
  std::uint32_t max_qp_init_rd_atom = 0;  // bound on max_rd_atomic
  std::uint32_t max_srq = 0;
  std::uint32_t max_srq_wr = 0;
  std::uint32_t max_srq_sge = 0;
  std::uint32_t max_mcast_grp = 0;
  std::uint32_t max_mcast_qp_attach = 0;
  std::uint32_t max_ah = 0;
  std::uint32_t max_inline_data = 0;  // not in ibv_device_attr; rxe's RXE_MAX_INLINE_DATA
  std::uint16_t max_pkeys = 0;
  std::uint8_t local_ca_ack_delay = 0;
  std::uint8_t phys_port_cnt = 1;
  // IBV_DEVICE_AUTO_PATH_MIG: RC QPs take an alternate path (IBV_QP_ALT_PATH)
  // and migrate to it; the soft backend has it, qpgate's ibv backend not.
  bool auto_path_mig = false;
};

// ibv_port_attr, the RoCE-relevant fields.
struct PortAttr {
  PortState state = PortState::DOWN;
  Mtu max_mtu = Mtu::MTU_4096;
  Mtu active_mtu = Mtu::MTU_1024;  // from the netdev MTU (mtu_for_ip_mtu)
  std::uint32_t gid_tbl_len = 0;
  std::uint32_t max_msg_sz = 0;
  std::uint32_t bad_pkey_cntr = 0;
  std::uint32_t qkey_viol_cntr = 0;
  std::uint16_t pkey_tbl_len = 1;
};

// ibv_srq_attr / ibv_srq_init_attr.
struct SrqAttr {
  std::uint32_t max_wr = 0;
  std::uint32_t max_sge = 1;
  std::uint32_t srq_limit = 0;  // arm: when the queue drops below this, SRQ_LIMIT_REACHED fires once
};

enum class SrqAttrMask : std::uint32_t {
  MAX_WR = 1u << 0,  // IBV_SRQ_MAX_WR (resize)
  LIMIT = 1u << 1,   // IBV_SRQ_LIMIT (arm)
};

}  // namespace qpgate::verbs
