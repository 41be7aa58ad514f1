#include "verbs/rc_path.h"

namespace qpgate::verbs {

std::string_view active_path_name(ActivePath p) { return p == ActivePath::kAlternate ? "alternate" : "primary"; }

RcPathInfo rc_path_info(const QueuePair& qp, const RcPeer& peer, bool armed) {
  RcPathInfo info;
  info.has_alternate = armed;
  info.migrations = qp.path_migrations();
  if (!armed) return info;
  Result<QpAttr> a = qp.query();
  if (!a.ok()) return info;
  info.mig_state = a->path_mig_state;
  if (peer.alt_gid && a->ah_attr.dgid == *peer.alt_gid) info.active = ActivePath::kAlternate;
  return info;
}

}  // namespace qpgate::verbs
