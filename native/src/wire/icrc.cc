#include "wire/icrc.h"

#include <cassert>
#include <climits>
#include <cstring>

#if defined(QPGATE_CRC_ISAL)
#include <isa-l/crc.h>
#else
#include <zlib.h>
#endif

#include "wire/byte_order.h"
#include "wire/opcode.h"

namespace qpgate::wire {
namespace {

constexpr std::size_t kMaskedLrhBytes = 8;
// 8 (LRH) + 40 (IPv6) + 8 (UDP) + 12 (BTH): the masked prefix, built on the
// stack so the caller's packet is never modified (rxe copies it the same way).
constexpr std::size_t kMaxPrefixBytes = kMaskedLrhBytes + kMaxIpUdpHeaderBytes + kBthBytes;

}  // namespace

std::string_view crc_impl_name() {
#if defined(QPGATE_CRC_ISAL)
  return "isal";
#else
  return "zlib";
#endif
}

std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes) {
#if defined(QPGATE_CRC_ISAL)
  // crc32_gzip_refl has zlib's pre/post inversion, so chaining matches crc32().
  return crc32_gzip_refl(crc, bytes.data(), bytes.size());
#else
  // zlib takes uInt lengths; RoCE packets are < 64 KiB but stay safe anyway.
  uLong c = crc;
  const std::uint8_t* p = bytes.data();
  std::size_t n = bytes.size();
  while (n > 0) {
    const uInt chunk = n > UINT_MAX ? UINT_MAX : static_cast<uInt>(n);
    c = ::crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(c);
#endif
}

std::uint32_t icrc_compute(std::span<const std::uint8_t> ip_udp,
                           std::span<const std::uint8_t> transport) {
  assert(!ip_udp.empty() && transport.size() >= kBthBytes);
  std::array<std::uint8_t, kMaxPrefixBytes> prefix;
  std::uint8_t* p = prefix.data();
  std::memset(p, 0xff, kMaskedLrhBytes);
  p += kMaskedLrhBytes;
  const bool v4 = (ip_udp[0] >> 4) == 4;
  const std::size_t ip_len = v4 ? kIpv4HeaderBytes : kIpv6HeaderBytes;
  assert(ip_udp.size() == ip_len + kUdpHeaderBytes);
  std::memcpy(p, ip_udp.data(), ip_len + kUdpHeaderBytes);
  if (v4) {
    p[1] = 0xff;                  // TOS (DSCP + ECN): rewritten by routers
    p[8] = 0xff;                  // TTL: decremented per hop
    p[10] = p[11] = 0xff;         // header checksum: follows TTL
  } else {
    p[0] |= 0x0f;                 // traffic class, high nibble
    p[1] = p[2] = p[3] = 0xff;    // traffic class low nibble + flow label
    p[7] = 0xff;                  // hop limit
  }
  std::uint8_t* udp = p + ip_len;
  udp[6] = udp[7] = 0xff;         // UDP checksum: may be (re)computed in flight
  std::uint8_t* bth = udp + kUdpHeaderBytes;
  std::memcpy(bth, transport.data(), kBthBytes);
  bth[4] = 0xff;                  // FECN/BECN/resv6: set by switches (rxe: bth->qpn |= ~BTH_QPN_MASK)
  const std::size_t prefix_len = kMaskedLrhBytes + ip_len + kUdpHeaderBytes + kBthBytes;
  std::uint32_t crc = crc32_update(0, std::span<const std::uint8_t>(prefix.data(), prefix_len));
  return crc32_update(crc, transport.subspan(kBthBytes));
}

std::uint32_t icrc_stored(std::span<const std::uint8_t> roce) {
  assert(roce.size() >= kIcrcBytes);
  return load_le32(roce.data() + roce.size() - kIcrcBytes);
}

bool icrc_verify(const OuterView& outer) {
  if (outer.roce.size() < kBthBytes + kIcrcBytes) return false;
  const auto covered = outer.roce.first(outer.roce.size() - kIcrcBytes);
  return icrc_compute(outer.ip_udp(), covered) == icrc_stored(outer.roce);
}

IcrcPseudoHeader icrc_pseudo_header(const UdpFlow& flow, std::size_t roce_len) {
  IcrcPseudoHeader h;
  h.size = static_cast<std::uint8_t>(build_ip_udp_headers(h.bytes, flow, roce_len));
  return h;
}

bool icrc_verify(std::span<const std::uint8_t> roce, const UdpFlow& flow) {
  if (roce.size() < kBthBytes + kIcrcBytes) return false;
  const IcrcPseudoHeader h = icrc_pseudo_header(flow, roce.size());
  if (h.size == 0) return false;
  return icrc_compute(h.span(), roce.first(roce.size() - kIcrcBytes)) == icrc_stored(roce);
}

bool icrc_verify(std::span<const std::uint8_t> roce, std::span<const std::uint8_t> ip_udp) {
  if (roce.size() < kBthBytes + kIcrcBytes || ip_udp.empty()) return false;
  const IpFamily family = (ip_udp[0] >> 4) == 6 ? IpFamily::kIpv6 : IpFamily::kIpv4;
  if (ip_udp.size() != ip_udp_header_bytes(family)) return false;
  return icrc_compute(ip_udp, roce.first(roce.size() - kIcrcBytes)) == icrc_stored(roce);
}

void icrc_store(std::span<std::uint8_t> roce, std::span<const std::uint8_t> ip_udp) {
  assert(roce.size() >= kBthBytes + kIcrcBytes);
  const std::size_t n = roce.size() - kIcrcBytes;
  store_le32(roce.data() + n, icrc_compute(ip_udp, std::span<const std::uint8_t>(roce.data(), n)));
}

void icrc_store(std::span<std::uint8_t> roce, const UdpFlow& flow) {
  const IcrcPseudoHeader h = icrc_pseudo_header(flow, roce.size());
  assert(h.size != 0);
  icrc_store(roce, h.span());
}

}  // namespace qpgate::wire
