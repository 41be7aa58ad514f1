// Which of its two paths a connected RC QP runs on, for the sessions'
// reports (/v1/sessions, qpgate sessions): the primary path is the one to the
// peer's GID, the alternate the one to its alternate GID (connect_rc armed
// it when both ends gave one: docs/protocol.md §1.10). A migration swaps the
// QP's paths (soft_apm.cc), so the active path is read from its ah_attr.
#pragma once

#include <cstdint>
#include <string_view>

#include "verbs/device.h"
#include "verbs/rc_connect.h"

namespace qpgate::verbs {

enum class ActivePath : std::uint8_t { kPrimary, kAlternate };
std::string_view active_path_name(ActivePath p);  // "primary", "alternate"

struct RcPathInfo {
  bool has_alternate = false;  // the peer gave an alternate GID and we armed ours
  MigState mig_state = MigState::MIGRATED;
  ActivePath active = ActivePath::kPrimary;
  std::uint64_t migrations = 0;  // QueuePair::path_migrations
};

// `armed`: connect_rc loaded the alternate path (arms_alternate).
RcPathInfo rc_path_info(const QueuePair& qp, const RcPeer& peer, bool armed);

}  // namespace qpgate::verbs
