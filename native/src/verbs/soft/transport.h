// The seam between a soft queue pair (the IB transport rules: requester,
// responder, completer; soft_qp.*) and the soft device that carries its
// packets (UDP sockets, ingress checks, multicast; soft_device.*, net.*,
// recv.*). A QP never touches a socket: it hands finished RoCEv2 packets to
// PacketTx and is given decoded packets by the device's ingress. So the
// transport rules can be tested over an in-memory wire with loss, reordering
// and duplication, and the device over real UDP.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "verbs/error.h"
#include "wire/ip_udp.h"

namespace qpgate::verbs::soft {

// One RoCEv2 packet to send: the UDP flow, the IP-level QoS and the bytes
// from the BTH to the ICRC inclusive. The ICRC is already computed, for the
// IP header the kernel will write (IPv4 ID 0, DF, see docs/protocol.md).
struct TxPacket {
  wire::UdpFlow flow;
  std::uint8_t traffic_class = 0;  // → IP TOS (DSCP+ECN) / IPv6 traffic class
  std::uint8_t hop_limit = 64;     // → IPv4 TTL / IPv6 hop limit
  std::span<const std::uint8_t> roce;
};

class PacketTx {
 public:
  virtual ~PacketTx() = default;
  // Queues the packet; the bytes are copied before return. False when the
  // transmit queue is full: back-pressure, the caller keeps the work and
  // tries again on a later duty cycle (nothing is dropped silently).
  virtual bool transmit(const TxPacket& packet) = 0;
};

// What the ingress knows about a packet it hands to a QP.
struct RxMeta {
  wire::UdpFlow flow;              // as received (src = the peer)
  std::uint8_t traffic_class = 0;  // from IP_TOS / IPV6_TCLASS cmsg when available
  std::uint8_t hop_limit = 0;
  std::int64_t rx_ns = 0;          // CLOCK_MONOTONIC at receive
  // The IP and UDP headers exactly as received, when the receive path saw
  // them (the af-packet receive mode): the ICRC is then checked against
  // them, IPv4 ID included, instead of a pseudo header that assumes ID 0.
  std::uint8_t ip_udp_len = 0;     // 0: not seen (plain UDP socket)
  std::array<std::uint8_t, wire::kMaxIpUdpHeaderBytes> ip_udp{};
  std::span<const std::uint8_t> ip_udp_seen() const { return {ip_udp.data(), ip_udp_len}; }
};

// Joins and leaves IP multicast groups for the QPs of one device. The
// device implements it (IP_ADD_MEMBERSHIP on its interface); tests use a fake.
class MulticastMembership {
 public:
  virtual ~MulticastMembership() = default;
  virtual Status join(const wire::IpAddress& group) = 0;
  virtual Status leave(const wire::IpAddress& group) = 0;
};

}  // namespace qpgate::verbs::soft
