// The risk-region memory regions one session may reach, registered in that
// session's own protection domain so that an rkey handed to one session is
// worthless on any other QP (an rkey is checked against the PD of the QP it
// arrives on), and a session reaches only the accounts it is entitled to.
//
// Exactly the access risk_region.h documents:
//   risk session, per account:    "risk.remote" page: REMOTE_ATOMIC | REMOTE_READ (| LOCAL_WRITE,
//                                 which ibv_reg_mr requires with REMOTE_ATOMIC)
//                                 "risk.local" page:  REMOTE_READ
//   trading session, per account: "risk.local" page:  REMOTE_READ
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "orders/risk_region.h"
#include "verbs/device.h"

namespace qpgate::orders {

enum class SessionRole : std::uint8_t { kTrading, kRisk };

struct RegionGrant {
  std::string name;        // "risk.remote" or "risk.local"
  std::uint64_t account = 0;
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t rkey = 0;
  verbs::AccessFlags access;  // the MR's flags (LOCAL_WRITE included where registered)
};

class RiskGrants {
 public:
  // Registers the pages of `accounts` in `pd`; an account the registry does
  // not know is an error naming it (EINVAL).
  static verbs::Result<RiskGrants> grant(verbs::ProtectionDomain& pd, RiskRegistry& risk, SessionRole role,
                                         std::span<const std::uint64_t> accounts);

  const std::vector<RegionGrant>& regions() const noexcept { return grants_; }

 private:
  std::vector<RegionGrant> grants_;
  std::vector<std::unique_ptr<verbs::MemoryRegion>> mrs_;
};

// The QP access flags of a session's QP (the MRs in its PD decide what it reaches).
verbs::AccessFlags qp_access_for(SessionRole role) noexcept;

}  // namespace qpgate::orders
