#include "orders/risk_grants.h"

#include <cerrno>

namespace qpgate::orders {

namespace {

verbs::AccessFlags to_flags(std::uint32_t bits) {
  return verbs::AccessFlags::from_bits(bits);
}

}  // namespace

verbs::AccessFlags qp_access_for(SessionRole) noexcept {
  // LOCAL_WRITE: receives land in our buffers. REMOTE_READ | REMOTE_ATOMIC on
  // every session's QP, trading ones too: what a session may touch is decided
  // by the memory regions in its own PD (a trading session's are REMOTE_READ
  // only), so an atomic from a trading client fails the MR check and gets
  // the remote access error (NAK 0x62) the issue asks for, rather than the
  // invalid-request NAK a QP without atomic access answers. Either way the
  // responder's QP goes to ERR (class C) and cancel-on-disconnect applies.
  return verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_READ | verbs::Access::REMOTE_ATOMIC;
}

verbs::Result<RiskGrants> RiskGrants::grant(verbs::ProtectionDomain& pd, RiskRegistry& risk, SessionRole role,
                                            std::span<const std::uint64_t> accounts) {
  RiskGrants g;
  auto add = [&](const char* name, std::uint64_t account, std::span<std::byte> page,
                 std::uint32_t access) -> verbs::Status {
    auto mr = pd.reg_mr(page.data(), page.size(), to_flags(access));
    if (!mr.ok()) {
      return verbs::Error{mr.error().code, std::string{name} + " page of account " + std::to_string(account) + ": " +
                                               mr.error().message};
    }
    g.grants_.push_back(RegionGrant{name, account, (*mr)->addr(), static_cast<std::uint32_t>((*mr)->length()),
                                    (*mr)->rkey(), (*mr)->access()});
    g.mrs_.push_back(std::move(*mr));
    return {};
  };
  for (const std::uint64_t account : accounts) {
    RiskRegion* r = risk.find(account);
    if (r == nullptr) return verbs::Error{EINVAL, "account " + std::to_string(account) + " is not configured"};
    if (role == SessionRole::kRisk) {
      if (auto s = add("risk.remote", account, r->remote_owned_page(), kRemoteOwnedAccess); !s.ok()) return s.error();
    }
    if (auto s = add("risk.local", account, r->local_owned_page(), kLocalOwnedAccess); !s.ok()) return s.error();
  }
  return g;
}

}  // namespace qpgate::orders
