// Multicast groups of the soft device: MGID → attached UD QPs.
//
// RoCEv2 over IPv4: group a.b.c.d has the MGID ::ffff:a.b.c.d (the kernel's
// cma_iboe_set_mgid for RoCEv2), and rxe matches an arriving packet's
// destination IP the same way. IPv6 MGIDs (ff00::/8) are kept verbatim.
// Attaching a QP twice is not an error and delivers one copy; at most 56 QPs
// per group and 8192 groups, as rxe (RXE_MAX_MCAST_QP_ATTACH, RXE_MAX_MCAST_GRP).
// attach/detach say when a group appears or disappears, so the network
// layer joins (IP_ADD_MEMBERSHIP) and leaves it exactly once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "verbs/error.h"
#include "verbs/gid.h"

namespace qpgate::verbs::soft {

inline constexpr std::uint32_t kMaxMcastGroups = 8192;
inline constexpr std::uint32_t kMaxMcastQpAttach = 56;

// ::ffff:a.b.c.d for an IPv4 multicast group (host order); nullopt if not 224.0.0.0/4.
std::optional<Gid> mgid_for_ipv4_group(std::uint32_t group_host);
// The IPv4 group of an IPv4-mapped multicast MGID.
std::optional<std::uint32_t> ipv4_group_for_mgid(const Gid& mgid);

enum class AttachOutcome : std::uint8_t {
  NEW_GROUP,         // the first QP of this group: join it on the network
  ATTACHED,          // added to a group already joined
  ALREADY_ATTACHED,  // no change
};
enum class DetachOutcome : std::uint8_t {
  GROUP_EMPTY,  // the last QP left: leave the group on the network
  DETACHED,
};

class McastTable {
 public:
  explicit McastTable(std::uint32_t max_groups = kMaxMcastGroups, std::uint32_t max_qp_per_group = kMaxMcastQpAttach)
      : max_groups_(max_groups), max_qp_per_group_(max_qp_per_group) {}

  // EINVAL: mgid not multicast. ENOMEM: group full (56 QPs) or too many groups.
  Result<AttachOutcome> attach(const Gid& mgid, std::uint32_t qpn);
  // EINVAL: the QP is not attached to mgid (as rxe).
  Result<DetachOutcome> detach(const Gid& mgid, std::uint32_t qpn);
  // Detaches qpn from every group (QP destroyed); returns the groups left empty.
  std::vector<Gid> detach_all(std::uint32_t qpn);

  // The QPs a packet to mgid fans out to (empty span if none).
  std::span<const std::uint32_t> qps(const Gid& mgid) const;
  std::span<const std::uint32_t> qps_for_ipv4(std::uint32_t group_host) const;
  std::size_t group_count() const { return groups_.size(); }

 private:
  std::uint32_t max_groups_;
  std::uint32_t max_qp_per_group_;
  std::map<Gid, std::vector<std::uint32_t>> groups_;
};

}  // namespace qpgate::verbs::soft
