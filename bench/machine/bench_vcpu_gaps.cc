// How long this machine takes a CPU away from a thread that never sleeps:
// one spinner per CPU this process may run on (or the first --cpus N of them),
// each pinned to its CPU, reading
// CLOCK_MONOTONIC in a loop for --seconds and recording every gap between
// two reads. A gap is time the thread did not run: the kernel ran something
// else, or the hypervisor did not run the vCPU.
//
// On the 2-vCPU VM this project is built on (bench/README.md, "Two busy
// vCPUs"): one spinner's longest gap is under 2 ms; two spinners, one per
// vCPU, each lose 100 ms at a time, every second or two. The host takes the
// VM's CPUs back when both are busy. A design that keeps both vCPUs busy
// (an engine thread that spins or backs off while the JS thread is busy)
// pays that in its p99; one that leaves a vCPU idle (a driven engine) does not.
// Short gaps decide the p95 and p99 of a round trip of a few tens of µs: a
// spinner alone on a vCPU here loses 10–50 µs about 1,300 times a second,
// of which the guest's own timer tick is 250 (bench/README.md, "Short
// gaps"); the RESULT counts them per second over 10, 20 and 50 µs.
//
//   bench_vcpu_gaps [--cpus N] [--seconds 20] [--report-ms 20]
//
// Prints each gap over --report-ms, then per CPU one RESULT line:
//   RESULT {"bench":"vcpu_gaps","cpu":0,"seconds":20,"max_gap_ms":..,"gaps_over_report":..,"lost_ms":..,
//           "per_s_over_10us":..,"per_s_over_20us":..,"per_s_over_50us":..}
#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench_common.h"

namespace {

struct Spinner {
  int cpu = 0;
  std::int64_t run_ns = 0;
  std::int64_t report_ns = 0;
  std::int64_t max_gap_ns = 0;
  std::int64_t lost_ns = 0;  // the sum of the gaps over report_ns
  int gaps_over_report = 0;
  std::int64_t over_10us = 0;
  std::int64_t over_20us = 0;
  std::int64_t over_50us = 0;
};

void spin(Spinner& s) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(s.cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    std::fprintf(stderr, "warning: cannot pin a spinner to CPU %d\n", s.cpu);
  }
  const std::int64_t start = qpgate::bench::now_ns();
  std::int64_t last = start;
  while (last - start < s.run_ns) {
    const std::int64_t t = qpgate::bench::now_ns();
    const std::int64_t gap = t - last;
    if (gap > s.max_gap_ns) s.max_gap_ns = gap;
    s.over_10us += gap > 10'000;
    s.over_20us += gap > 20'000;
    s.over_50us += gap > 50'000;
    if (gap > s.report_ns) {
      ++s.gaps_over_report;
      s.lost_ns += gap;
      std::printf("cpu %d: %.1f ms gap at %.2f s\n", s.cpu, static_cast<double>(gap) / 1e6,
                  static_cast<double>(t - start) / 1e9);
    }
    last = t;
  }
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const qpgate::bench::Args args(argc, argv);
  const std::vector<int> allowed = allowed_cpus();
  const long cpus = args.num("cpus", static_cast<long>(allowed.size()));
  const double seconds = args.real("seconds", 20);
  const double report_ms = args.real("report-ms", 20);
  if (cpus < 1 || cpus > static_cast<long>(allowed.size()) || !(seconds > 0) || !(report_ms > 0)) {
    std::fprintf(stderr, "usage: bench_vcpu_gaps [--cpus 1..%zu] [--seconds S>0] [--report-ms MS>0]\n", allowed.size());
    return 2;
  }
  std::vector<Spinner> spinners(static_cast<std::size_t>(cpus));
  for (int i = 0; i < static_cast<int>(cpus); ++i) {
    Spinner& s = spinners[static_cast<std::size_t>(i)];
    s.cpu = allowed[static_cast<std::size_t>(i)];
    s.run_ns = static_cast<std::int64_t>(seconds * 1e9);
    s.report_ns = static_cast<std::int64_t>(report_ms * 1e6);
  }
  std::vector<std::thread> threads;
  for (Spinner& s : spinners) threads.emplace_back([&s] { spin(s); });
  for (std::thread& t : threads) t.join();
  for (const Spinner& s : spinners) {
    const auto per_s = [seconds](std::int64_t n) { return static_cast<double>(n) / seconds; };
    std::printf("RESULT {\"bench\":\"vcpu_gaps\",\"cpu\":%d,\"cpus\":%d,\"seconds\":%.1f,\"max_gap_ms\":%.3f,"
                "\"gaps_over_report\":%d,\"lost_ms\":%.1f,\"per_s_over_10us\":%.0f,\"per_s_over_20us\":%.0f,"
                "\"per_s_over_50us\":%.0f}\n",
                s.cpu, static_cast<int>(cpus), seconds, static_cast<double>(s.max_gap_ns) / 1e6, s.gaps_over_report,
                static_cast<double>(s.lost_ns) / 1e6, per_s(s.over_10us), per_s(s.over_20us), per_s(s.over_50us));
  }
  return 0;
}
