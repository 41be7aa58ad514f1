// bench_icrc: what one RoCEv2 ICRC costs with zlib's crc32 and with ISA-L's
// crc32_gzip_refl, for 64 B, 1 KiB and 4 KiB payloads over IPv4. Each sample
// is the full ICRC of one packet (masked 68-byte prefix + headers + payload),
// timed in batches so the clock's own cost stays out of the figures.
//
//   bench_icrc [iterations]
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#if defined(QPGATE_BENCH_HAVE_ISAL)
#include <isa-l/crc.h>
#endif

#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

namespace {

using Clock = std::chrono::steady_clock;
using CrcFn = std::uint32_t (*)(std::uint32_t, const std::uint8_t*, std::size_t);

std::uint32_t crc_zlib(std::uint32_t c, const std::uint8_t* p, std::size_t n) {
  return static_cast<std::uint32_t>(::crc32(c, p, static_cast<uInt>(n)));
}
#if defined(QPGATE_BENCH_HAVE_ISAL)
std::uint32_t crc_isal(std::uint32_t c, const std::uint8_t* p, std::size_t n) {
  return crc32_gzip_refl(c, p, n);
}
#endif

// The ICRC as icrc.cc computes it, with the CRC function as a parameter so
// that both libraries run the same code.
std::uint32_t icrc_with(CrcFn crc, std::span<const std::uint8_t> ip_udp,
                        std::span<const std::uint8_t> transport) {
  std::uint8_t prefix[8 + 28 + 12];
  std::fill(prefix, prefix + 8, 0xff);
  std::copy(ip_udp.begin(), ip_udp.end(), prefix + 8);
  prefix[8 + 1] = prefix[8 + 8] = prefix[8 + 10] = prefix[8 + 11] = 0xff;
  prefix[8 + 26] = prefix[8 + 27] = 0xff;
  std::copy(transport.begin(), transport.begin() + 12, prefix + 36);
  prefix[36 + 4] = 0xff;
  const std::uint32_t c = crc(0, prefix, sizeof prefix);
  return crc(c, transport.data() + 12, transport.size() - 12);
}

struct Stats {
  double p50, p90, p99, p999, mean;
};

Stats measure(CrcFn crc, std::span<const std::uint8_t> ip_udp, std::span<const std::uint8_t> transport,
              int samples, int batch, std::uint32_t* sink) {
  std::vector<double> ns(static_cast<std::size_t>(samples));
  for (int w = 0; w < 2000; ++w) *sink += icrc_with(crc, ip_udp, transport);
  for (int s = 0; s < samples; ++s) {
    const auto t0 = Clock::now();
    for (int b = 0; b < batch; ++b) *sink += icrc_with(crc, ip_udp, transport);
    const auto t1 = Clock::now();
    ns[static_cast<std::size_t>(s)] =
        std::chrono::duration<double, std::nano>(t1 - t0).count() / batch;
  }
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1))];
  };
  double sum = 0;
  for (double v : ns) sum += v;
  return Stats{at(0.5), at(0.9), at(0.99), at(0.999), sum / static_cast<double>(ns.size())};
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int batch = 16;
  const qpgate::wire::UdpFlow flow{qpgate::wire::IpAddress::v4(127, 0, 0, 1),
                                   qpgate::wire::IpAddress::v4(127, 0, 0, 2), 0xc123, 4791};
  std::uint32_t sink = 0;
  std::printf("ICRC per packet (RC SEND_ONLY over IPv4), ns; %d samples of %d packets; wire uses %.*s\n",
              samples, batch, static_cast<int>(qpgate::wire::crc_impl_name().size()),
              qpgate::wire::crc_impl_name().data());
  std::printf("%-6s %-6s %8s %8s %8s %8s %8s %9s\n", "impl", "bytes", "p50", "p90", "p99", "p99.9",
              "mean", "GB/s@p50");
  struct Impl {
    const char* name;
    CrcFn fn;
  };
  std::vector<Impl> impls = {{"zlib", crc_zlib}};
#if defined(QPGATE_BENCH_HAVE_ISAL)
  impls.push_back({"isal", crc_isal});
#endif
  for (std::size_t payload : {std::size_t{64}, std::size_t{1024}, std::size_t{4096}}) {
    qpgate::wire::PacketFields f;
    f.bth.opcode = static_cast<std::uint8_t>(qpgate::wire::Opcode::kRcSendOnly);
    std::vector<std::uint8_t> pl(payload, 0x5a);
    std::vector<std::uint8_t> roce(qpgate::wire::encoded_size(f.bth.opcode, payload));
    (void)qpgate::wire::encode(f, pl, flow, roce);
    const auto pseudo = qpgate::wire::icrc_pseudo_header(flow, roce.size());
    const std::span<const std::uint8_t> transport(roce.data(), roce.size() - 4);
    for (const Impl& impl : impls) {
      if (icrc_with(impl.fn, pseudo.span(), transport) != qpgate::wire::icrc_stored(roce)) {
        std::fprintf(stderr, "%s disagrees with qpgate::wire\n", impl.name);
        return 1;
      }
      const Stats s = measure(impl.fn, pseudo.span(), transport, samples, batch, &sink);
      std::printf("%-6s %-6zu %8.1f %8.1f %8.1f %8.1f %8.1f %9.2f\n", impl.name, payload, s.p50,
                  s.p90, s.p99, s.p999, s.mean, static_cast<double>(roce.size()) / s.p50);
    }
  }
  std::printf("(checksum sink %08x)\n", sink);
  return 0;
}
