// A GID: the 128-bit address of a port (union ibv_gid). For RoCEv2 over
// IPv4 it is the IPv4-mapped IPv6 address ::ffff:a.b.c.d of the interface,
// and a multicast group a.b.c.d has the MGID ::ffff:a.b.c.d too (the
// kernel's cma_iboe_set_mgid for IB_GID_TYPE_ROCE_UDP_ENCAP).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qpgate::verbs {

struct Gid {
  std::array<std::uint8_t, 16> raw{};  // network byte order, as on the wire

  // ::ffff:a.b.c.d. `ipv4_host` is in host byte order (0x0a000001 = 10.0.0.1).
  static Gid from_ipv4(std::uint32_t ipv4_host);
  // Parses "10.0.0.1" (→ ::ffff:10.0.0.1) or any IPv6 text inet_pton accepts.
  static std::optional<Gid> parse(std::string_view text);

  bool is_zero() const;
  bool is_ipv4_mapped() const;  // ::ffff:0:0/96
  // The IPv4 address in host byte order, when is_ipv4_mapped().
  std::optional<std::uint32_t> to_ipv4() const;
  // A multicast GID: ff00::/8, or an IPv4-mapped 224.0.0.0/4 address (RoCEv2 MGID).
  bool is_multicast() const;

  // RFC 5952 text, as inet_ntop prints it: "::ffff:10.0.0.1", "fe80::1".
  std::string to_string() const;
  // The form ibv_devinfo -v and `rdma` print: eight groups of four hex digits,
  // "0000:0000:0000:0000:0000:ffff:0a00:0001".
  std::string to_long_string() const;

  bool operator==(const Gid&) const = default;
  auto operator<=>(const Gid&) const = default;
};

// "10.0.0.1" from a host-order IPv4 address.
std::string ipv4_to_string(std::uint32_t ipv4_host);
// A host-order IPv4 address from dotted-quad text.
std::optional<std::uint32_t> ipv4_parse(std::string_view text);
constexpr bool ipv4_is_multicast(std::uint32_t ipv4_host) { return (ipv4_host >> 28) == 0xe; }

}  // namespace qpgate::verbs
