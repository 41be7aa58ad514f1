// Failure handling shared by the benchmarks that drive a verbs device
// (bench_soft_rc_pingpong, bench_soft_ud_mcast, bench/rdma/bench_ibv_lat):
// a benchmark that cannot set up says why and exits 1, from either process
// of a forked pair.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "verbs/error.h"

namespace qpgate::bench {

// Set by main: the program name in every message.
inline const char* program_name = "bench";

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s[%d]: %s\n", program_name, getpid(), what.c_str());
  std::_Exit(1);
}

template <class T>
T take(verbs::Result<T> r, const std::string& what) {
  if (!r.ok()) die(what + ": " + r.error().message);
  return std::move(*r);
}

inline void check(const verbs::Status& s, const std::string& what) {
  if (!s.ok()) die(what + ": " + std::string(s.message()));
}

}  // namespace qpgate::bench
