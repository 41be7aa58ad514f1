#include "orders/risk_region.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace qpgate::orders {

const RiskRegionLayout kRiskRegionLayout = {
    kRiskRegionBytes,
    {{
        {"remote_owned", 0, kRiskPageBytes, kRemoteOwnedAccess},
        {"local_owned", kRiskPageBytes, kRiskPageBytes, kLocalOwnedAccess},
    }},
    {{
        {"credit_limit", RemoteOwnedWords::kCreditLimit, 8, WordOwner::kRemote,
         "u64 max open notional (price mantissa x lots); orders that would exceed it are rejected CREDIT_LIMIT"},
        {"kill_switch", RemoteOwnedWords::kKillSwitch, 8, WordOwner::kRemote,
         "u64 non-zero = the account is killed: new orders and replaces are rejected KILL_SWITCH"},
        {"version", kRiskPageBytes + LocalOwnedWords::kVersion, 8, WordOwner::kLocal,
         "u64 seqlock: odd while the gateway updates this page; re-read if it changed or is odd"},
        {"position", kRiskPageBytes + LocalOwnedWords::kPosition, 8, WordOwner::kLocal,
         "i64 filled buys minus sells, lots"},
        {"open_notional", kRiskPageBytes + LocalOwnedWords::kOpenNotional, 8, WordOwner::kLocal,
         "u64 sum of limit price x open quantity over open orders"},
        {"open_orders", kRiskPageBytes + LocalOwnedWords::kOpenOrders, 8, WordOwner::kLocal,
         "u64 orders accepted and not yet filled or cancelled"},
        {"traded_notional", kRiskPageBytes + LocalOwnedWords::kTradedNotional, 8, WordOwner::kLocal,
         "u64 sum of execution price x quantity"},
        {"durable_credit_limit", kRiskPageBytes + LocalOwnedWords::kDurableCreditLimit, 8, WordOwner::kLocal,
         "u64 credit_limit as the journal holds it durably: the value a gateway restart comes back with"},
        {"durable_kill_switch", kRiskPageBytes + LocalOwnedWords::kDurableKillSwitch, 8, WordOwner::kLocal,
         "u64 kill_switch as the journal holds it durably: the value a gateway restart comes back with"},
    }},
};

void RiskRegion::FreeDeleter::operator()(std::byte* p) const noexcept { std::free(p); }

RiskRegion::RiskRegion(std::uint64_t account, std::uint64_t credit_limit) : account_(account) {
  void* p = std::aligned_alloc(kRiskPageBytes, kRiskRegionBytes);
  if (p == nullptr) throw std::bad_alloc{};
  std::memset(p, 0, kRiskRegionBytes);
  base_.reset(static_cast<std::byte*>(p));
  // Before the region is registered: no remote writer exists yet. With no
  // record in the journal, the configured limit is what a restart comes back with.
  store(RemoteOwnedWords::kCreditLimit, credit_limit);
  store(kRiskPageBytes + LocalOwnedWords::kDurableCreditLimit, credit_limit);
}

void RiskRegion::set_durable(std::uint64_t credit_limit, std::uint64_t kill_switch) noexcept {
  constexpr std::size_t L = kRiskPageBytes;
  const std::uint64_t v = load(L + LocalOwnedWords::kVersion);
  store(L + LocalOwnedWords::kVersion, v + 1);
  std::atomic_thread_fence(std::memory_order_release);
  store(L + LocalOwnedWords::kDurableCreditLimit, credit_limit);
  store(L + LocalOwnedWords::kDurableKillSwitch, kill_switch);
  store(L + LocalOwnedWords::kVersion, v + 2);
}

std::uint64_t* RiskRegion::word(std::size_t offset) const noexcept {
  return std::launder(reinterpret_cast<std::uint64_t*>(base_.get() + offset));
}

void RiskRegion::local_update(std::int64_t position_delta, std::int64_t open_notional_delta,
                              std::int64_t open_orders_delta, std::uint64_t traded_notional_delta) noexcept {
  constexpr std::size_t L = kRiskPageBytes;
  const std::uint64_t v = load(L + LocalOwnedWords::kVersion);
  store(L + LocalOwnedWords::kVersion, v + 1);
  std::atomic_thread_fence(std::memory_order_release);
  store(L + LocalOwnedWords::kPosition, load(L + LocalOwnedWords::kPosition) + static_cast<std::uint64_t>(position_delta));
  store(L + LocalOwnedWords::kOpenNotional,
        load(L + LocalOwnedWords::kOpenNotional) + static_cast<std::uint64_t>(open_notional_delta));
  store(L + LocalOwnedWords::kOpenOrders, load(L + LocalOwnedWords::kOpenOrders) + static_cast<std::uint64_t>(open_orders_delta));
  store(L + LocalOwnedWords::kTradedNotional, load(L + LocalOwnedWords::kTradedNotional) + traded_notional_delta);
  store(L + LocalOwnedWords::kVersion, v + 2);
}

RiskRegion& RiskRegistry::add(std::uint64_t account, std::uint64_t credit_limit) {
  auto& slot = regions_[account];
  slot = std::make_unique<RiskRegion>(account, credit_limit);
  return *slot;
}

}  // namespace qpgate::orders
