#include "verbs/source_gid.h"

#include <string>
#include <vector>

namespace qpgate::verbs {

Result<SourceGid> choose_source_gid(Device& device, int index) {
  auto table = device.query_gid_table(1);
  if (!table.ok()) return table.error();
  const std::vector<Gid>& gids = *table;
  if (index >= 0) {
    if (static_cast<std::size_t>(index) >= gids.size() || gids[static_cast<std::size_t>(index)].is_zero()) {
      return Error{EINVAL, "GID index " + std::to_string(index) + " is not set on port 1 of " + std::string(device.name())};
    }
    return SourceGid{gids[static_cast<std::size_t>(index)], static_cast<std::uint8_t>(index)};
  }
  for (std::size_t i = 0; i < gids.size() && i < 256; ++i) {
    if (gids[i].is_ipv4_mapped()) return SourceGid{gids[i], static_cast<std::uint8_t>(i)};
  }
  for (std::size_t i = 0; i < gids.size() && i < 256; ++i) {
    if (!gids[i].is_zero()) return SourceGid{gids[i], static_cast<std::uint8_t>(i)};
  }
  return Error{ENODEV, "port 1 of " + std::string(device.name()) + " has no GID"};
}

std::optional<SourceGid> choose_alternate_gid(Device& device, const SourceGid& primary) {
  auto attr = device.query_device();
  if (!attr.ok() || !attr->auto_path_mig) return std::nullopt;
  auto table = device.query_gid_table(1);
  if (!table.ok()) return std::nullopt;
  const std::vector<Gid>& gids = *table;
  for (std::size_t i = 0; i < gids.size() && i < 256; ++i) {
    if (i != primary.index && gids[i].is_ipv4_mapped() && !(gids[i] == primary.gid)) {
      return SourceGid{gids[i], static_cast<std::uint8_t>(i)};
    }
  }
  return std::nullopt;
}

}  // namespace qpgate::verbs
