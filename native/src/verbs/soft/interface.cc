// Where a soft device's address lives (soft_device.h: find_interface).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "verbs/soft/device_core.h"

namespace qpgate::verbs::soft {
namespace {

std::uint32_t read_mtu(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &req);
  close(fd);
  return rc == 0 ? static_cast<std::uint32_t>(req.ifr_mtu) : 0;
}

}  // namespace

bool interface_up(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq req{};
  std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFFLAGS, &req);
  close(fd);
  return rc == 0 && (req.ifr_flags & IFF_UP) != 0 && (req.ifr_flags & IFF_RUNNING) != 0;
}

Result<InterfaceInfo> find_interface(std::string_view address_or_name) {
  const std::string wanted(address_or_name);
  in_addr parsed{};
  const bool is_address = inet_pton(AF_INET, wanted.c_str(), &parsed) == 1;
  if (!is_address && (wanted.empty() || wanted.size() >= IFNAMSIZ)) {
    return Error{EINVAL, "soft device: '" + wanted + "' is neither an IPv4 address nor an interface name"};
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error{errno, std::string("getifaddrs: ") + std::strerror(errno)};
  std::optional<InterfaceInfo> exact;
  std::optional<InterfaceInfo> in_loopback_subnet;
  bool name_seen = false;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_name == nullptr) continue;
    if (!is_address && wanted == ifa->ifa_name) name_seen = true;
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
    InterfaceInfo info;
    info.name = ifa->ifa_name;
    info.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    info.up = (ifa->ifa_flags & IFF_UP) != 0 && (ifa->ifa_flags & IFF_RUNNING) != 0;
    if (!is_address) {
      if (wanted != ifa->ifa_name || exact) continue;
      info.address = ipv4_from_be(sin->sin_addr.s_addr);
      exact = info;
      continue;
    }
    if (sin->sin_addr.s_addr == parsed.s_addr) {
      info.address = ipv4_from_be(parsed.s_addr);
      exact = info;
      break;
    }
    // A loopback interface answers for its whole subnet (127.0.0.0/8 is local).
    if (info.loopback && ifa->ifa_netmask != nullptr && !in_loopback_subnet) {
      const auto* mask = reinterpret_cast<const sockaddr_in*>(ifa->ifa_netmask);
      if ((sin->sin_addr.s_addr & mask->sin_addr.s_addr) == (parsed.s_addr & mask->sin_addr.s_addr)) {
        info.address = ipv4_from_be(parsed.s_addr);
        in_loopback_subnet = info;
      }
    }
  }
  freeifaddrs(list);
  std::optional<InterfaceInfo> found = exact ? exact : in_loopback_subnet;
  if (!found) {
    if (is_address) {
      return Error{EADDRNOTAVAIL, "soft device: no interface has the address " + wanted +
                                      " (it must be assigned to an interface, or lie in a loopback subnet)"};
    }
    return Error{ENODEV, name_seen ? "soft device: interface " + wanted + " has no IPv4 address"
                                   : "soft device: no interface named " + wanted};
  }
  found->mtu = read_mtu(found->name);
  return *found;
}

}  // namespace qpgate::verbs::soft
