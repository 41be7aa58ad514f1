// SipHash-2-4 (Aumasson and Bernstein), the keyed hash the duplicate table
// uses so that nobody who does not know the key can choose client order ids
// that collide: with an unkeyed mix, a client could send ids that all land
// in one probe run and make every lookup walk it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qpgate::orders {

struct SipKey {
  std::uint64_t k0 = 0;
  std::uint64_t k1 = 0;
};

// A key from getrandom(2) (the urandom pool: it does not block after boot);
// false if the kernel refused, so the caller can refuse to start.
bool random_sip_key(SipKey& key);

namespace detail {
constexpr std::uint64_t rotl(std::uint64_t x, int b) noexcept { return (x << b) | (x >> (64 - b)); }

struct SipState {
  std::uint64_t v0, v1, v2, v3;
  void round() noexcept {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  }
  void absorb(std::uint64_t m) noexcept {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};
}  // namespace detail

// SipHash-2-4 of `length` bytes (little-endian words, as the reference).
inline std::uint64_t siphash24(const SipKey& key, const void* data, std::size_t length) noexcept {
  detail::SipState s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL, key.k0 ^ 0x6c7967656e657261ULL,
                     key.k1 ^ 0x7465646279746573ULL};
  const auto* p = static_cast<const std::uint8_t*>(data);
  const std::size_t whole = length - length % 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    std::uint64_t m;
    std::memcpy(&m, p + i, 8);
    s.absorb(m);
  }
  std::uint64_t last = std::uint64_t{length & 0xff} << 56;
  for (std::size_t i = 0; i < length % 8; ++i) last |= std::uint64_t{p[whole + i]} << (8 * i);
  s.absorb(last);
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace qpgate::orders
