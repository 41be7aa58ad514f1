// 24-bit packet sequence numbers.
//
// The IBA PSN is 24 bits and wraps; "ahead" means within 2^23 modulo 2^24
// (IBA 9.7.1). rxe implements the comparison as psn_compare(a, b) =
// (s32)((a - b) << 8): shifting the 24-bit difference into the top of a
// 32-bit word makes the sign bit the 2^23 bit. We do the same, without the
// implementation-defined unsigned→signed conversion of the C original.
#pragma once

#include <cstdint>

namespace qpgate::wire {

inline constexpr std::uint32_t kPsnMask = 0x00ffffff;
inline constexpr std::uint32_t kPsnHalfRange = 0x00800000;

// a + n, modulo 2^24. n may be any value (negative steps: pass psn_sub).
constexpr std::uint32_t psn_add(std::uint32_t psn, std::uint32_t n) {
  return (psn + n) & kPsnMask;
}
constexpr std::uint32_t psn_sub(std::uint32_t psn, std::uint32_t n) {
  return (psn - n) & kPsnMask;
}

// Signed distance from b to a in [-2^23, 2^23): positive when a is ahead of b.
// Equals rxe's psn_compare(a, b) >> 8.
constexpr std::int32_t psn_distance(std::uint32_t a, std::uint32_t b) {
  const std::uint32_t d = (a - b) & kPsnMask;
  return d >= kPsnHalfRange ? static_cast<std::int32_t>(d) - static_cast<std::int32_t>(kPsnMask + 1)
                            : static_cast<std::int32_t>(d);
}

// <0, 0, >0 like rxe's psn_compare: a before, equal to, or after b.
constexpr int psn_compare(std::uint32_t a, std::uint32_t b) {
  const std::int32_t d = psn_distance(a, b);
  return d < 0 ? -1 : (d > 0 ? 1 : 0);
}

constexpr bool psn_before(std::uint32_t a, std::uint32_t b) { return psn_compare(a, b) < 0; }
constexpr bool psn_after(std::uint32_t a, std::uint32_t b) { return psn_compare(a, b) > 0; }

}  // namespace qpgate::wire
