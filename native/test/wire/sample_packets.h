// Deterministic sample packets of every opcode, for tests, the pcap writer
// tool and fuzz seeds.
#pragma once

#include <cstdint>
#include <vector>

#include "wire/ip_udp.h"
#include "wire/opcode.h"
#include "wire/packet.h"

namespace qpgate::testing {

inline wire::UdpFlow sample_flow_v4(std::uint32_t src_qpn = 0x000123) {
  return wire::UdpFlow{wire::IpAddress::v4(127, 0, 0, 1), wire::IpAddress::v4(127, 0, 0, 2),
                       wire::roce_src_port(src_qpn), wire::kRoceV2Port};
}

inline wire::UdpFlow sample_flow_v6(std::uint32_t src_qpn = 0x000123) {
  return wire::UdpFlow{
      wire::IpAddress::v6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}),
      wire::IpAddress::v6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}),
      wire::roce_src_port(src_qpn), wire::kRoceV2Port};
}

// Field values that differ per opcode and exercise every bit group
// (24-bit QPN/PSN/MSN near their top, 64-bit VAs with high bits set).
inline wire::PacketFields sample_fields(const wire::OpcodeInfo& op, std::uint32_t n = 0) {
  wire::PacketFields f;
  const auto code = static_cast<std::uint8_t>(op.opcode);
  f.bth.opcode = code;
  f.bth.solicited = op.is(wire::kOpImm);
  f.bth.pkey = 0xffff;
  f.bth.dest_qpn = op.transport == wire::Transport::kUd ? 0xffffff : 0x00a000 + code + n;
  f.bth.ack_req = op.ack_req_allowed() && op.is_last();
  f.bth.psn = (0xfffff0u + code + n) & wire::kPsnMask;
  f.deth = {0x11111111u + n, 0x000123u + n};
  f.reth = {0xffff800012345000ull + code, 0xabc00000u + code, 4096u + code};
  f.atomic_eth = {0x00007f0000001000ull + 8u * code, 0x1234u + code, 0x0102030405060708ull + code,
                  0xf0e0d0c0b0a09080ull + code};
  f.aeth = {static_cast<std::uint8_t>(code == 0x11 ? 0x60 + (n % 4) : 0x1f),
            (0x00fffff0u + code + n) & 0x00ffffffu};
  f.orig_remote_data = 0x8877665544332211ull + code;
  f.imm = 0xdeadbe00u + code;
  return f;
}

// `f` with the headers the opcode does not carry reset to their defaults:
// what fields_of() of the encoded packet gives back.
inline wire::PacketFields only_carried(const wire::PacketFields& f, const wire::OpcodeInfo& op) {
  wire::PacketFields out;
  out.bth = f.bth;
  if (op.has(wire::Header::kDeth)) out.deth = f.deth;
  if (op.has(wire::Header::kReth)) out.reth = f.reth;
  if (op.has(wire::Header::kAtomicEth)) out.atomic_eth = f.atomic_eth;
  if (op.has(wire::Header::kAeth)) out.aeth = f.aeth;
  if (op.has(wire::Header::kAtomicAckEth)) out.orig_remote_data = f.orig_remote_data;
  if (op.has(wire::Header::kImmDt)) out.imm = f.imm;
  return out;
}

inline std::vector<std::uint8_t> sample_payload(std::size_t n, std::uint8_t seed = 0) {
  std::vector<std::uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 7 + seed + 1);
  return p;
}

// A payload length that is legal for the opcode: FIRST/MIDDLE carry a
// multiple of 4 (one PMTU), LAST/ONLY any length.
inline std::size_t sample_payload_len(const wire::OpcodeInfo& op, std::size_t wanted) {
  if (!op.carries_payload()) return 0;
  if (!op.is_last()) return wanted & ~std::size_t{3};
  return wanted;
}

// BTH .. ICRC of a sample packet, sealed for `flow`.
inline std::vector<std::uint8_t> encode_sample(const wire::OpcodeInfo& op, std::size_t payload_len,
                                               const wire::UdpFlow& flow, std::uint32_t n = 0) {
  const auto payload = sample_payload(sample_payload_len(op, payload_len), static_cast<std::uint8_t>(n));
  const auto fields = sample_fields(op, n);
  std::vector<std::uint8_t> out(wire::encoded_size(fields.bth.opcode, payload.size()));
  auto r = wire::encode(fields, payload, flow, out);
  if (!r.ok()) return {};
  out.resize(*r);
  return out;
}

}  // namespace qpgate::testing
