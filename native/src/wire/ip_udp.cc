#include "wire/ip_udp.h"

#include <cstring>

#include "wire/byte_order.h"

namespace qpgate::wire {
namespace {

constexpr std::uint16_t kIpv4FlagDf = 0x4000;
constexpr std::uint16_t kIpv4FlagMf = 0x2000;
constexpr std::uint16_t kIpv4FragOffsetMask = 0x1fff;

std::uint32_t sum16(std::span<const std::uint8_t> bytes, std::uint32_t acc) {
  std::size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) acc += load_be16(bytes.data() + i);
  if (i < bytes.size()) acc += static_cast<std::uint32_t>(bytes[i]) << 8;
  return acc;
}

std::uint16_t fold(std::uint32_t acc) {
  while ((acc >> 16) != 0) acc = (acc & 0xffff) + (acc >> 16);
  return static_cast<std::uint16_t>(~acc);
}

std::size_t addr_bytes(IpFamily f) { return f == IpFamily::kIpv4 ? 4 : 16; }

}  // namespace

std::uint16_t ipv4_header_checksum(std::span<const std::uint8_t> header) {
  std::uint32_t acc = sum16(header.first(10), 0);
  acc = sum16(header.subspan(12), acc);
  return fold(acc);
}

std::uint16_t udp_checksum(const UdpFlow& flow, std::span<const std::uint8_t> udp) {
  const std::size_t n = addr_bytes(flow.src.family);
  std::uint32_t acc = sum16(std::span(flow.src.bytes.data(), n), 0);
  acc = sum16(std::span(flow.dst.bytes.data(), n), acc);
  // Pseudo header length and protocol: RFC 768 (16-bit length) and RFC 8200
  // 8.1 (32-bit length); both sum to the same value for lengths < 64 KiB.
  acc += kIpProtoUdp + static_cast<std::uint32_t>(udp.size() & 0xffff) +
         static_cast<std::uint32_t>(udp.size() >> 16);
  acc = sum16(udp.first(6), acc);
  acc = sum16(udp.subspan(8), acc);
  std::uint16_t c = fold(acc);
  // RFC 768: a computed 0 is sent as 0xffff, since 0 means "no checksum".
  return c == 0 ? 0xffff : c;
}

std::size_t build_ip_udp_headers(std::span<std::uint8_t> out, const UdpFlow& flow,
                                 std::size_t udp_payload_len, const OuterOptions& opt) {
  const IpFamily f = flow.src.family;
  const std::size_t hdr = ip_udp_header_bytes(f);
  const std::size_t udp_len = kUdpHeaderBytes + udp_payload_len;
  const std::size_t ip_len = (f == IpFamily::kIpv4 ? kIpv4HeaderBytes : 0) + udp_len;
  if (out.size() < hdr || ip_len > 0xffff || flow.dst.family != f) return 0;
  std::uint8_t* p = out.data();
  std::uint8_t* udp = nullptr;
  if (f == IpFamily::kIpv4) {
    p[0] = 0x45;
    p[1] = opt.tos_or_traffic_class;
    store_be16(p + 2, static_cast<std::uint16_t>(ip_len));
    store_be16(p + 4, opt.ipv4_id);
    store_be16(p + 6, opt.ipv4_dont_fragment ? kIpv4FlagDf : 0);
    p[8] = opt.ttl_or_hop_limit;
    p[9] = kIpProtoUdp;
    std::memcpy(p + 12, flow.src.bytes.data(), 4);
    std::memcpy(p + 16, flow.dst.bytes.data(), 4);
    store_be16(p + 10, ipv4_header_checksum(std::span<const std::uint8_t>(p, kIpv4HeaderBytes)));
    udp = p + kIpv4HeaderBytes;
  } else {
    const std::uint32_t word0 = (6u << 28) | (std::uint32_t{opt.tos_or_traffic_class} << 20) |
                                (opt.ipv6_flow_label & 0xfffff);
    store_be32(p, word0);
    store_be16(p + 4, static_cast<std::uint16_t>(udp_len));
    p[6] = kIpProtoUdp;
    p[7] = opt.ttl_or_hop_limit;
    std::memcpy(p + 8, flow.src.bytes.data(), 16);
    std::memcpy(p + 24, flow.dst.bytes.data(), 16);
    udp = p + kIpv6HeaderBytes;
  }
  store_be16(udp, flow.src_port);
  store_be16(udp + 2, flow.dst_port);
  store_be16(udp + 4, static_cast<std::uint16_t>(udp_len));
  store_be16(udp + 6, 0);
  return hdr;
}

std::size_t build_ip_udp_datagram(std::span<std::uint8_t> out, const UdpFlow& flow,
                                  std::span<const std::uint8_t> udp_payload,
                                  const OuterOptions& opt) {
  const std::size_t hdr = build_ip_udp_headers(out, flow, udp_payload.size(), opt);
  if (hdr == 0 || out.size() - hdr < udp_payload.size()) return 0;
  if (!udp_payload.empty()) std::memcpy(out.data() + hdr, udp_payload.data(), udp_payload.size());
  if (flow.src.family == IpFamily::kIpv6 && opt.ipv6_udp_checksum) {
    std::uint8_t* udp = out.data() + kIpv6HeaderBytes;
    store_be16(udp + 6, udp_checksum(flow, std::span<const std::uint8_t>(
                                               udp, kUdpHeaderBytes + udp_payload.size())));
  }
  return hdr + udp_payload.size();
}

std::uint16_t roce_src_port(std::uint32_t qpn) {
  // Linux hash_32(val, 14): multiply by GOLDEN_RATIO_32, keep the top 14 bits.
  constexpr std::uint32_t kGoldenRatio32 = 0x61C88647;
  const std::uint32_t hash = (qpn * kGoldenRatio32) >> (32 - 14);
  return static_cast<std::uint16_t>(0xC000u | (hash & 0x3fffu));
}

std::uint16_t roce_src_port_connected(std::uint32_t flow_label, std::uint32_t local_qpn,
                                      std::uint32_t remote_qpn) {
  constexpr std::uint32_t kFlowLabelMask = 0xfffff;
  std::uint32_t fl = flow_label & kFlowLabelMask;
  if (fl == 0) {
    // Fold the 48-bit product of the two 24-bit QPNs into 20 bits.
    std::uint64_t v = std::uint64_t{local_qpn} * remote_qpn;
    v ^= v >> 20;
    v ^= v >> 40;
    fl = static_cast<std::uint32_t>(v) & kFlowLabelMask;
  }
  // 20-bit label → 14 bits: xor the top 6 bits into the low 14.
  const std::uint32_t low = (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14);
  return static_cast<std::uint16_t>(0xC000u | low);
}

Result<OuterView> parse_ip_udp(std::span<const std::uint8_t> d) {
  OuterView v;
  if (d.empty()) return DecodeError::kBadIpHeader;
  const unsigned version = d[0] >> 4;
  std::size_t ip_hdr = 0;
  std::size_t ip_total = 0;
  std::uint8_t proto = 0;
  if (version == 4) {
    if (d.size() < kIpv4HeaderBytes) return DecodeError::kBadIpHeader;
    // IHL != 5: rxe's ICRC pseudo header is a fixed 20-byte iphdr, so a
    // packet with options cannot be checked the way its sender computed it.
    if ((d[0] & 0x0f) != 5) return DecodeError::kBadIpHeader;
    ip_total = load_be16(d.data() + 2);
    if (ip_total < kIpv4HeaderBytes || ip_total > d.size()) return DecodeError::kBadIpHeader;
    const std::uint16_t frag = load_be16(d.data() + 6);
    if ((frag & (kIpv4FlagMf | kIpv4FragOffsetMask)) != 0) return DecodeError::kIpFragment;
    proto = d[9];
    ip_hdr = kIpv4HeaderBytes;
    v.family = IpFamily::kIpv4;
    v.ipv4_id = load_be16(d.data() + 4);
    v.flow.src.family = v.flow.dst.family = IpFamily::kIpv4;
    std::memcpy(v.flow.src.bytes.data(), d.data() + 12, 4);
    std::memcpy(v.flow.dst.bytes.data(), d.data() + 16, 4);
  } else if (version == 6) {
    if (d.size() < kIpv6HeaderBytes) return DecodeError::kBadIpHeader;
    ip_total = kIpv6HeaderBytes + load_be16(d.data() + 4);
    if (ip_total > d.size()) return DecodeError::kBadIpHeader;
    proto = d[6];
    ip_hdr = kIpv6HeaderBytes;
    v.family = IpFamily::kIpv6;
    v.flow.src.family = v.flow.dst.family = IpFamily::kIpv6;
    std::memcpy(v.flow.src.bytes.data(), d.data() + 8, 16);
    std::memcpy(v.flow.dst.bytes.data(), d.data() + 24, 16);
  } else {
    return DecodeError::kBadIpHeader;
  }
  if (proto != kIpProtoUdp) return DecodeError::kNotUdp;
  if (ip_total - ip_hdr < kUdpHeaderBytes) return DecodeError::kBadUdpLength;
  const std::uint8_t* udp = d.data() + ip_hdr;
  if (load_be16(udp + 4) != ip_total - ip_hdr) return DecodeError::kBadUdpLength;
  v.flow.src_port = load_be16(udp);
  v.flow.dst_port = load_be16(udp + 2);
  if (v.flow.dst_port != kRoceV2Port) return DecodeError::kNotRoceV2Port;
  v.ip_header = d.subspan(0, ip_hdr);
  v.udp_header = d.subspan(ip_hdr, kUdpHeaderBytes);
  v.roce = d.subspan(ip_hdr + kUdpHeaderBytes, ip_total - ip_hdr - kUdpHeaderBytes);
  return v;
}

}  // namespace qpgate::wire
