// Choosing the GID a RoCE port sends from — the most common RoCE failure
// when wrong: a RoCE v1 or link-local GID gives
// "transport retry counter exceeded" or RTR timeouts, and the table layout
// differs by vendor (mlx5 has a v1 and a v2 entry per address; rxe and irdma
// differ). Pure functions over a table already read, so they are tested
// without a device.
//
// The automatic choice: the RoCE v2 entry whose GID is the IPv4-mapped
// address ::ffff:a.b.c.d of the interface the gateway is bound to (lowest
// index when several). An override names an index; it is checked against
// the table and the report says when it differs from the automatic choice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "verbs/error.h"
#include "verbs/gid.h"

namespace qpgate::verbs::ibv {

// ibv_gid_type (IBV_GID_TYPE_IB = 0, ROCE_V1 = 1, ROCE_V2 = 2).
enum class GidType : std::uint8_t { IB = 0, ROCE_V1 = 1, ROCE_V2 = 2 };
// "IB", "RoCE v1", "RoCE v2" (the sysfs gid_attrs/types spelling).
std::string_view gid_type_name(GidType t);

// One valid entry of a port's GID table.
struct GidEntry {
  std::uint32_t index = 0;
  Gid gid;
  GidType type = GidType::IB;
  std::string netdev;  // the interface the entry belongs to ("" when none)
};

struct GidSelectInput {
  std::string device;                    // "rxe0", for the report
  std::uint8_t port_num = 1;             // for the report
  std::string netdev;                    // the bound interface, "eth0"
  std::vector<std::uint32_t> ipv4_host;  // its IPv4 addresses, host order, preferred first
  std::optional<std::uint32_t> override_index;
};

struct GidChoice {
  std::uint8_t index = 0;
  Gid gid;
  GidType type = GidType::ROCE_V2;
  bool automatic = true;
  // One line for the log: which entry, why, and what the alternative was.
  // "rxe0 port 1: GID index 1 ::ffff:10.77.0.1 (RoCE v2, eth0), chosen
  //  automatically: the RoCE v2 IPv4-mapped GID of eth0 10.77.0.1"
  std::string report;
};

// ENODEV (no entry to choose, with the table listed in the message), EINVAL
// (an override outside the table, an empty entry, or an index above 255:
// ibv_ah_attr.grh.sgid_index is 8 bits).
Result<GidChoice> select_gid(std::span<const GidEntry> table, const GidSelectInput& in);

// "[0] fe80::5054:ff:fe12:3456 RoCE v2 eth0; [1] ::ffff:10.77.0.1 RoCE v2 eth0"
std::string describe_gid_table(std::span<const GidEntry> table);

}  // namespace qpgate::verbs::ibv
