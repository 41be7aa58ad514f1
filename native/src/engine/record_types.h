// Record types carried by the engine's rings (the int32 `type` of a record,
// see spsc_ring.h). Positive; -1 is the ring's padding. src/native/engine.ts
// has the same numbers under the same names.
#pragma once

#include <cstdint>

namespace qpgate::engine::record_type {

// toEngine: payload bytes to send back. fromEngine: the same bytes followed
// by the engine's receive time, uint64 CLOCK_MONOTONIC ns, host byte order.
inline constexpr std::int32_t kEcho = 1;

}  // namespace qpgate::engine::record_type
