#include "verbs/soft/packet_rx.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "verbs/soft/socket_util.h"
#include "wire/ip_udp.h"

namespace qpgate::verbs::soft {
namespace {

// Reads start at the IPv4 header (SOCK_DGRAM). Accept: protocol UDP, not a
// fragment (MF clear, offset 0), UDP destination port 4791.
constexpr sock_filter kRoceV2Filter[] = {
    {BPF_LD | BPF_B | BPF_ABS, 0, 0, 9},                       // A = IP protocol
    {BPF_JMP | BPF_JEQ | BPF_K, 0, 6, IPPROTO_UDP},           //   not UDP → drop
    {BPF_LD | BPF_H | BPF_ABS, 0, 0, 6},                       // A = flags | fragment offset
    {BPF_JMP | BPF_JSET | BPF_K, 4, 0, 0x3fff},                //   MF or an offset → drop
    {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0},                      // X = IP header length
    {BPF_LD | BPF_H | BPF_IND, 0, 0, 2},                       // A = UDP destination port
    {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, wire::kRoceV2Port},      //   not 4791 → drop
    {BPF_RET | BPF_K, 0, 0, 0x40000},                          // keep (whole datagram)
    {BPF_RET | BPF_K, 0, 0, 0},                                // drop
};

constexpr sock_filter kDropAll[] = {{BPF_RET | BPF_K, 0, 0, 0}};

}  // namespace

bool attach_drop_all_filter(int fd) {
  sock_fprog prog{1, const_cast<sock_filter*>(kDropAll)};
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0;
}

Result<PacketSocketRx> PacketSocketRx::open(const std::string& interface, int rcvbuf, std::uint32_t batch,
                                            std::size_t max_datagram) {
  PacketSocketRx rx;
  const unsigned ifindex = if_nametoindex(interface.c_str());
  if (ifindex == 0) return Error{ENODEV, "af-packet receive: no interface " + interface + ": " + errno_text(errno)};
  // Attach the filter before binding: nothing unfiltered is ever queued.
  rx.fd_ = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (rx.fd_ < 0) {
    const int e = errno;
    return Error{e, "af-packet receive: socket(AF_PACKET) on " + interface + ": " + errno_text(e) +
                        (e == EPERM ? " — this receive mode needs CAP_NET_RAW; use receive mode plain-udp" : "")};
  }
  sock_fprog prog{static_cast<unsigned short>(std::size(kRoceV2Filter)), const_cast<sock_filter*>(kRoceV2Filter)};
  if (setsockopt(rx.fd_, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
    return Error{errno, "af-packet receive: SO_ATTACH_FILTER: " + errno_text(errno)};
  }
  setsockopt(rx.fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // best effort, as the UDP sockets
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_protocol = htons(ETH_P_IP);
  ll.sll_ifindex = static_cast<int>(ifindex);
  if (bind(rx.fd_, reinterpret_cast<const sockaddr*>(&ll), sizeof ll) != 0) {
    return Error{errno, "af-packet receive: bind to " + interface + ": " + errno_text(errno)};
  }
  rx.max_datagram_ = max_datagram;
  rx.data_.resize(static_cast<std::size_t>(batch) * max_datagram);
  rx.from_.resize(batch);
  rx.iov_.resize(batch);
  rx.msgs_.resize(batch);
  return rx;
}

PacketSocketRx::PacketSocketRx(PacketSocketRx&& other) noexcept { *this = std::move(other); }

PacketSocketRx& PacketSocketRx::operator=(PacketSocketRx&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  fd_ = std::exchange(other.fd_, -1);
  max_datagram_ = other.max_datagram_;
  data_ = std::move(other.data_);
  from_ = std::move(other.from_);
  iov_ = std::move(other.iov_);
  msgs_ = std::move(other.msgs_);
  return *this;
}

PacketSocketRx::~PacketSocketRx() {
  if (fd_ >= 0) ::close(fd_);
}

int PacketSocketRx::receive(const Handler& fn, std::uint64_t& truncated) {
  const std::size_t n_max = msgs_.size();
  for (std::size_t i = 0; i < n_max; ++i) {
    iov_[i] = iovec{data_.data() + i * max_datagram_, max_datagram_};
    msgs_[i] = mmsghdr{};
    msgs_[i].msg_hdr.msg_name = &from_[i];
    msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  const int n = recvmmsg(fd_, msgs_.data(), static_cast<unsigned>(n_max), MSG_DONTWAIT, nullptr);
  if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
  for (int i = 0; i < n; ++i) {
    const mmsghdr& m = msgs_[static_cast<std::size_t>(i)];
    const auto& ll = reinterpret_cast<const sockaddr_ll&>(from_[static_cast<std::size_t>(i)]);
    if (ll.sll_pkttype == PACKET_OUTGOING) continue;  // our own, on its way out
    if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
      ++truncated;
      continue;
    }
    fn(std::span<std::uint8_t>(static_cast<std::uint8_t*>(iov_[static_cast<std::size_t>(i)].iov_base), m.msg_len));
  }
  return n;
}

}  // namespace qpgate::verbs::soft
