// Why a received datagram was not accepted as a RoCEv2 packet.
//
// One value per distinct reason, so that every reject is counted under its
// own name (rx_counters.h) the way rxe's hdr_check/rxe_icrc_check drop paths
// are distinguishable in its counters and logs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qpgate::wire {

enum class DecodeError : std::uint8_t {
  // Outer IP/UDP (raw receive path only).
  kBadIpHeader,         // not IPv4/IPv6, IHL < 5, tot_len/payload length inconsistent with the buffer
  kIpFragment,          // IPv4 MF or fragment offset set: RoCEv2 is never fragmented (DF is set)
  kNotUdp,              // IPv4 protocol / IPv6 next header is not UDP (extension headers included)
  kBadUdpLength,        // UDP length disagrees with the IP payload length
  kNotRoceV2Port,       // UDP destination port is not 4791
  // Transport (BTH onwards).
  kTruncated,           // shorter than BTH + the opcode's extension headers + pad + ICRC
  kUnknownOpcode,       // opcode not in the table (RD, XRC, vendor, reserved)
  kBadTver,             // BTH TVer != 0 (IBA C9-1: only version 0 is defined)
  kReservedNotZero,     // a reserved field we check (BTH resv6/resv7, DETH resv8) is not zero
  kMisalignedLength,    // transport length not a multiple of 4 (IBA pads every packet to 4 B)
  kBadPadCount,         // pad on an opcode without payload or on FIRST/MIDDLE, or pad > payload
  kUnexpectedPayload,   // bytes after the headers of an opcode that carries no payload
  kIcrcMismatch,        // ICRC does not match the masked headers and payload
};

inline constexpr std::size_t kDecodeErrorCount =
    static_cast<std::size_t>(DecodeError::kIcrcMismatch) + 1;

constexpr std::string_view decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::kBadIpHeader: return "bad_ip_header";
    case DecodeError::kIpFragment: return "ip_fragment";
    case DecodeError::kNotUdp: return "not_udp";
    case DecodeError::kBadUdpLength: return "bad_udp_length";
    case DecodeError::kNotRoceV2Port: return "not_rocev2_port";
    case DecodeError::kTruncated: return "truncated";
    case DecodeError::kUnknownOpcode: return "unknown_opcode";
    case DecodeError::kBadTver: return "bad_tver";
    case DecodeError::kReservedNotZero: return "reserved_not_zero";
    case DecodeError::kMisalignedLength: return "misaligned_length";
    case DecodeError::kBadPadCount: return "bad_pad_count";
    case DecodeError::kUnexpectedPayload: return "unexpected_payload";
    case DecodeError::kIcrcMismatch: return "icrc_mismatch";
  }
  return "unknown";
}

}  // namespace qpgate::wire
