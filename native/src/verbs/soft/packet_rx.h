// The af-packet receive mode of the soft device: RoCEv2 datagrams read with
// their IP and UDP headers through an AF_PACKET socket, so the ICRC can be
// checked against the headers as sent, IPv4 ID included. A plain UDP socket
// never sees the ID; our own senders write 0 (net.h), but rxe and NICs take
// it from the kernel's counter, and their ICRC covers it.
//
//   - SOCK_DGRAM on ETH_P_IP, bound to the interface that owns the device's
//     address: reads start at the IPv4 header.
//   - A classic BPF filter in the kernel keeps UDP to port 4791 that is not
//     a fragment (RoCEv2 sets DF), so other traffic never wakes us.
//   - PACKET_OUTGOING copies (what this host sends, seen again on the way
//     out) are skipped. The kernel does not show AF_PACKET sockets the
//     local loop copy of a multicast datagram (PACKET_LOOPBACK), so a group
//     sender on the same host and a non-loopback interface is not received
//     in this mode (docs/protocol.md §1.8).
//
// Needs CAP_NET_RAW; without it open() fails with EPERM and says so.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "verbs/error.h"

namespace qpgate::verbs::soft {

class PacketSocketRx {
 public:
  // A datagram from its IPv4 header on; valid during the call.
  using Handler = std::function<void(std::span<std::uint8_t> datagram)>;

  static Result<PacketSocketRx> open(const std::string& interface, int rcvbuf, std::uint32_t batch,
                                     std::size_t max_datagram);
  PacketSocketRx(PacketSocketRx&& other) noexcept;
  PacketSocketRx& operator=(PacketSocketRx&& other) noexcept;
  PacketSocketRx(const PacketSocketRx&) = delete;
  PacketSocketRx& operator=(const PacketSocketRx&) = delete;
  ~PacketSocketRx();

  int fd() const { return fd_; }
  // One recvmmsg of up to `batch` datagrams; fn for each that arrived (not
  // our own outgoing copies, not truncated). Returns datagrams read, -errno
  // on a socket error (EAGAIN is 0).
  int receive(const Handler& fn, std::uint64_t& truncated);

 private:
  PacketSocketRx() = default;
  int fd_ = -1;
  std::size_t max_datagram_ = 0;
  std::vector<std::uint8_t> data_;
  std::vector<sockaddr_storage> from_;
  std::vector<iovec> iov_;
  std::vector<mmsghdr> msgs_;
};

// A filter that drops every datagram, for the UDP sockets that still hold
// <address>:4791 and the group memberships in af-packet mode: the port must
// stay bound (or the kernel answers ICMP port unreachable), but their copy
// of each packet would only fill a queue nobody reads.
bool attach_drop_all_filter(int fd);

}  // namespace qpgate::verbs::soft
