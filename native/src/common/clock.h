// The process's clocks, one definition for every layer (wire, verbs, engine,
// feed, orders). CLOCK_MONOTONIC for intervals, deadlines and receive
// timestamps (it never jumps; the vDSO makes it a ~20 ns read with no
// syscall); CLOCK_REALTIME only for wall-clock stamps that leave the
// process. Both in nanoseconds as uint64 so arithmetic never overflows
// before the year 2554.
#pragma once

#include <cstdint>
#include <ctime>

namespace qpgate {

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

inline std::uint64_t realtime_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace qpgate
