// UdpNet's multicast groups (net.h): one socket per joined group, reference
// counted, in the readiness set of the plain receive mode.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "verbs/soft/net.h"
#include "verbs/soft/net_batch.h"

namespace qpgate::verbs::soft {

// Adds fd to the readiness set, keyed by the group it receives (0: unicast).
bool UdpNet::watch(int fd, std::uint32_t group_be) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(fd)) << 32) | group_be;
  return epoll_ctl(ready_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

// A socket bound to <group>:4791 that has joined the group on the device's
// address; in af-packet mode it holds the membership and reads nothing.
Result<int> UdpNet::open_group_socket(const wire::IpAddress& group) {
  const std::uint32_t be = ipv4_be(group);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno, "join " + ip_to_string(group) + ": socket()");
  auto fail = [&](const std::string& what) -> Result<int> {
    const int e = errno;
    close(fd);
    return sys_error(e, "join " + ip_to_string(group) + " on " + ip_to_string(config_.address) + ": " + what);
  };
  if (!set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1)) return fail("setsockopt(SO_REUSEADDR)");
  const sockaddr_in local = make_sockaddr(be, wire::kRoceV2Port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) return fail("bind(<group>:4791)");
  if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0)) return fail("setsockopt(IP_MULTICAST_ALL, 0)");
  ip_mreq mreq{};
  mreq.imr_multiaddr.s_addr = be;
  mreq.imr_interface.s_addr = ipv4_be(config_.address);
  if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
    return fail("setsockopt(IP_ADD_MEMBERSHIP)");
  }
  if (packet_rx_) {
    // The membership makes the interface accept the group; the packet socket reads it.
    if (!attach_drop_all_filter(fd)) return fail("setsockopt(SO_ATTACH_FILTER)");
    return fd;
  }
  if (!configure_receive(fd, config_.rcvbuf)) return fail("setsockopt(IP_RECVTOS/IP_RECVTTL)");
  if (!watch(fd, be)) return fail("epoll_ctl(ADD)");
  return fd;
}

Status UdpNet::join(const wire::IpAddress& group) {
  if (group.family != wire::IpFamily::kIpv4 || (group.bytes[0] & 0xf0u) != 0xe0u) {
    return Error{EINVAL, "join: " + ip_to_string(group) + " is not an IPv4 multicast group (224.0.0.0/4)"};
  }
  const std::uint32_t be = ipv4_be(group);
  auto it = groups_.find(be);
  if (it != groups_.end()) {
    ++it->second.refs;
    return {};
  }
  Result<int> fd = open_group_socket(group);
  if (!fd) return fd.error();
  groups_.emplace(be, Group{*fd, 1});
  if (observer_ != nullptr && !packet_rx_) observer_->fd_added(*fd);
  return {};
}

Status UdpNet::leave(const wire::IpAddress& group) {
  auto it = groups_.find(group.family == wire::IpFamily::kIpv4 ? ipv4_be(group) : 0);
  if (group.family != wire::IpFamily::kIpv4 || it == groups_.end()) {
    return Error{EINVAL, "leave: " + ip_to_string(group) + " is not joined on " + ip_to_string(config_.address)};
  }
  if (--it->second.refs > 0) return {};
  if (!packet_rx_) {
    if (observer_ != nullptr) observer_->fd_removed(it->second.fd);
    epoll_ctl(ready_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  }
  close(it->second.fd);  // closing drops the membership (IGMP leave)
  groups_.erase(it);
  return {};
}

std::uint32_t UdpNet::group_refs(const wire::IpAddress& group) const {
  if (group.family != wire::IpFamily::kIpv4) return 0;
  auto it = groups_.find(ipv4_be(group));
  return it == groups_.end() ? 0 : it->second.refs;
}

std::vector<int> UdpNet::receive_fds() const {
  if (packet_rx_) return {packet_rx_->fd()};
  std::vector<int> fds{unicast_fd_};
  for (const auto& [be, g] : groups_) fds.push_back(g.fd);
  return fds;
}

}  // namespace qpgate::verbs::soft
