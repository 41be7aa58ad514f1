// orders_codec_roundtrip IN OUT: for each length-prefixed (u32 LE) message in
// IN, decode it with the native codec and write to OUT a status byte (0 =
// decoded, 1 = refused), a u32 LE length and either our re-encoding of it or
// the refusal's message. protobufjs_interop.mjs drives it.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "orders/codec.h"

int main(int argc, char** argv) {
  using namespace qpgate::orders;  // NOLINT(google-build-using-namespace)
  if (argc != 3) {
    std::fprintf(stderr, "usage: orders_codec_roundtrip IN OUT\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<char> all{std::istreambuf_iterator<char>(in), {}};
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  std::size_t at = 0;
  while (at + 4 <= all.size()) {
    std::uint32_t len = 0;
    for (int i = 3; i >= 0; --i) len = (len << 8) | static_cast<std::uint8_t>(all[at + static_cast<std::size_t>(i)]);
    at += 4;
    if (at + len > all.size()) return 3;
    const std::vector<std::uint8_t> bytes(all.begin() + static_cast<std::ptrdiff_t>(at),
                                          all.begin() + static_cast<std::ptrdiff_t>(at + len));
    at += len;
    OrderMessage m;
    const DecodeResult r = decode(bytes, m);
    std::vector<std::uint8_t> payload;
    std::uint8_t status = 0;
    if (r.ok()) {
      payload.resize(kMaxEncodedBytes);
      payload.resize(encode(m, payload));
    } else {
      status = 1;
      payload.assign(r.text().begin(), r.text().end());
    }
    const auto n = static_cast<std::uint32_t>(payload.size());
    const char header[5] = {static_cast<char>(status), static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                            static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
    out.write(header, 5);
    out.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(payload.size()));
  }
  return 0;
}
