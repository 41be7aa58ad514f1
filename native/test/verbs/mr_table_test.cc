// The MR table: CSPRNG keys, and the rkey/lkey checks that keep a session
// inside the regions it was given.
#include "verbs/soft/mr_table.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

namespace qpgate::verbs::soft {
namespace {

constexpr std::uint32_t kPd = 1;
constexpr std::uint32_t kOtherPd = 2;
const AccessFlags kRemoteAll = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;

class MrTableTest : public ::testing::Test {
 protected:
  std::uint64_t addr() const { return reinterpret_cast<std::uintptr_t>(buf_.data()); }
  MrEntry reg(AccessFlags access, std::uint32_t pd = kPd) {
    auto r = table_.register_mr(pd, addr(), buf_.size(), access);
    EXPECT_TRUE(r.ok()) << r.message();
    return *r;
  }
  alignas(8) std::array<std::uint8_t, 4096> buf_{};
  MrTable table_;
};

TEST_F(MrTableTest, RkeysAreRandomAndDistinct) {
  std::set<std::uint32_t> keys;
  std::vector<std::uint32_t> rkeys;
  for (int i = 0; i < 2000; ++i) {
    const MrEntry e = reg(kRemoteAll);
    EXPECT_NE(e.lkey, e.rkey);
    EXPECT_NE(e.lkey, 0u);
    EXPECT_NE(e.rkey, 0u);
    keys.insert(e.lkey);
    keys.insert(e.rkey);
    rkeys.push_back(e.rkey);
  }
  EXPECT_EQ(keys.size(), 4000u) << "every lkey and rkey is distinct from every other";
  // Not sequential: about half of successive rkeys go up, half go down, and no
  // constant stride links them.
  int up = 0;
  int same_stride = 0;
  for (std::size_t i = 1; i < rkeys.size(); ++i) {
    up += rkeys[i] > rkeys[i - 1] ? 1 : 0;
    if (i >= 2 && rkeys[i] - rkeys[i - 1] == rkeys[i - 1] - rkeys[i - 2]) ++same_stride;
  }
  EXPECT_GT(up, 800);
  EXPECT_LT(up, 1200);
  EXPECT_LT(same_stride, 5);
}

TEST(MrTableKeys, KeysInUseAreNeverHandedOutAgainEvenByARepeatingRandomSource) {
  // A broken source cycling through 1, 2, 3: the first region takes two of
  // them; the second cannot get two fresh, distinct keys and must fail
  // rather than share one.
  std::uint32_t next = 0;
  KeyGenerator keys([&next](void* out, std::size_t n) {
    auto* p = static_cast<std::uint32_t*>(out);
    for (std::size_t i = 0; i < n / 4; ++i) p[i] = (next++ % 3) + 1;
    return true;
  });
  MrTable table(MrTableLimits{}, std::move(keys));
  alignas(8) std::uint8_t buf[64] = {};
  const auto a = reinterpret_cast<std::uintptr_t>(buf);
  auto first = table.register_mr(kPd, a, sizeof buf, Access::LOCAL_WRITE);
  ASSERT_TRUE(first.ok());
  auto second = table.register_mr(kPd, a, sizeof buf, Access::LOCAL_WRITE);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), EIO);
  EXPECT_EQ(table.size(), 1u);
  ASSERT_TRUE(table.deregister(first->lkey).ok());
  EXPECT_TRUE(table.register_mr(kPd, a, sizeof buf, Access::LOCAL_WRITE).ok()) << "keys are free again";
}

TEST(MrTableKeys, AFailingRandomSourceFailsRegistrationWithEio) {
  MrTable table(MrTableLimits{}, KeyGenerator([](void*, std::size_t) { return false; }));
  std::uint8_t b[8];
  auto r = table.register_mr(kPd, reinterpret_cast<std::uintptr_t>(b), sizeof b, Access::LOCAL_WRITE);
  EXPECT_EQ(r.code(), EIO);
}

TEST_F(MrTableTest, AWriteInsideTheRegionIsAllowedAndPointsAtTheRightByte) {
  const MrEntry e = reg(kRemoteAll);
  const MrAccess a = table_.check_remote(kPd, e.rkey, addr() + 100, 28, Access::REMOTE_WRITE);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.data, buf_.data() + 100);
  EXPECT_EQ(a.mr->rkey, e.rkey);
  EXPECT_TRUE(table_.check_remote(kPd, e.rkey, addr(), buf_.size(), Access::REMOTE_WRITE).ok()) << "the whole region";
  EXPECT_TRUE(table_.check_remote(kPd, e.rkey, addr() + buf_.size() - 1, 1, Access::REMOTE_WRITE).ok())
      << "the last byte";
}

TEST_F(MrTableTest, AWritePastTheEndOfTheRegionIsRefusedAsOutOfBounds) {
  const MrEntry e = reg(kRemoteAll);
  const MrAccess a = table_.check_remote(kPd, e.rkey, addr() + buf_.size() - 8, 9, Access::REMOTE_WRITE);
  EXPECT_EQ(a.check, MrCheck::OUT_OF_BOUNDS);
  EXPECT_EQ(a.data, nullptr);
  EXPECT_EQ(remote_wc_status(a.check), WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_FALSE(remote_nak_is_invalid_request(a.check));
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, addr() - 1, 4, Access::REMOTE_WRITE).check, MrCheck::OUT_OF_BOUNDS)
      << "before the start";
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, addr() + buf_.size(), 1, Access::REMOTE_WRITE).check,
            MrCheck::OUT_OF_BOUNDS)
      << "one past the end";
}

TEST_F(MrTableTest, LengthsThatWouldWrapTheAddressSpaceAreOutOfBoundsNotWrapped) {
  const MrEntry e = reg(kRemoteAll);
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, addr() + 16, UINT64_MAX, Access::REMOTE_READ).check,
            MrCheck::OUT_OF_BOUNDS);
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, UINT64_MAX - 3, 8, Access::REMOTE_READ).check, MrCheck::OUT_OF_BOUNDS);
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, addr() + 8, UINT64_MAX - 7, Access::REMOTE_READ).check,
            MrCheck::OUT_OF_BOUNDS);
}

TEST_F(MrTableTest, AnUnknownOrDeregisteredRkeyIsInvalid) {
  const MrEntry e = reg(kRemoteAll);
  EXPECT_EQ(table_.check_remote(kPd, e.lkey, addr(), 8, Access::REMOTE_READ).check, MrCheck::INVALID_KEY)
      << "an lkey is not an rkey";
  EXPECT_EQ(table_.check_remote(kPd, e.rkey ^ 1u, addr(), 8, Access::REMOTE_READ).check, MrCheck::INVALID_KEY);
  ASSERT_TRUE(table_.deregister(e.lkey).ok());
  EXPECT_EQ(table_.check_remote(kPd, e.rkey, addr(), 8, Access::REMOTE_READ).check, MrCheck::INVALID_KEY);
  EXPECT_EQ(table_.check_local(kPd, e.lkey, addr(), 8, false).check, MrCheck::INVALID_KEY);
  EXPECT_EQ(table_.deregister(e.lkey).code(), ENOENT);
}

TEST_F(MrTableTest, ARegionOfAnotherPdIsOutOfReachEvenWithItsRkey) {
  const MrEntry e = reg(kRemoteAll, kOtherPd);
  const MrAccess a = table_.check_remote(kPd, e.rkey, addr(), 8, Access::REMOTE_READ);
  EXPECT_EQ(a.check, MrCheck::PD_MISMATCH);
  EXPECT_EQ(remote_wc_status(a.check), WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(table_.check_atomic(kPd, e.rkey, addr()).check, MrCheck::PD_MISMATCH);
  EXPECT_EQ(table_.check_local(kPd, e.lkey, addr(), 8, false).check, MrCheck::PD_MISMATCH);
}

TEST_F(MrTableTest, ARegionGrantsOnlyTheAccessItWasRegisteredWith) {
  const MrEntry ro = reg(Access::REMOTE_READ);
  EXPECT_TRUE(table_.check_remote(kPd, ro.rkey, addr(), 8, Access::REMOTE_READ).ok());
  EXPECT_EQ(table_.check_remote(kPd, ro.rkey, addr(), 8, Access::REMOTE_WRITE).check, MrCheck::ACCESS_DENIED);
  EXPECT_EQ(table_.check_atomic(kPd, ro.rkey, addr()).check, MrCheck::ACCESS_DENIED);
  EXPECT_EQ(table_.check_local(kPd, ro.lkey, addr(), 8, true).check, MrCheck::ACCESS_DENIED)
      << "a receive into it needs LOCAL_WRITE";
  EXPECT_TRUE(table_.check_local(kPd, ro.lkey, addr(), 8, false).ok()) << "sending from it does not";
  const MrEntry local = reg(Access::LOCAL_WRITE);
  EXPECT_EQ(table_.check_remote(kPd, local.rkey, addr(), 8, Access::REMOTE_READ).check, MrCheck::ACCESS_DENIED);
}

TEST_F(MrTableTest, AnAtomicOnAMisalignedAddressIsRefused) {
  const MrEntry e = reg(kRemoteAll);
  const MrAccess a = table_.check_atomic(kPd, e.rkey, addr() + 4);
  EXPECT_EQ(a.check, MrCheck::MISALIGNED_ATOMIC);
  EXPECT_TRUE(remote_nak_is_invalid_request(a.check)) << "rxe and the IBA answer NAK invalid request";
  EXPECT_EQ(remote_wc_status(a.check), WcStatus::IBV_WC_REM_INV_REQ_ERR);
  const MrAccess ok = table_.check_atomic(kPd, e.rkey, addr() + 8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.data, buf_.data() + 8);
}

TEST_F(MrTableTest, AnAtomicMustFitEntirelyInsideTheRegion) {
  const MrEntry e = reg(kRemoteAll);
  EXPECT_TRUE(table_.check_atomic(kPd, e.rkey, addr() + buf_.size() - 8).ok()) << "the last word";
  EXPECT_EQ(table_.check_atomic(kPd, e.rkey, addr() + buf_.size()).check, MrCheck::OUT_OF_BOUNDS);
  EXPECT_EQ(table_.check_atomic(kPd, e.rkey ^ 0x10u, addr()).check, MrCheck::INVALID_KEY);
}

TEST_F(MrTableTest, AZeroLengthReadOrWriteNeedsNoValidRkey) {
  const MrAccess a = table_.check_remote(kPd, 0xdeadbeef, 0, 0, Access::REMOTE_WRITE);
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a.mr, nullptr);
  EXPECT_EQ(a.data, nullptr);
}

TEST_F(MrTableTest, RegistrationRefusesWhatIbvRegMrRefuses) {
  EXPECT_EQ(table_.register_mr(kPd, addr(), 0, Access::LOCAL_WRITE).code(), EINVAL) << "length 0";
  EXPECT_EQ(table_.register_mr(kPd, UINT64_MAX - 10, 100, Access::LOCAL_WRITE).code(), EINVAL) << "wraps";
  const auto rw = table_.register_mr(kPd, addr(), 64, AccessFlags(Access::REMOTE_WRITE));
  EXPECT_EQ(rw.code(), EINVAL);
  EXPECT_EQ(rw.message(), "reg_mr: IBV_ACCESS_REMOTE_WRITE and IBV_ACCESS_REMOTE_ATOMIC require IBV_ACCESS_LOCAL_WRITE");
  EXPECT_EQ(table_.register_mr(kPd, addr(), 64, AccessFlags(Access::REMOTE_ATOMIC)).code(), EINVAL);
  EXPECT_EQ(table_.register_mr(kPd, addr(), 64, AccessFlags::from_bits(0x40)).code(), EINVAL) << "unknown bit";
  EXPECT_TRUE(table_.register_mr(kPd, addr(), 64, AccessFlags(Access::REMOTE_READ)).ok()) << "read needs no local write";
}

TEST(MrTableLimits, RegisteringBeyondMaxMrIsEnomem) {
  MrTable table(MrTableLimits{2, 1u << 20});
  std::uint8_t b[16];
  const auto a = reinterpret_cast<std::uintptr_t>(b);
  ASSERT_TRUE(table.register_mr(kPd, a, 16, Access::LOCAL_WRITE).ok());
  ASSERT_TRUE(table.register_mr(kPd, a, 16, Access::LOCAL_WRITE).ok());
  EXPECT_EQ(table.register_mr(kPd, a, 16, Access::LOCAL_WRITE).code(), ENOMEM);
}

TEST(MrCheckNames, EveryRefusalHasACounterName) {
  EXPECT_EQ(mr_check_name(MrCheck::OUT_OF_BOUNDS), "out_of_bounds");
  EXPECT_EQ(mr_check_name(MrCheck::MISALIGNED_ATOMIC), "misaligned_atomic");
  EXPECT_EQ(local_wc_status(MrCheck::INVALID_KEY), WcStatus::IBV_WC_LOC_PROT_ERR);
}

}  // namespace
}  // namespace qpgate::verbs::soft
