// Shared by the transport benchmarks (bench_soft_rc_pingpong, bench_soft_ud_mcast,
// bench_udp_pingpong, bench_udp_mcast): option parsing, CPU pinning, the
// clock, percentiles from qpgate::metrics::LatencyHistogram, and the one
// result line each program prints for bench/transport/run.ts:
//
//   RESULT {"bench":"...", ...}
//
// Everything else a program prints is for people.
#pragma once

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/latency_histogram.h"

namespace qpgate::bench {

inline std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Pins the calling process to one CPU; -1 leaves it alone. Returns false if the kernel refused.
inline bool pin_cpu(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "warning: cannot pin to CPU %d: %s\n", cpu, std::strerror(errno));
    return false;
  }
  return true;
}

// --name value options; flags are --name with no value ("1").
class Args {
 public:
  Args(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) {
        std::fprintf(stderr, "unexpected argument %s\n", argv[i]);
        std::exit(2);
      }
      std::string v = "1";
      if (i + 1 < argc && std::string_view(argv[i + 1]).rfind("--", 0) != 0) v = argv[++i];
      kv_.emplace_back(a.substr(2), v);
    }
  }
  std::string str(const char* name, const char* def) const {
    for (const auto& [k, v] : kv_) {
      if (k == name) return v;
    }
    return def;
  }
  long num(const char* name, long def) const {
    const std::string s = str(name, "");
    return s.empty() ? def : std::strtol(s.c_str(), nullptr, 0);
  }
  double real(const char* name, double def) const {
    const std::string s = str(name, "");
    return s.empty() ? def : std::strtod(s.c_str(), nullptr);
  }

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
};

// HdrHistogram's valueAtPercentile: the highest value equivalent to the
// counter where the cumulative count reaches p% of the total.
inline double percentile_us(const metrics::LatencyHistogram& h, double p) {
  const std::uint64_t total = h.total();
  if (total == 0) return 0;
  auto want = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(total) + 0.5);
  if (want < 1) want = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < metrics::LatencyHistogram::kCountsLength; ++i) {
    seen += h.count_at_index(i);
    if (seen >= want) {
      const std::uint64_t next = i + 1 < metrics::LatencyHistogram::kCountsLength
                                     ? metrics::LatencyHistogram::value_at_index(i + 1)
                                     : metrics::LatencyHistogram::value_at_index(i) + 1;
      return static_cast<double>(next - 1) / 1000.0;
    }
  }
  return 0;
}

// "p50":..,"p99":..,"p999":..,"max":..,"mean":.. in µs (no braces).
inline std::string latency_json(const metrics::LatencyHistogram& h, double mean_us) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"mean\":%.3f,\"samples\":%llu",
                percentile_us(h, 50), percentile_us(h, 99), percentile_us(h, 99.9), percentile_us(h, 100), mean_us,
                static_cast<unsigned long long>(h.total()));
  return buf;
}

// Blocking full read/write on a pipe.
inline bool read_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<std::uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
inline bool write_all(int fd, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = write(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace qpgate::bench
