// The risk region: page layout for two MRs, remote-owned words only loaded by
// the CPU, local-owned words under a seqlock.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "orders/risk_region.h"

namespace qpgate::orders {
namespace {

TEST(RiskRegion, TwoPageAlignedPagesOneAllocation) {
  RiskRegion r{1, 500};
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r.remote_owned_page().data()) % kRiskPageBytes, 0u);
  EXPECT_EQ(r.local_owned_page().data(), r.remote_owned_page().data() + kRiskPageBytes) << "contiguous";
  EXPECT_EQ(r.local_owned_page().size(), kRiskPageBytes);
  EXPECT_EQ(r.credit_limit(), 500u);
  EXPECT_FALSE(r.killed());
}

TEST(RiskRegion, LayoutDescribesEveryWordWithItsOwnerAndAccess) {
  const RiskRegionLayout& l = kRiskRegionLayout;
  EXPECT_EQ(l.pages[0].access, kAccessRemoteAtomic | kAccessRemoteRead | kAccessLocalWrite);
  EXPECT_EQ(l.pages[1].access, kAccessRemoteRead) << "local-owned: remote READ only";
  for (const RiskWordInfo& w : l.words) {
    SCOPED_TRACE(std::string{w.name});
    EXPECT_EQ(w.offset % 8, 0u) << "atomics need 8-byte alignment";
    EXPECT_EQ(w.size, 8u);
    const std::size_t page = w.offset / kRiskPageBytes;
    EXPECT_EQ(page, w.owner == WordOwner::kRemote ? 0u : 1u) << "remote-owned and local-owned words never share a page";
  }
}

TEST(RiskRegion, RemoteAtomicsAreSeenByTheNextLoad) {
  RiskRegion r{1, 500};
  std::atomic_ref<std::uint64_t> kill{*r.remote_word(RemoteOwnedWords::kKillSwitch)};
  std::uint64_t zero = 0;
  EXPECT_TRUE(kill.compare_exchange_strong(zero, 1));
  EXPECT_TRUE(r.killed());
  std::atomic_ref<std::uint64_t>{*r.remote_word(RemoteOwnedWords::kCreditLimit)}.fetch_add(250);
  EXPECT_EQ(r.credit_limit(), 750u);
}

TEST(RiskRegion, LocalUpdatesBumpTheSeqlockByTwo) {
  RiskRegion r{1, 0};
  r.local_update(5, 100, 1, 40);
  r.local_update(-2, -30, 0, 10);
  EXPECT_EQ(r.version(), 4u);
  EXPECT_EQ(r.position(), 3);
  EXPECT_EQ(r.open_notional(), 70u);
  EXPECT_EQ(r.traded_notional(), 50u);
}

}  // namespace
}  // namespace qpgate::orders
