// fuzz_wire_decode: arbitrary bytes into every decoder the raw receive path
// runs (outer IPv4/IPv6 + UDP parser, transport decoder, ICRC check), with
// the invariants that make a decode safe to act on:
//   - every view and the payload of a successful decode lie inside the input;
//   - encode(decode(x)) reproduces x (headers and payload; pad bytes, CNP
//     reserved bytes and the ICRC are not fields);
//   - a packet we re-seal with its ICRC then verifies on both paths.
// The input is tried both as an IP datagram and as a bare UDP payload.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"
#include "wire/rx_counters.h"

namespace {

using namespace qpgate::wire;  // NOLINT(google-build-using-namespace)

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(const std::uint8_t* p, std::size_t n, std::span<const std::uint8_t> in) {
  return p >= in.data() && p + n <= in.data() + in.size();
}

void check_packet(const Packet& p, std::span<const std::uint8_t> roce) {
  const OpcodeInfo& op = *p.op;
  check(p.bytes.data() == roce.data() && p.bytes.size() == roce.size());
  check(inside(p.payload.data(), p.payload.size(), roce) || p.payload.empty());
  check(p.payload.data() == roce.data() + op.length);
  check(std::size_t{op.length} + p.payload.size() + p.pad + kIcrcBytes == roce.size());
  check(p.pad < 4);
  for (std::size_t h = 0; h < kHeaderKinds; ++h) {
    const auto header = static_cast<Header>(h);
    if (op.has(header)) check(inside(roce.data() + op.offset_of(header), header_bytes(header), roce));
  }
  check(p.kind() == (op.opcode == Opcode::kCnp ? PacketKind::kCnp : PacketKind::kIb));

  // Round trip through the fields.
  const PacketFields f = fields_of(p);
  std::vector<std::uint8_t> out(encoded_size(f.bth.opcode, p.payload.size()));
  check(out.size() == roce.size());
  const auto n = encode(f, p.payload, out);
  check(n.ok() && *n == roce.size());
  const std::size_t headers = op.has(Header::kCnpReserved) ? kBthBytes : op.length;
  check(std::memcmp(out.data(), roce.data(), headers) == 0);
  if (!p.payload.empty()) check(std::memcmp(out.data() + op.length, p.payload.data(), p.payload.size()) == 0);
  const auto again = decode(out);
  check(again.ok() && fields_of(*again) == f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  RxCounters counters;

  // As an IP datagram (raw path).
  const auto outer = parse_ip_udp(in);
  if (outer.ok()) {
    check(inside(outer->ip_header.data(), outer->ip_header.size(), in));
    check(inside(outer->udp_header.data(), outer->udp_header.size(), in));
    check(outer->roce.empty() || inside(outer->roce.data(), outer->roce.size(), in));
    check(outer->flow.dst_port == kRoceV2Port);
    (void)icrc_verify(*outer);
    const auto p = decode_verified(*outer);
    counters.count(p);
    const auto s = decode(outer->roce);
    if (s.ok()) {
      check_packet(*s, outer->roce);
      // Re-sealed with the real headers, it verifies.
      std::vector<std::uint8_t> roce(outer->roce.begin(), outer->roce.end());
      icrc_store(roce, outer->ip_udp());
      const auto v = decode_verified(roce, outer->flow);
      check(v.ok() || v.error() == DecodeError::kIcrcMismatch);  // IPv4 ID != 0 cannot verify here
      if (outer->family == IpFamily::kIpv6) check(v.ok());
    }
  } else {
    counters.count(outer.error());
  }

  // As a UDP payload (plain socket path).
  const auto p = decode(in);
  if (p.ok()) {
    check_packet(*p, in);
    const UdpFlow flow{IpAddress::v4(127, 0, 0, 1), IpAddress::v4(127, 0, 0, 2), 0xc000, kRoceV2Port};
    std::vector<std::uint8_t> roce(in.begin(), in.end());
    icrc_store(roce, flow);
    check(decode_verified(roce, flow).ok());
  }
  (void)decode_verified(in, UdpFlow{});
  counters.count(p);
  return 0;
}
