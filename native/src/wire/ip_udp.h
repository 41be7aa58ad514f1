// The outer IPv4/IPv6 + UDP headers of RoCEv2 (IBA Annex A17.4).
//
// Parsing serves the raw receive path (AF_PACKET/AF_XDP hands us the IP
// packet, whose exact header bytes the ICRC covers). Building serves pcap
// writing in tests, a raw transmit path, and the ICRC pseudo header of a
// plain UDP socket, which never sees the real IP header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/result.h"

namespace qpgate::wire {

inline constexpr std::uint16_t kRoceV2Port = 4791;  // IANA, Annex A17.4.2
inline constexpr std::size_t kIpv4HeaderBytes = 20;
inline constexpr std::size_t kIpv6HeaderBytes = 40;
inline constexpr std::size_t kUdpHeaderBytes = 8;
inline constexpr std::size_t kMaxIpUdpHeaderBytes = kIpv6HeaderBytes + kUdpHeaderBytes;
inline constexpr std::uint8_t kIpProtoUdp = 17;

enum class IpFamily : std::uint8_t { kIpv4, kIpv6 };

struct IpAddress {
  IpFamily family = IpFamily::kIpv4;
  std::array<std::uint8_t, 16> bytes{};  // IPv4: the first 4 bytes, network order

  static IpAddress v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return IpAddress{IpFamily::kIpv4, {a, b, c, d}};
  }
  static IpAddress v6(const std::array<std::uint8_t, 16>& b) { return IpAddress{IpFamily::kIpv6, b}; }
  bool operator==(const IpAddress&) const = default;
};

// One direction of a RoCEv2 UDP flow.
struct UdpFlow {
  IpAddress src;
  IpAddress dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = kRoceV2Port;
  bool operator==(const UdpFlow&) const = default;
};

struct OuterOptions {
  // IPv4. ID 0 with DF is what an unconnected Linux UDP socket with
  // IP_PMTUDISC_DO sends (ip_select_ident_segs), so it is the ID a plain
  // socket receiver must assume when it synthesizes the ICRC pseudo header.
  std::uint16_t ipv4_id = 0;
  bool ipv4_dont_fragment = true;
  std::uint8_t tos_or_traffic_class = 0;  // DSCP/ECN; masked out of the ICRC
  std::uint8_t ttl_or_hop_limit = 64;     // masked out of the ICRC
  std::uint32_t ipv6_flow_label = 0;      // masked out of the ICRC
  // rxe sends UDP checksum 0 over IPv4 and IPv6 (prepare_udp_hdr). IPv4
  // allows it; IPv6 forbids it outside RFC 6935 tunnels, and Wireshark flags
  // it as an error, so by default we compute it for IPv6. The ICRC masks the
  // checksum, so either choice yields the same ICRC.
  bool ipv6_udp_checksum = true;
};

constexpr std::size_t ip_udp_header_bytes(IpFamily f) {
  return (f == IpFamily::kIpv4 ? kIpv4HeaderBytes : kIpv6HeaderBytes) + kUdpHeaderBytes;
}

// Writes the IP and UDP headers for a UDP payload of `udp_payload_len` bytes
// into the front of `out`, with lengths computed, the IPv4 header checksum
// filled in and the UDP checksum 0. Returns the header size, or 0 when `out`
// is too small or the payload does not fit the IP length field.
std::size_t build_ip_udp_headers(std::span<std::uint8_t> out, const UdpFlow& flow,
                                 std::size_t udp_payload_len, const OuterOptions& opt = {});

// A whole IP datagram: headers + `udp_payload`, UDP checksum per `opt`.
// Returns the datagram size, or 0 when `out` is too small.
std::size_t build_ip_udp_datagram(std::span<std::uint8_t> out, const UdpFlow& flow,
                                  std::span<const std::uint8_t> udp_payload,
                                  const OuterOptions& opt = {});

// RFC 768/8200 UDP checksum over the pseudo header, UDP header and payload
// (`udp` = UDP header + payload, its checksum field taken as zero).
std::uint16_t udp_checksum(const UdpFlow& flow, std::span<const std::uint8_t> udp);

// RFC 1071 checksum of an IPv4 header (its checksum field taken as zero).
std::uint16_t ipv4_header_checksum(std::span<const std::uint8_t> header);

// RoCEv2 UDP source ports. Annex A17.4.2 leaves the value to the sender but
// asks that one QP stay one ECMP flow; both rules keep it in 0xC000-0xFFFF.
//
// The QP's own rule: 0xC000 | (hash_32(qpn, 14) & 0x3fff). rxe sets this at
// QP creation (rxe_qp.c) and it is what UD QPs send with (every UD packet in
// the reference captures agrees).
std::uint16_t roce_src_port(std::uint32_t qpn);
// The connected-QP rule, the kernel's rdma_get_udp_sport(): from the GRH flow
// label, or when it is 0 from rdma_calc_flow_label(local, remote) — a hash
// of the QPN pair. rxe >= 5.17 switches an RC/UC QP to this on modify_qp
// with an address vector, so the RC packets of the captures use it, not the
// rule above (rc-pingpong: QPs 0x11/0x11 send from 0xC121).
std::uint16_t roce_src_port_connected(std::uint32_t flow_label, std::uint32_t local_qpn,
                                      std::uint32_t remote_qpn);

struct OuterView {
  IpFamily family = IpFamily::kIpv4;
  UdpFlow flow;
  std::uint16_t ipv4_id = 0;
  std::span<const std::uint8_t> ip_header;   // 20 or 40 bytes
  std::span<const std::uint8_t> udp_header;  // 8 bytes, directly after ip_header
  std::span<const std::uint8_t> roce;        // the UDP payload: BTH .. ICRC
  // IP header + UDP header: what the ICRC pseudo header is made from.
  std::span<const std::uint8_t> ip_udp() const {
    return std::span<const std::uint8_t>(ip_header.data(), ip_header.size() + udp_header.size());
  }
};

// Parses an IP datagram (starting at the IP version nibble) carrying RoCEv2.
// Bytes after the IP length (Ethernet minimum-frame padding) are ignored.
// IPv4 options and IPv6 extension headers are rejected, as rxe's ICRC
// covers exactly a 20 or 40 byte IP header.
Result<OuterView> parse_ip_udp(std::span<const std::uint8_t> datagram);

}  // namespace qpgate::wire
