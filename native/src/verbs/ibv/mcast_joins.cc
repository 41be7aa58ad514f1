// IP-level group membership for RoCE multicast. rxe (and a RoCE NIC behind
// an IGMP-snooping switch) only sees a group's packets once the interface
// has joined the group at the IP layer: ibv_attach_mcast alone received 0 of
// 10 datagrams on rxe, with this join 10 of 10 (rdma-lab.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

McastIpJoins::~McastIpJoins() {
  if (fd4_ >= 0) close(fd4_);  // closing drops the memberships
  if (fd6_ >= 0) close(fd6_);
}

void McastIpJoins::bind(unsigned ifindex, std::uint32_t ipv4_host, std::string netdev) {
  ifindex_ = ifindex;
  ipv4_host_ = ipv4_host;
  netdev_ = std::move(netdev);
}

int McastIpJoins::members(const Gid& mgid) const {
  const auto it = refs_.find(mgid);
  return it == refs_.end() ? 0 : it->second;
}

Result<int> McastIpJoins::socket_for(bool v4) {
  int& fd = v4 ? fd4_ : fd6_;
  if (fd < 0) {
    fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return call_error(errno, std::string("socket(") + (v4 ? "AF_INET" : "AF_INET6") + ") for multicast joins");
  }
  return fd;
}

namespace {
Status membership(int fd, bool v4, bool join, const Gid& mgid, unsigned ifindex, std::uint32_t ipv4_host,
                  const std::string& netdev) {
  int rc = 0;
  std::string what;
  if (v4) {
    ip_mreqn m{};
    m.imr_multiaddr.s_addr = htonl(*mgid.to_ipv4());
    m.imr_address.s_addr = htonl(ipv4_host);
    m.imr_ifindex = static_cast<int>(ifindex);
    rc = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof m);
    what = std::string(join ? "IP_ADD_MEMBERSHIP " : "IP_DROP_MEMBERSHIP ") + ipv4_to_string(*mgid.to_ipv4());
  } else {
    ipv6_mreq m{};
    std::memcpy(&m.ipv6mr_multiaddr, mgid.raw.data(), 16);
    m.ipv6mr_interface = ifindex;
    rc = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &m, sizeof m);
    what = std::string(join ? "IPV6_ADD_MEMBERSHIP " : "IPV6_DROP_MEMBERSHIP ") + mgid.to_string();
  }
  if (rc != 0) return call_error(errno, what + " on " + (netdev.empty() ? std::string("the interface") : netdev));
  return {};
}
}  // namespace

Status McastIpJoins::join(const Gid& mgid) {
  int& refs = refs_[mgid];
  if (refs > 0) {
    ++refs;
    return {};
  }
  const bool v4 = mgid.is_ipv4_mapped();
  auto fd = socket_for(v4);
  if (!fd) {
    refs_.erase(mgid);
    return fd.status();
  }
  if (auto s = membership(*fd, v4, true, mgid, ifindex_, ipv4_host_, netdev_); !s.ok()) {
    refs_.erase(mgid);
    return s;
  }
  refs = 1;
  return {};
}

Status McastIpJoins::leave(const Gid& mgid) {
  const auto it = refs_.find(mgid);
  if (it == refs_.end()) return Error{EINVAL, "multicast group " + mgid.to_string() + " was not joined"};
  if (--it->second > 0) return {};
  refs_.erase(it);
  const bool v4 = mgid.is_ipv4_mapped();
  auto fd = socket_for(v4);
  if (!fd) return fd.status();
  return membership(*fd, v4, false, mgid, ifindex_, ipv4_host_, netdev_);
}

}  // namespace qpgate::verbs::ibv
