// The memory regions of the soft device, and the checks every access to
// them passes: the responder's for a remote READ/WRITE/atomic (by rkey), the
// requester's and receive path's for local SGEs (by lkey).
//
// A session reaches only the regions it was given: a lookup succeeds only
// when the key names a registered region of the QP's own PD, the range
// [va, va+len) lies inside it (overflow-safe), and the region grants the
// access. The typed MrCheck says which test failed, so the responder sends
// the NAK the IBA asks for (remote_nak_is_invalid_request) and counts it.
//
// Keys come from KeyGenerator (CSPRNG): never sequential, never 0, never in
// use by another registered region (as lkey or rkey), and rkey ≠ lkey.
//
// Owned by one thread (the engine); registration and deregistration reach it
// as commands, so after deregister() returns no access can touch the memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>

#include "verbs/error.h"
#include "verbs/soft/key_gen.h"
#include "verbs/types.h"
#include "verbs/wr.h"

namespace qpgate::verbs::soft {

struct MrEntry {
  std::uint32_t pd = 0;
  std::uint64_t addr = 0;  // VA of the first byte (the local address; not zero-based)
  std::uint64_t length = 0;
  AccessFlags access;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;

  std::uint8_t* bytes(std::uint64_t va) const {
    return reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(va));
  }
};

// Why an access was refused (or OK).
enum class MrCheck : std::uint8_t {
  OK,
  INVALID_KEY,        // no registered region has this key
  PD_MISMATCH,        // the region belongs to another PD than the QP's
  OUT_OF_BOUNDS,      // [va, va+len) not inside [addr, addr+length)
  ACCESS_DENIED,      // the region does not grant the access asked for
  MISALIGNED_ATOMIC,  // an atomic's VA is not 8-byte aligned
};
std::string_view mr_check_name(MrCheck c);  // "out_of_bounds": counter and log names

// The NAK a responder sends for a failed remote check, as rxe_resp.c does:
// NAK "invalid request" for a misaligned atomic, NAK
// "remote access error" for key, PD, bounds and access. Both are class C
// errors: the responder's QP goes to ERR too.
constexpr bool remote_nak_is_invalid_request(MrCheck c) {
  return c == MrCheck::MISALIGNED_ATOMIC;
}
// The status the requester's WR completes with when the responder refused it.
constexpr WcStatus remote_wc_status(MrCheck c) {
  return c == MrCheck::OK ? WcStatus::IBV_WC_SUCCESS
         : remote_nak_is_invalid_request(c) ? WcStatus::IBV_WC_REM_INV_REQ_ERR
                                            : WcStatus::IBV_WC_REM_ACCESS_ERR;
}
// The status a WR completes with when its own SGE failed the local check.
constexpr WcStatus local_wc_status(MrCheck c) {
  return c == MrCheck::OK ? WcStatus::IBV_WC_SUCCESS : WcStatus::IBV_WC_LOC_PROT_ERR;
}

struct MrAccess {
  MrCheck check = MrCheck::INVALID_KEY;
  const MrEntry* mr = nullptr;  // set when check is OK (null for a zero-length access)
  std::uint8_t* data = nullptr;  // the first byte to touch, when check is OK and len > 0

  bool ok() const { return check == MrCheck::OK; }
};

struct MrTableLimits {
  std::uint32_t max_mr = 0x40000;          // rxe RXE_MAX_MR
  std::uint64_t max_mr_size = 1ull << 40;  // a sanity bound, not a hardware one
};

class MrTable {
 public:
  explicit MrTable(MrTableLimits limits = {});
  MrTable(MrTableLimits limits, KeyGenerator keys);

  // ibv_reg_mr. EINVAL: length 0, the range wraps, length > max_mr_size,
  // unknown access bits, REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE
  // (ibv_reg_mr(3) answers EINVAL too). ENOMEM: max_mr regions. EIO: no randomness.
  Result<MrEntry> register_mr(std::uint32_t pd, std::uint64_t addr, std::uint64_t length, AccessFlags access);
  // ibv_dereg_mr, by the lkey register_mr returned. ENOENT if not registered.
  Status deregister(std::uint32_t lkey);

  // A remote READ/WRITE of len bytes at va with rkey, from a QP in pd. `needed`
  // is REMOTE_READ or REMOTE_WRITE. A zero-length READ/WRITE needs no valid
  // rkey (rxe skips the check for a zero-length RETH too) and is OK with mr = null.
  MrAccess check_remote(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                        Access needed) const;
  // A remote atomic: 8 bytes at an 8-byte aligned va, REMOTE_ATOMIC granted.
  MrAccess check_atomic(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va) const;
  // A local SGE: the requester reading a send/WRITE source (write = false),
  // or the receive/READ-response path writing into it (write = true, which
  // needs LOCAL_WRITE).
  MrAccess check_local(std::uint32_t pd, std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                       bool write) const;

  // Copies `data` into the local SGEs `sges` from byte `offset` of their
  // concatenation (a receive, a READ response); false when an SGE fails its
  // LOCAL_WRITE check or the SGEs end first.
  bool scatter(std::uint32_t pd, std::span<const Sge> sges, std::uint64_t offset,
               std::span<const std::uint8_t> data) const;

  const MrEntry* find_by_lkey(std::uint32_t lkey) const;
  const MrEntry* find_by_rkey(std::uint32_t rkey) const;
  std::size_t size() const { return by_lkey_.size(); }

 private:
  bool key_in_use(std::uint32_t k) const { return by_lkey_.count(k) != 0 || rkey_to_lkey_.count(k) != 0; }
  static MrAccess check_range(const MrEntry& mr, std::uint32_t pd, std::uint64_t va, std::uint64_t len,
                              AccessFlags needed);

  MrTableLimits limits_;
  KeyGenerator keys_;
  std::unordered_map<std::uint32_t, MrEntry> by_lkey_;
  std::unordered_map<std::uint32_t, std::uint32_t> rkey_to_lkey_;
};

}  // namespace qpgate::verbs::soft
