#include "verbs/ibv/gid_select.h"

#include <algorithm>
#include <cerrno>

namespace qpgate::verbs::ibv {

std::string_view gid_type_name(GidType t) {
  switch (t) {
    case GidType::IB: return "IB";
    case GidType::ROCE_V1: return "RoCE v1";
    case GidType::ROCE_V2: return "RoCE v2";
  }
  return "unknown";
}

namespace {

std::string describe_entry(const GidEntry& e) {
  // Appended piece by piece: GCC 12 at -O3 misreports `"[" + std::string&&`
  // (an insert at 0) as an overlapping memcpy (GCC bug 105329).
  std::string s = "[";
  s += std::to_string(e.index);
  s += "] ";
  s += e.gid.to_string();
  s += " ";
  s += gid_type_name(e.type);
  if (!e.netdev.empty()) s += " " + e.netdev;
  return s;
}

std::string where(const GidSelectInput& in) { return in.device + " port " + std::to_string(in.port_num); }

std::string addresses(const GidSelectInput& in) {
  std::string s;
  for (auto a : in.ipv4_host) {
    if (!s.empty()) s += ", ";
    s += ipv4_to_string(a);
  }
  return s.empty() ? "no IPv4 address" : s;
}

// The automatic choice: for each address in preference order, the lowest
// RoCE v2 entry carrying its IPv4-mapped GID.
const GidEntry* find_auto(std::span<const GidEntry> table, const GidSelectInput& in, std::uint32_t* addr) {
  for (auto a : in.ipv4_host) {
    const Gid want = Gid::from_ipv4(a);
    const GidEntry* best = nullptr;
    for (const auto& e : table) {
      if (e.type != GidType::ROCE_V2 || e.gid != want) continue;
      if (best == nullptr || e.index < best->index) best = &e;
    }
    if (best != nullptr) {
      *addr = a;
      return best;
    }
  }
  return nullptr;
}

}  // namespace

std::string describe_gid_table(std::span<const GidEntry> table) {
  if (table.empty()) return "(empty)";
  std::string s;
  for (const auto& e : table) {
    if (!s.empty()) s += "; ";
    s += describe_entry(e);
  }
  return s;
}

Result<GidChoice> select_gid(std::span<const GidEntry> table, const GidSelectInput& in) {
  std::uint32_t auto_addr = 0;
  const GidEntry* auto_entry = find_auto(table, in, &auto_addr);
  const std::string iface = in.netdev.empty() ? std::string("the bound interface") : in.netdev;

  if (in.override_index) {
    const std::uint32_t i = *in.override_index;
    if (i > 255) {
      return Error{EINVAL, where(in) + ": GID index override " + std::to_string(i) +
                               " is out of range 0..255 (ibv_ah_attr.grh.sgid_index is 8 bits)"};
    }
    const auto it = std::find_if(table.begin(), table.end(), [&](const GidEntry& e) { return e.index == i; });
    if (it == table.end() || it->gid.is_zero()) {
      return Error{EINVAL, where(in) + ": GID index override " + std::to_string(i) +
                               " is not a valid entry of the GID table; valid entries: " + describe_gid_table(table)};
    }
    GidChoice c{static_cast<std::uint8_t>(i), it->gid, it->type, false, {}};
    c.report = where(in) + ": GID index " + std::to_string(i) + " " + it->gid.to_string() + " (" +
               std::string(gid_type_name(it->type)) + (it->netdev.empty() ? "" : ", " + it->netdev) +
               "), chosen by override";
    if (auto_entry == nullptr) {
      c.report += "; no RoCE v2 IPv4-mapped GID of " + iface + " (" + addresses(in) + ") exists to compare";
    } else if (auto_entry->index == i) {
      c.report += "; it is also the automatic choice";
    } else {
      c.report += "; WARNING: the automatic choice would be index " + std::to_string(auto_entry->index) + " " +
                  auto_entry->gid.to_string() + " (RoCE v2 IPv4-mapped GID of " + iface + " " +
                  ipv4_to_string(auto_addr) + ")";
      if (it->type != GidType::ROCE_V2) c.report += "; a " + std::string(gid_type_name(it->type)) + " GID";
    }
    return c;
  }

  if (auto_entry == nullptr) {
    std::string m = where(in) + ": no RoCE v2 GID carries an IPv4 address of " + iface + " (" + addresses(in) +
                    "); GID table: " + describe_gid_table(table) +
                    ". Give the interface an IPv4 address, bind to the interface this device runs on, or "
                    "override the GID index";
    return Error{ENODEV, std::move(m)};
  }
  if (auto_entry->index > 255) {
    return Error{EINVAL, where(in) + ": the RoCE v2 GID of " + iface + " is at index " +
                             std::to_string(auto_entry->index) + ", beyond the 8-bit sgid_index"};
  }
  GidChoice c{static_cast<std::uint8_t>(auto_entry->index), auto_entry->gid, auto_entry->type, true, {}};
  c.report = where(in) + ": GID index " + std::to_string(auto_entry->index) + " " + auto_entry->gid.to_string() +
             " (RoCE v2" + (auto_entry->netdev.empty() ? "" : ", " + auto_entry->netdev) +
             "), chosen automatically: the RoCE v2 IPv4-mapped GID of " + iface + " " + ipv4_to_string(auto_addr);
  return c;
}

}  // namespace qpgate::verbs::ibv
