#include "verbs/soft/mr_table.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace qpgate::verbs::soft {

namespace {
std::string hex(std::uint64_t v) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return std::string(buf, static_cast<std::size_t>(n));
}
}  // namespace

std::string_view mr_check_name(MrCheck c) {
  switch (c) {
    case MrCheck::OK: return "ok";
    case MrCheck::INVALID_KEY: return "invalid_key";
    case MrCheck::PD_MISMATCH: return "pd_mismatch";
    case MrCheck::OUT_OF_BOUNDS: return "out_of_bounds";
    case MrCheck::ACCESS_DENIED: return "access_denied";
    case MrCheck::MISALIGNED_ATOMIC: return "misaligned_atomic";
  }
  return "unknown";
}

MrTable::MrTable(MrTableLimits limits) : limits_(limits) {}
MrTable::MrTable(MrTableLimits limits, KeyGenerator keys) : limits_(limits), keys_(std::move(keys)) {}

Result<MrEntry> MrTable::register_mr(std::uint32_t pd, std::uint64_t addr, std::uint64_t length,
                                     AccessFlags access) {
  if (length == 0) return Error{EINVAL, "reg_mr: length is 0"};
  if (length > limits_.max_mr_size) {
    return Error{EINVAL, "reg_mr: length " + std::to_string(length) + " exceeds max_mr_size " +
                             std::to_string(limits_.max_mr_size)};
  }
  if (addr > UINT64_MAX - (length - 1)) {
    return Error{EINVAL, "reg_mr: addr " + hex(addr) + " + length " + std::to_string(length) +
                             " wraps around the address space"};
  }
  if (access.without(kAllAccess).any()) {
    return Error{EINVAL, "reg_mr: unknown access bits " + hex(access.without(kAllAccess).bits())};
  }
  if ((access.has(Access::REMOTE_WRITE) || access.has(Access::REMOTE_ATOMIC)) && !access.has(Access::LOCAL_WRITE)) {
    return Error{EINVAL, "reg_mr: IBV_ACCESS_REMOTE_WRITE and IBV_ACCESS_REMOTE_ATOMIC require IBV_ACCESS_LOCAL_WRITE"};
  }
  if (by_lkey_.size() >= limits_.max_mr) {
    return Error{ENOMEM, "reg_mr: " + std::to_string(limits_.max_mr) + " regions registered (max_mr)"};
  }
  // Draw until both keys are fresh and distinct. With 2^32 keys and at most
  // max_mr in use this loops more than once with probability < 2^-13.
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
  for (int attempt = 0;; ++attempt) {
    if (attempt == 64) return Error{EIO, "reg_mr: the random source keeps returning keys already in use"};
    auto l = keys_.next();
    if (!l.ok()) return l.error();
    auto r = keys_.next();
    if (!r.ok()) return r.error();
    lkey = *l;
    rkey = *r;
    if (lkey != rkey && !key_in_use(lkey) && !key_in_use(rkey)) break;
  }
  MrEntry e{pd, addr, length, access, lkey, rkey};
  by_lkey_.emplace(lkey, e);
  rkey_to_lkey_.emplace(rkey, lkey);
  return e;
}

Status MrTable::deregister(std::uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return Error{ENOENT, "dereg_mr: lkey " + hex(lkey) + " is not registered"};
  rkey_to_lkey_.erase(it->second.rkey);
  by_lkey_.erase(it);
  return {};
}

const MrEntry* MrTable::find_by_lkey(std::uint32_t lkey) const {
  auto it = by_lkey_.find(lkey);
  return it == by_lkey_.end() ? nullptr : &it->second;
}

const MrEntry* MrTable::find_by_rkey(std::uint32_t rkey) const {
  auto it = rkey_to_lkey_.find(rkey);
  return it == rkey_to_lkey_.end() ? nullptr : find_by_lkey(it->second);
}

MrAccess MrTable::check_range(const MrEntry& mr, std::uint32_t pd, std::uint64_t va, std::uint64_t len,
                              AccessFlags needed) {
  if (mr.pd != pd) return {MrCheck::PD_MISMATCH};
  // va ≥ addr and va + len ≤ addr + length, without computing a sum that can wrap.
  if (va < mr.addr || len > mr.length || va - mr.addr > mr.length - len) return {MrCheck::OUT_OF_BOUNDS};
  if (!mr.access.has_all(needed)) return {MrCheck::ACCESS_DENIED};
  return {MrCheck::OK, &mr, len == 0 ? nullptr : mr.bytes(va)};
}

MrAccess MrTable::check_remote(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                               Access needed) const {
  if (len == 0) return {MrCheck::OK};
  const MrEntry* mr = find_by_rkey(rkey);
  if (mr == nullptr) return {MrCheck::INVALID_KEY};
  return check_range(*mr, pd, va, len, needed);
}

MrAccess MrTable::check_atomic(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va) const {
  const MrEntry* mr = find_by_rkey(rkey);
  if (mr == nullptr) return {MrCheck::INVALID_KEY};
  // rxe's order: key, PD, bounds and access first (NAK remote access), then
  // alignment (NAK invalid request), so a peer sees the same NAK from both.
  MrAccess a = check_range(*mr, pd, va, 8, Access::REMOTE_ATOMIC);
  if (a.ok() && (va & 7u) != 0) return {MrCheck::MISALIGNED_ATOMIC};
  return a;
}

MrAccess MrTable::check_local(std::uint32_t pd, std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                              bool write) const {
  const MrEntry* mr = find_by_lkey(lkey);
  if (mr == nullptr) return {MrCheck::INVALID_KEY};
  return check_range(*mr, pd, addr, len, write ? AccessFlags(Access::LOCAL_WRITE) : AccessFlags());
}

bool MrTable::scatter(std::uint32_t pd, std::span<const Sge> sges, std::uint64_t offset,
                      std::span<const std::uint8_t> data) const {
  std::uint64_t pos = 0;
  std::size_t done = 0;
  for (const Sge& s : sges) {
    if (done == data.size()) break;
    if (offset + done >= pos + s.length) {
      pos += s.length;
      continue;
    }
    const std::uint64_t in = offset + done - pos;
    const auto take = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.length - in, data.size() - done));
    const MrAccess a = check_local(pd, s.lkey, s.addr + in, take, true);
    if (!a.ok()) return false;
    std::memcpy(a.data, data.data() + done, take);
    done += take;
    pos += s.length;
  }
  return done == data.size();
}

}  // namespace qpgate::verbs::soft
