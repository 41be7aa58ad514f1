// The two IBA protocol timers a QP's attributes encode.
//
// Local ACK timeout (ibv_qp_attr.timeout, 5 bits): the
// requester retransmits when no ACK arrives within 4.096 µs × 2^timeout.
// timeout = 0 means the timer is disabled (infinite). 14 → ≈67 ms, the
// rc_pingpong/rdma_cm default.
//
// RNR NAK timer (the IBA RNR timer table; ibv_qp_attr.min_rnr_timer, 5 bits): the delay
// a responder asks for in an RNR NAK before the requester retries. The codes
// are not a formula: 0 = 655.36 ms, 1 = 0.01 ms, ... 31 = 491.52 ms. rxe's
// table (rxe_comp.c rnrnak_usec) has 61410 µs at code 25; the spec, and this
// table, say 61.44 ms.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

namespace qpgate::verbs {

inline constexpr std::uint8_t kMaxTimeoutCode = 31;
inline constexpr std::uint8_t kMaxRnrTimerCode = 31;
inline constexpr std::uint64_t kInfiniteNs = std::numeric_limits<std::uint64_t>::max();

// 4096 ns × 2^timeout; kInfiniteNs for 0 and for codes above 31.
constexpr std::uint64_t local_ack_timeout_ns(std::uint8_t timeout) {
  if (timeout == 0 || timeout > kMaxTimeoutCode) return kInfiniteNs;
  return std::uint64_t{4096} << timeout;
}

inline constexpr std::array<std::uint32_t, 32> kRnrTimerUs = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

// The RNR delay of a code in µs (codes above 31 are masked to 5 bits, as on the wire).
constexpr std::uint32_t rnr_timer_us(std::uint8_t code) { return kRnrTimerUs[code & 0x1fu]; }
constexpr std::uint64_t rnr_timer_ns(std::uint8_t code) { return std::uint64_t{rnr_timer_us(code)} * 1000u; }

// The smallest code whose delay is at least `us` (to pick min_rnr_timer from
// a wanted back-off). Code 0 (655.36 ms) for anything above 491.52 ms.
constexpr std::uint8_t rnr_timer_code_for_us(std::uint32_t us) {
  std::uint8_t best = 0;
  for (std::uint8_t c = 1; c <= kMaxRnrTimerCode; ++c) {
    if (kRnrTimerUs[c] >= us && (best == 0 || kRnrTimerUs[c] < kRnrTimerUs[best])) best = c;
  }
  return best;
}

}  // namespace qpgate::verbs
