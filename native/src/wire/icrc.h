// The RoCEv2 invariant CRC (IBA Annex A17.4.3.1, rxe_icrc.c).
//
// CRC-32 (Ethernet polynomial, reflected, ~ at both ends: zlib's crc32) over
//   8 bytes of 0xFF (the LRH a RoCEv2 packet does not have, "masked")
//   + IPv4 (20 B, TOS/TTL/checksum set to 1s) or IPv6 (40 B, traffic class/
//     flow label/hop limit set to 1s) header
//   + UDP header (checksum set to 1s)
//   + BTH (byte 4, FECN/BECN/resv6, set to 1s)
//   + the other transport headers, payload and pad.
// Masked fields are those routers and switches may rewrite in flight; all
// other fields (IPv4 ID and tot_len included) must match what the sender
// used. rxe stores the result with the bytes of the CPU-order u32, i.e.
// little-endian on the wire — every reference capture agrees.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "wire/ip_udp.h"

namespace qpgate::wire {

// "isal" or "zlib": which CRC-32 this build computes the ICRC with.
std::string_view crc_impl_name();

// zlib-compatible CRC-32, chainable: crc32_update(crc32_update(0, a), b) ==
// crc32_update(0, a || b).
std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes);

// The shared core. `ip_udp` is the IP header (20 or 40 B, family taken from
// its version nibble) followed by the UDP header, unmasked, as sent;
// `transport` is BTH .. pad (everything the ICRC follows, without it).
// Preconditions: ip_udp.size() == ip_udp_header_bytes(family), transport.size() >= 12.
std::uint32_t icrc_compute(std::span<const std::uint8_t> ip_udp,
                           std::span<const std::uint8_t> transport);

// The ICRC stored in the last 4 bytes of `roce` (BTH .. ICRC).
std::uint32_t icrc_stored(std::span<const std::uint8_t> roce);

// Caller (a), the raw path: the real headers. True when the ICRC in
// outer.roce matches. False for a RoCE payload shorter than BTH + ICRC.
bool icrc_verify(const OuterView& outer);

// Caller (b), a plain UDP socket: only addresses and ports are known, so the
// IP and UDP headers are synthesized as our senders emit them (IPv4 ID 0,
// DF, tot_len from the length; IPv6 payload length from the length).
struct IcrcPseudoHeader {
  std::array<std::uint8_t, kMaxIpUdpHeaderBytes> bytes{};
  std::uint8_t size = 0;
  std::span<const std::uint8_t> span() const { return std::span(bytes.data(), size); }
};
// `roce_len` is the UDP payload length: BTH .. ICRC inclusive.
IcrcPseudoHeader icrc_pseudo_header(const UdpFlow& flow, std::size_t roce_len);
bool icrc_verify(std::span<const std::uint8_t> roce, const UdpFlow& flow);
// The real headers, apart from the payload: `ip_udp` as for icrc_compute
// (false when its size is not that of its IP version's headers).
bool icrc_verify(std::span<const std::uint8_t> roce, std::span<const std::uint8_t> ip_udp);

// Computes and writes the ICRC into the last 4 bytes of `roce`.
// `ip_udp` as for icrc_compute. Precondition: roce.size() >= 16.
void icrc_store(std::span<std::uint8_t> roce, std::span<const std::uint8_t> ip_udp);
void icrc_store(std::span<std::uint8_t> roce, const UdpFlow& flow);

}  // namespace qpgate::wire
