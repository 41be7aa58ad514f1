// UdpNet's receive side (net.h): recvmmsg batches from the unicast and group
// sockets (plain mode) or the packet socket (af-packet mode), each datagram
// turned into its RoCEv2 bytes and an RxMeta.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "verbs/soft/net.h"
#include "verbs/soft/net_batch.h"

namespace qpgate::verbs::soft {
namespace {

// The IP_TOS and IP_TTL cmsgs asked for by configure_receive.
void read_ip_cmsgs(msghdr& h, RxMeta& meta) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != IPPROTO_IP) continue;
    if (c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
      meta.traffic_class = *CMSG_DATA(c);
    } else if (c->cmsg_type == IP_TTL && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int ttl = 0;
      std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
      meta.hop_limit = static_cast<std::uint8_t>(ttl);
    }
  }
}

}  // namespace

int UdpNet::receive_from(int fd, const wire::IpAddress* group, const RxHandler& fn) {
  Batch& b = *batch_;
  const std::uint32_t n_max = config_.rx_batch;
  const int n = recvmmsg(fd, b.msgs.data(), n_max, MSG_DONTWAIT, nullptr);
  if (n <= 0) {
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) counters_.rx_errors.inc();
    return 0;
  }
  counters_.rx_syscalls.inc();
  deliver_batch(static_cast<std::size_t>(n), group, fn);
  b.rearm(static_cast<std::size_t>(n));
  return n;
}

// The first n entries of the receive batch, as recvmmsg left them.
void UdpNet::deliver_batch(std::size_t n, const wire::IpAddress* group, const RxHandler& fn) {
  Batch& b = *batch_;
  const auto now = static_cast<std::int64_t>(monotonic_ns());  // one receive time per batch
  for (std::size_t i = 0; i < n; ++i) {
    mmsghdr& m = b.msgs[i];
    counters_.rx_packets.inc();
    counters_.rx_bytes.add(m.msg_len);
    if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
      counters_.rx_truncated.inc();
      continue;
    }
    const sockaddr_in& from = b.from[i];
    if (m.msg_hdr.msg_namelen < sizeof(sockaddr_in) || from.sin_family != AF_INET) {
      counters_.rx_not_ipv4.inc();
      continue;
    }
    RxMeta meta;
    meta.flow.src = ipv4_from_be(from.sin_addr.s_addr);
    meta.flow.src_port = ntohs(from.sin_port);
    meta.flow.dst = group != nullptr ? *group : config_.address;
    meta.flow.dst_port = wire::kRoceV2Port;
    meta.rx_ns = now;
    read_ip_cmsgs(m.msg_hdr, meta);
    fn(std::span<std::uint8_t>(static_cast<std::uint8_t*>(b.iov[i].iov_base), m.msg_len), meta);
  }
}

// Plain mode with groups: one epoll_wait says which of the unicast and group
// sockets hold datagrams; only those are read.
int UdpNet::receive_ready(const RxHandler& fn) {
  Batch& b = *batch_;
  const int ready = epoll_wait(ready_fd_, b.ready.data(), kMaxReadySockets, 0);
  if (ready < 0) {
    if (errno != EINTR) counters_.rx_errors.inc();
    return 0;
  }
  int total = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(ready); ++i) {
    const std::uint64_t key = b.ready[i].data.u64;
    const int fd = static_cast<int>(key >> 32);
    const auto group_be = static_cast<std::uint32_t>(key);
    if (group_be == 0) {
      total += receive_from(fd, nullptr, fn);
    } else {
      const wire::IpAddress group = ipv4_from_be(group_be);
      total += receive_from(fd, &group, fn);
    }
  }
  return total;
}

// af-packet mode: whole IPv4 datagrams; the headers go into RxMeta so the
// ingress checks the ICRC against them.
int UdpNet::receive_packets(const RxHandler& fn) {
  std::uint64_t truncated = 0;
  const auto now = static_cast<std::int64_t>(monotonic_ns());
  int delivered = 0;
  const int n = packet_rx_->receive(
      [&](std::span<std::uint8_t> datagram) {
        wire::Result<wire::OuterView> outer = wire::parse_ip_udp(datagram);
        if (!outer.ok() || outer->family != wire::IpFamily::kIpv4) {
          counters_.rx_bad_ip.inc();
          return;
        }
        const wire::IpAddress& dst = outer->flow.dst;
        const bool ours = dst == config_.address || groups_.count(ipv4_be(dst)) != 0;
        if (!ours) {
          counters_.rx_not_ours.inc();
          return;
        }
        counters_.rx_packets.inc();
        counters_.rx_bytes.add(outer->roce.size());
        RxMeta meta;
        meta.flow = outer->flow;
        meta.traffic_class = outer->ip_header[1];
        meta.hop_limit = outer->ip_header[8];
        meta.rx_ns = now;
        meta.ip_udp_len = static_cast<std::uint8_t>(outer->ip_header.size() + outer->udp_header.size());
        std::memcpy(meta.ip_udp.data(), outer->ip_header.data(), meta.ip_udp_len);  // contiguous in the datagram
        const std::size_t at = static_cast<std::size_t>(outer->roce.data() - datagram.data());
        fn(datagram.subspan(at, outer->roce.size()), meta);
        ++delivered;
      },
      truncated);
  if (n < 0) counters_.rx_errors.inc();
  if (n > 0) counters_.rx_syscalls.inc();
  counters_.rx_truncated.add(truncated);
  return delivered;
}

int UdpNet::receive(const RxHandler& fn) {
  if (packet_rx_) return receive_packets(fn);
  // Without groups the unicast socket is the only one: read it directly,
  // one syscall a pass, as before there was a readiness set.
  if (groups_.empty()) return receive_from(unicast_fd_, nullptr, fn);
  return receive_ready(fn);
}

}  // namespace qpgate::verbs::soft
