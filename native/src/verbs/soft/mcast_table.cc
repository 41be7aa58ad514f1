#include "verbs/soft/mcast_table.h"

#include <algorithm>
#include <string>

namespace qpgate::verbs::soft {

std::optional<Gid> mgid_for_ipv4_group(std::uint32_t group_host) {
  if (!ipv4_is_multicast(group_host)) return std::nullopt;
  return Gid::from_ipv4(group_host);
}

std::optional<std::uint32_t> ipv4_group_for_mgid(const Gid& mgid) {
  auto v4 = mgid.to_ipv4();
  if (!v4 || !ipv4_is_multicast(*v4)) return std::nullopt;
  return v4;
}

Result<AttachOutcome> McastTable::attach(const Gid& mgid, std::uint32_t qpn) {
  if (!mgid.is_multicast()) {
    return Error{EINVAL, "attach_mcast: " + mgid.to_string() +
                             " is not a multicast GID (expected ::ffff:224.0.0.0/100 or ff00::/8)"};
  }
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    if (groups_.size() >= max_groups_) {
      return Error{ENOMEM, "attach_mcast: " + std::to_string(max_groups_) + " groups already exist (max_mcast_grp)"};
    }
    groups_.emplace(mgid, std::vector<std::uint32_t>{qpn});
    return AttachOutcome::NEW_GROUP;
  }
  auto& v = it->second;
  if (std::find(v.begin(), v.end(), qpn) != v.end()) return AttachOutcome::ALREADY_ATTACHED;
  if (v.size() >= max_qp_per_group_) {
    return Error{ENOMEM, "attach_mcast: group " + mgid.to_string() + " already has " +
                             std::to_string(max_qp_per_group_) + " QPs (max_mcast_qp_attach)"};
  }
  v.push_back(qpn);
  return AttachOutcome::ATTACHED;
}

Result<DetachOutcome> McastTable::detach(const Gid& mgid, std::uint32_t qpn) {
  auto it = groups_.find(mgid);
  auto pos = it == groups_.end() ? std::vector<std::uint32_t>::iterator{}
                                 : std::find(it->second.begin(), it->second.end(), qpn);
  if (it == groups_.end() || pos == it->second.end()) {
    return Error{EINVAL, "detach_mcast: QP " + std::to_string(qpn) + " is not attached to " + mgid.to_string()};
  }
  it->second.erase(pos);
  if (it->second.empty()) {
    groups_.erase(it);
    return DetachOutcome::GROUP_EMPTY;
  }
  return DetachOutcome::DETACHED;
}

std::vector<Gid> McastTable::detach_all(std::uint32_t qpn) {
  std::vector<Gid> emptied;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), qpn), v.end());
    if (v.empty()) {
      emptied.push_back(it->first);
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
  return emptied;
}

std::span<const std::uint32_t> McastTable::qps(const Gid& mgid) const {
  auto it = groups_.find(mgid);
  if (it == groups_.end()) return {};
  return it->second;
}

std::span<const std::uint32_t> McastTable::qps_for_ipv4(std::uint32_t group_host) const {
  return qps(Gid::from_ipv4(group_host));
}

}  // namespace qpgate::verbs::soft
