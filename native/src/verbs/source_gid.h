// The GID a device's packets leave from, for the code above the verbs
// interface (feed, orders) that must put it in AhAttr.sgid_index and in
// what it tells peers. The soft device has one entry (index 0); an rxe or
// ConnectX port lists a link-local IPv6 GID first (index 0 on rxe), and
// RoCEv2 over IPv4 needs the IPv4-mapped one (verbs/ibv/gid_select.h).
#pragma once

#include <cstdint>
#include <optional>

#include "verbs/device.h"

namespace qpgate::verbs {

struct SourceGid {
  Gid gid;
  std::uint8_t index = 0;
};

// Port 1's entry `index` when index >= 0 (EINVAL when it is not set); else
// the first IPv4-mapped entry, else the first set entry (ENODEV: none).
Result<SourceGid> choose_source_gid(Device& device, int index = -1);

// The source GID of an RC QP's alternate path (IBV_QP_ALT_PATH): on a device
// with automatic path migration (DeviceAttr::auto_path_mig), the first
// IPv4-mapped entry of port 1 other than `primary` (a soft device opened
// with an alternate address has it at index 1: soft_device.h); none else.
std::optional<SourceGid> choose_alternate_gid(Device& device, const SourceGid& primary);

}  // namespace qpgate::verbs
