#include "verbs/rc_connect.h"

#include <sys/random.h>

#include <algorithm>
#include <string>

namespace qpgate::verbs {

std::uint32_t random_psn() {
  std::uint32_t v = 0;
  // getrandom of 4 bytes from the urandom pool cannot be short or block after boot.
  if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) v = 0x5a5a5a;
  return v & 0xFFFFFFu;
}

namespace {

Status step(QueuePair& qp, const QpAttr& attr, QpAttrMaskFlags mask, const char* transition) {
  Status s = qp.modify(attr, mask);
  if (s.ok()) return s;
  return Error{s.code(), std::string{transition} + ": " + std::string{s.message()}};
}

}  // namespace

bool peer_holds_acks(const RcParams& local, const RcPeer& peer) {
  if (peer.ack_hold_ns <= 0 || local.timeout == 0) return false;  // timeout 0: we never resend on a timer
  const double ack_timeout_ns = 4096.0 * static_cast<double>(std::uint64_t{1} << std::min<std::uint8_t>(local.timeout, 31));
  return static_cast<double>(peer.ack_hold_ns) * 16 <= ack_timeout_ns;
}

Status connect_rc(QueuePair& qp, const RcParams& local, const RcPeer& peer) {
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = local.access;
  if (Status s = step(qp, a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS,
                      "RESET→INIT");
      !s.ok())
    return s;

  a.qp_state = QpState::RTR;
  a.path_mtu = static_cast<Mtu>(std::min(static_cast<std::uint8_t>(local.mtu), static_cast<std::uint8_t>(peer.mtu)));
  a.dest_qp_num = peer.qpn & 0xFFFFFFu;
  a.rq_psn = peer.psn & 0xFFFFFFu;
  a.ah_attr.dgid = peer.gid;
  a.ah_attr.sgid_index = local.sgid_index;
  a.ah_attr.hop_limit = local.hop_limit;
  a.ah_attr.traffic_class = local.traffic_class;
  a.max_dest_rd_atomic = local.max_dest_rd_atomic;
  a.min_rnr_timer = local.min_rnr_timer;
  if (Status s = step(qp, a,
                      QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
                          QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER,
                      "INIT→RTR");
      !s.ok())
    return s;

  a.qp_state = QpState::RTS;
  a.sq_psn = local.psn & 0xFFFFFFu;
  a.timeout = local.timeout;
  a.retry_cnt = local.retry_cnt;
  a.rnr_retry = local.rnr_retry;
  a.max_rd_atomic = local.max_rd_atomic;
  QpAttrMaskFlags mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT |
                         QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC;
  if (arms_alternate(local, peer)) {
    a.alt_ah_attr = a.ah_attr;
    a.alt_ah_attr.dgid = *peer.alt_gid;
    a.alt_ah_attr.sgid_index = *local.alt_sgid_index;
    a.alt_port_num = 1;
    a.alt_pkey_index = 0;
    a.alt_timeout = local.timeout;
    a.path_mig_state = MigState::REARM;
    mask |= QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE;
  }
  if (Status s = step(qp, a, mask, "RTR→RTS"); !s.ok()) return s;
  // An offer, not a requirement: a backend without it (ibv) asks per message.
  if (peer_holds_acks(local, peer)) (void)qp.set_ack_requests(AckRequests::WINDOW);
  return Status{};
}

Result<bool> rearm_rc(QueuePair& qp, const Device& device, const RcParams& local, const RcPeer& peer) {
  if (!arms_alternate(local, peer)) return false;
  Result<QpAttr> now = qp.query();
  if (!now.ok()) return now.error();
  if (now->qp_state != QpState::RTS || now->path_mig_state != MigState::MIGRATED) return false;
  const bool on_alternate = now->ah_attr.dgid == *peer.alt_gid;
  const std::uint8_t left_sgid = on_alternate ? local.sgid_index : *local.alt_sgid_index;
  if (!device.gid_link_up(1, left_sgid)) return false;
  QpAttr a;
  a.alt_ah_attr = now->ah_attr;
  a.alt_ah_attr.dgid = on_alternate ? peer.gid : *peer.alt_gid;
  a.alt_ah_attr.sgid_index = left_sgid;
  a.alt_port_num = 1;
  a.alt_pkey_index = 0;
  a.alt_timeout = local.timeout;
  a.path_mig_state = MigState::REARM;
  if (Status s = qp.modify(a, QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE); !s.ok()) {
    return Error{s.error().code, "re-arm (ALT_PATH, PATH_MIG_STATE REARM): " + s.error().message};
  }
  return true;
}

}  // namespace qpgate::verbs
