// Automatic path migration of a connected SoftQp (IBA 17.2.8; the
// attributes of ibv_modify_qp(3): IBV_QP_ALT_PATH, IBV_QP_PATH_MIG_STATE).
//
// A soft path is a UDP 4-tuple: the local address its sgid_index names
// (the device's GID table, path_nets.h) and the peer's address in its dgid.
//
//   MIGRATED --ALT_PATH + REARM (or ARMED)--> ARMED   the alternate path is
//            loaded at once, so REARM becomes ARMED in the same modify
//   ARMED --primary path's retry_cnt exhausted--> MIGRATED  the requester
//            moves to the alternate path and resends from the oldest
//            unacknowledged PSN there (comp.cc), IBV_EVENT_PATH_MIG
//   ARMED --a packet with MigReq = 1 on the alternate path--> MIGRATED
//            the peer migrated: follow it, IBV_EVENT_PATH_MIG, and resend
//            what is unacknowledged on the new path at once, with a whole
//            retry_cnt (comp.cc)
//   ARMED --modify PATH_MIG_STATE = MIGRATED--> MIGRATED  a migration the
//            consumer asks for (no event: it knows)
//   MIGRATED after a failure, retries exhausted again: IBV_EVENT_PATH_MIG_ERR,
//            then the QP fails as without APM (IBV_WC_RETRY_EXC_ERR, ERR)
// MigReq (BTH): 1 on every packet from a migration until the QP is armed
// again, which is what tells an ARMED peer to follow (IBA 17.2.8); 0 on the
// packets of a QP that never migrated, as rxe sends them (the IBA would
// have 1 in MIGRATED; no receiver we know of looks at it outside ARMED).
// Migrating swaps the paths: the alternate becomes the primary (what
// query() reports as ah_attr), and the old primary needs a new ALT_PATH
// and REARM before the QP can migrate again.
#include <string>

#include "verbs/soft/comp.h"
#include "verbs/soft/soft_qp.h"

namespace qpgate::verbs::soft {

Status SoftQp::check_mig_request(const QpAttr& attr, QpAttrMaskFlags mask) const {
  if (!mask.has(QpAttrMask::PATH_MIG_STATE) && !mask.has(QpAttrMask::ALT_PATH)) return {};
  if (type_ == QpType::UD) return {};  // the state machine already refused both for UD
  if (mask.has(QpAttrMask::ALT_PATH) && attr.alt_port_num != 1) {
    return Error{EINVAL, "IBV_QP_ALT_PATH: alt_port_num " + std::to_string(attr.alt_port_num) +
                             " does not exist (the soft device has port 1)"};
  }
  if (!mask.has(QpAttrMask::PATH_MIG_STATE)) return {};
  const MigState want = attr.path_mig_state;
  if (want != MigState::MIGRATED && !alt_loaded_ && !mask.has(QpAttrMask::ALT_PATH)) {
    return Error{EINVAL, "IBV_QP_PATH_MIG_STATE: " + std::string(mig_state_name(want)) +
                             " needs an alternate path: give IBV_QP_ALT_PATH (a migration used the last one)"};
  }
  return {};
}

void SoftQp::apply_mig_request(const QpAttr& attr, QpAttrMaskFlags mask) {
  if (mask.has(QpAttrMask::ALT_PATH)) alt_loaded_ = true;
  if (!mask.has(QpAttrMask::PATH_MIG_STATE)) return;
  switch (attr.path_mig_state) {
    case MigState::REARM:
    case MigState::ARMED:
      attr_.path_mig_state = MigState::ARMED;
      failed_over_ = false;
      mig_req_ = false;
      break;
    case MigState::MIGRATED:
      if (attr_.path_mig_state == MigState::ARMED) {
        migrate(false);
        return;
      }
      attr_.path_mig_state = MigState::MIGRATED;
      break;
  }
}

// The alternate path becomes the primary one.
void SoftQp::migrate(bool on_failure) {
  std::swap(attr_.ah_attr, attr_.alt_ah_attr);
  std::swap(attr_.pkey_index, attr_.alt_pkey_index);
  std::swap(attr_.port_num, attr_.alt_port_num);
  std::swap(attr_.timeout, attr_.alt_timeout);
  attr_.path_mig_state = MigState::MIGRATED;
  alt_loaded_ = false;
  failed_over_ = on_failure;
  mig_req_ = true;
  counters_.path_migrations.inc();
  raise(EventType::PATH_MIG);
}

// The peer migrated, so our path is dead too: follow it, and resend what
// the old path swallowed at once, with the new path's full retry budget.
void SoftQp::follow_migration() {
  migrate(false);
  comp_->on_followed_migration(now_ns_);
}

bool SoftQp::accepts_peer(const wire::IpAddress& source) const {
  const std::optional<wire::IpAddress> peer = peer_address();
  if (!peer) return false;
  if (*peer == source) return true;
  return attr_.path_mig_state == MigState::ARMED && ip_from_gid(attr_.alt_ah_attr.dgid) == source;
}

bool SoftQp::arrived_on_alternate(const wire::Packet& pkt, const RxMeta& meta) const {
  if (attr_.path_mig_state != MigState::ARMED || !pkt.bth().mig_req()) return false;
  const AhAttr& alt = attr_.alt_ah_attr;
  return meta.flow.src == ip_from_gid(alt.dgid) && meta.flow.dst == source_ip(alt.sgid_index);
}

bool SoftQp::fail_over() {
  if (attr_.path_mig_state == MigState::ARMED) {
    migrate(true);
    return true;
  }
  if (failed_over_) {
    failed_over_ = false;
    raise(EventType::PATH_MIG_ERR);  // the alternate path failed too
  }
  return false;
}

}  // namespace qpgate::verbs::soft
