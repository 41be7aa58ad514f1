// The per-account risk region that clients reach with RDMA atomics and READs.
//
// One page-aligned allocation of two pages per account, so each page can be
// registered as its own memory region with exactly the access it needs:
//
//   page 0, remote-owned: 8-byte aligned words changed only by remote atomics
//     (FETCH_ADD / CMP_SWAP from the account's risk session): the credit
//     limit, the kill switch. HCA atomics are atomic only against other HCA
//     atomics, so the CPU never read-modify-writes these words: it only loads
//     them (acquire). MR access: REMOTE_ATOMIC | REMOTE_READ | LOCAL_WRITE.
//     Their changes reach no code path by themselves, so the order handler
//     journals them (RecordType::kRiskWords) when it sees them, and a restart
//     restores them (OrderHandler::journal_risk_words).
//   page 1, local-owned: words the engine thread maintains (position, open
//     notional, ...), written with single-writer atomic stores, readable
//     remotely by RDMA READ. A seqlock `version` word (odd while an update is
//     in progress) lets a remote reader of several words detect a torn read.
//     MR access: REMOTE_READ only.
//
// Words are host byte order (little-endian here); atomics on the wire carry
// big-endian operands, which the HCA/soft responder converts.
// kRiskRegionLayout describes the words for the control plane, which serves
// it with the MR's address and rkey.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>

namespace qpgate::orders {

inline constexpr std::size_t kRiskPageBytes = 4096;
inline constexpr std::size_t kRiskRegionBytes = 2 * kRiskPageBytes;

// Access bits, numerically the same as ibv_access_flags.
enum RegionAccess : std::uint32_t {
  kAccessLocalWrite = 1,
  kAccessRemoteWrite = 2,
  kAccessRemoteRead = 4,
  kAccessRemoteAtomic = 8,
};
inline constexpr std::uint32_t kRemoteOwnedAccess = kAccessRemoteAtomic | kAccessRemoteRead | kAccessLocalWrite;
inline constexpr std::uint32_t kLocalOwnedAccess = kAccessRemoteRead;

// Word offsets inside each page.
struct RemoteOwnedWords {
  static constexpr std::size_t kCreditLimit = 0;  // u64: max open notional (price mantissa x lots); 0 = none allowed
  static constexpr std::size_t kKillSwitch = 8;   // u64: non-zero = every new order and replace is rejected
  static constexpr std::size_t kWords = 2;
};
struct LocalOwnedWords {
  static constexpr std::size_t kVersion = 0;         // u64 seqlock: odd while the engine updates the page
  static constexpr std::size_t kPosition = 8;        // i64: filled buys - sells, lots
  static constexpr std::size_t kOpenNotional = 16;   // u64: sum of limit price x open quantity of open orders
  static constexpr std::size_t kOpenOrders = 24;     // u64: orders accepted and not yet done
  static constexpr std::size_t kTradedNotional = 32; // u64: sum of execution price x quantity
  // The remote-owned words as the journal holds them durably: what a restart
  // comes back with. A risk client learns that its atomic's value is safe by
  // READing these (an atomic's ACK cannot say it: it leaves before the engine
  // has seen the word). Stored once the kRiskWords record is durable.
  static constexpr std::size_t kDurableCreditLimit = 40;  // u64
  static constexpr std::size_t kDurableKillSwitch = 48;   // u64
  static constexpr std::size_t kWords = 7;
};

enum class WordOwner : std::uint8_t { kRemote, kLocal };

struct RiskWordInfo {
  std::string_view name;
  std::size_t offset;  // from the start of the account's region
  std::size_t size;    // always 8
  WordOwner owner;
  std::string_view meaning;
};

struct RiskPageInfo {
  std::string_view name;
  std::size_t offset;
  std::size_t size;
  std::uint32_t access;  // RegionAccess bits for its MR
};

// What the control plane serves (with each page's address and rkey).
struct RiskRegionLayout {
  std::size_t region_bytes;
  std::array<RiskPageInfo, 2> pages;
  std::array<RiskWordInfo, RemoteOwnedWords::kWords + LocalOwnedWords::kWords> words;
};
extern const RiskRegionLayout kRiskRegionLayout;

class RiskRegion {
 public:
  RiskRegion(std::uint64_t account, std::uint64_t credit_limit);
  RiskRegion(const RiskRegion&) = delete;
  RiskRegion& operator=(const RiskRegion&) = delete;

  std::uint64_t account() const noexcept { return account_; }
  // For MR registration: the two pages.
  std::span<std::byte> remote_owned_page() noexcept { return {base_.get(), kRiskPageBytes}; }
  std::span<std::byte> local_owned_page() noexcept { return {base_.get() + kRiskPageBytes, kRiskPageBytes}; }
  std::uint64_t* remote_word(std::size_t offset) noexcept { return word(offset); }
  std::uint64_t* local_word(std::size_t offset) noexcept { return word(kRiskPageBytes + offset); }

  // Remote-owned: loads only.
  std::uint64_t credit_limit() const noexcept { return load(RemoteOwnedWords::kCreditLimit); }
  bool killed() const noexcept { return load(RemoteOwnedWords::kKillSwitch) != 0; }
  std::uint64_t kill_switch() const noexcept { return load(RemoteOwnedWords::kKillSwitch); }
  // Puts back journaled values of the remote-owned words (journal replay at
  // open). The one CPU store to that page: safe only before any session has
  // registered it for remote atomics, which replay is (no session exists yet).
  void restore_remote_words(std::uint64_t credit_limit, std::uint64_t kill_switch) noexcept {
    store(RemoteOwnedWords::kCreditLimit, credit_limit);
    store(RemoteOwnedWords::kKillSwitch, kill_switch);
  }

  // Local-owned: the engine thread is the only writer.
  std::int64_t position() const noexcept { return static_cast<std::int64_t>(load(kRiskPageBytes + LocalOwnedWords::kPosition)); }
  std::uint64_t open_notional() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kOpenNotional); }
  std::uint64_t open_orders() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kOpenOrders); }
  std::uint64_t traded_notional() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kTradedNotional); }
  std::uint64_t version() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kVersion); }

  std::uint64_t durable_credit_limit() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kDurableCreditLimit); }
  std::uint64_t durable_kill_switch() const noexcept { return load(kRiskPageBytes + LocalOwnedWords::kDurableKillSwitch); }
  // The remote-owned words' values the journal now holds durably (under the seqlock).
  void set_durable(std::uint64_t credit_limit, std::uint64_t kill_switch) noexcept;

  // One update of the local page: version odd, the changes, version even.
  void local_update(std::int64_t position_delta, std::int64_t open_notional_delta, std::int64_t open_orders_delta,
                    std::uint64_t traded_notional_delta) noexcept;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const noexcept;
  };
  std::uint64_t* word(std::size_t offset) const noexcept;
  std::uint64_t load(std::size_t offset) const noexcept {
    return std::atomic_ref<std::uint64_t>{*word(offset)}.load(std::memory_order_acquire);
  }
  void store(std::size_t offset, std::uint64_t v) noexcept {
    std::atomic_ref<std::uint64_t>{*word(offset)}.store(v, std::memory_order_release);
  }

  std::uint64_t account_;
  std::unique_ptr<std::byte, FreeDeleter> base_;
};

// The accounts this gateway knows, by id.
class RiskRegistry {
 public:
  RiskRegion& add(std::uint64_t account, std::uint64_t credit_limit);
  RiskRegion* find(std::uint64_t account) noexcept {
    const auto it = regions_.find(account);
    return it == regions_.end() ? nullptr : it->second.get();
  }
  std::size_t size() const noexcept { return regions_.size(); }

 private:
  std::unordered_map<std::uint64_t, std::unique_ptr<RiskRegion>> regions_;
};

}  // namespace qpgate::orders
