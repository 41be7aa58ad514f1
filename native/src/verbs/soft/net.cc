// UdpNet's sockets: opening the unicast and per-flow transmit sockets, and
// closing everything (net.h). Transmit: net_tx.cc; receive: net_rx.cc;
// multicast groups: net_groups.cc; the IPv4 ID probe: ipv4_id_probe.cc.
#include "verbs/soft/net.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "verbs/soft/net_batch.h"

namespace qpgate::verbs::soft {
std::string_view receive_mode_name(ReceiveMode m) {
  return m == ReceiveMode::kAfPacket ? "af-packet" : "plain-udp";
}

std::string_view ipv4_id_probe_name(Ipv4IdProbe p) {
  switch (p) {
    case Ipv4IdProbe::ZERO: return "zero";
    case Ipv4IdProbe::NON_ZERO: return "non_zero";
    case Ipv4IdProbe::UNVERIFIED: return "unverified";
  }
  return "unknown";
}

UdpNet::UdpNet(const NetConfig& config) : config_(config) {}

UdpNet::~UdpNet() {
  for (auto& [port, fd] : tx_fds_) {
    if (fd >= 0) close(fd);
  }
  const bool plain = !packet_rx_.has_value();  // only the plain mode's sockets were announced
  for (auto& [group, g] : groups_) {
    if (observer_ != nullptr && plain) observer_->fd_removed(g.fd);
    close(g.fd);
  }
  if (packet_rx_ && observer_ != nullptr) observer_->fd_removed(packet_rx_->fd());
  if (unicast_fd_ >= 0) {
    if (observer_ != nullptr && plain) observer_->fd_removed(unicast_fd_);
    close(unicast_fd_);
  }
  if (ready_fd_ >= 0) close(ready_fd_);
}

Result<int> UdpNet::open_tx_socket(std::uint16_t port, bool reuse) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno, "socket(AF_INET, SOCK_DGRAM)");
  auto fail = [&](const std::string& what) -> Result<int> {
    const int e = errno;
    close(fd);
    return sys_error(e, what);
  };
  if (reuse && !set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1)) return fail("setsockopt(SO_REUSEADDR)");
  // DF on every datagram, so Linux writes IPv4 ID 0 (unconnected socket).
  if (!set_int(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)) return fail("setsockopt(IP_MTU_DISCOVER)");
  // UDP checksum 0, as rxe: the ICRC covers the transport.
  set_int(fd, SOL_SOCKET, SO_NO_CHECK, 1);
  set_int(fd, SOL_SOCKET, SO_SNDBUF, config_.sndbuf);
  in_addr ifaddr{};
  ifaddr.s_addr = ipv4_be(config_.address);
  if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) != 0) {
    return fail("setsockopt(IP_MULTICAST_IF " + ip_to_string(config_.address) + ")");
  }
  if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1)) return fail("setsockopt(IP_MULTICAST_LOOP)");
  const sockaddr_in local = make_sockaddr(ipv4_be(config_.address), port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    return fail("bind(" + ip_to_string(config_.address) + ":" + std::to_string(port) + ")");
  }
  return fd;
}

// The receive side of the unicast socket: plain mode reads it (and the group
// sockets, through the readiness set); af-packet mode reads a packet socket.
Status UdpNet::open_receive(const NetConfig& config) {
  if (!configure_receive(unicast_fd_, config.rcvbuf)) return sys_error(errno, "setsockopt(IP_RECVTOS/IP_RECVTTL)");
  if (config.receive_mode == ReceiveMode::kAfPacket) {
    // The UDP socket keeps <address>:4791 (no ICMP port unreachable, no
    // second device on the address) but reads nothing: the packet socket does.
    Result<PacketSocketRx> rx = PacketSocketRx::open(config.interface_name, config.rcvbuf, config.rx_batch,
                                                     wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes + kMaxRocePacket);
    if (!rx) return rx.error();
    if (!attach_drop_all_filter(unicast_fd_)) return sys_error(errno, "setsockopt(SO_ATTACH_FILTER) on the 4791 socket");
    packet_rx_.emplace(std::move(*rx));
    return {};
  }
  ready_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (ready_fd_ < 0) return sys_error(errno, "epoll_create1");
  if (!watch(unicast_fd_, 0)) return sys_error(errno, "epoll_ctl(ADD, the 4791 socket)");
  return {};
}

Result<std::unique_ptr<UdpNet>> UdpNet::open(const NetConfig& config) {
  if (config.address.family != wire::IpFamily::kIpv4) {
    return Error{EAFNOSUPPORT, "soft device: only IPv4 addresses are supported, got " + ip_to_string(config.address)};
  }
  if (config.tx_queue == 0 || config.rx_batch == 0) {
    return Error{EINVAL, "soft device: tx_queue and rx_batch must be at least 1"};
  }
  std::unique_ptr<UdpNet> net(new UdpNet(config));
  // No SO_REUSEADDR: for UDP it would let a second device bind the same
  // <address>:4791 and silently take part of its unicast datagrams.
  Result<int> fd = net->open_tx_socket(wire::kRoceV2Port, false);
  if (!fd) {
    Error e = fd.error();
    if (e.code == EADDRINUSE) {
      e.message += " — another soft device (in this or another process) owns " + ip_to_string(config.address) +
                   ":4791; one device per IP address";
    }
    return e;
  }
  net->unicast_fd_ = *fd;
  if (Status s = net->open_receive(config); !s) return s.error();
  net->report_.receive_mode = config.receive_mode;
  net->report_.rcvbuf_granted = get_int(net->unicast_fd_, SOL_SOCKET, SO_RCVBUF);
  net->report_.sndbuf_granted = get_int(net->unicast_fd_, SOL_SOCKET, SO_SNDBUF);
  net->report_.source_port_mode =
      config.per_flow_source_port
          ? "per-flow sockets bound to " + ip_to_string(config.address) +
                ":<RoCEv2 source port>, falling back to 4791 when a port is taken"
          : "fixed: every packet leaves from port 4791";
  net->tx_.resize(config.tx_queue);
  net->batch_ = std::make_unique<Batch>(config.rx_batch, config.tx_queue);
  if (config.probe_ipv4_id) {
    net->probe_ipv4_id();
  } else {
    net->report_.ipv4_id_detail = "probe disabled";
  }
  return net;
}

}  // namespace qpgate::verbs::soft
