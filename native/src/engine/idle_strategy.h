// What the engine thread does when a duty cycle found no work, as Aeron
// names it:
//   spin     burn the CPU (pause instruction); lowest latency, a whole core.
//   yield    sched_yield(); gives the core to other runnable threads.
//   backoff  max_spins spins, then max_yields yields, then park with a
//            timeout doubling from min_park_ns to max_park_ns. Parking is
//            epoll (Parker): the doorbell, a deadline or an fd ends it early.
// Backoff is the default below 4 CPUs: on these 2-vCPU machines a spinner
// starves the Node main thread, and the wake cost (13-23 us) is paid only
// after the thread has been idle for the whole spin+yield phase.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qpgate::engine {

enum class IdleKind { kSpin, kYield, kBackoff };

const char* idle_kind_name(IdleKind kind);
bool parse_idle_kind(std::string_view name, IdleKind& out);

struct BackoffParams {
  // Aeron's defaults (aeron_agent.h): 10 spins, 20 yields, park 1 us..1 ms.
  static constexpr std::uint64_t kDefaultMaxSpins = 10;
  static constexpr std::uint64_t kDefaultMaxYields = 20;
  static constexpr std::int64_t kDefaultMinParkNs = 1'000;
  static constexpr std::int64_t kDefaultMaxParkNs = 1'000'000;

  std::uint64_t max_spins = kDefaultMaxSpins;
  std::uint64_t max_yields = kDefaultMaxYields;
  std::int64_t min_park_ns = kDefaultMinParkNs;
  std::int64_t max_park_ns = kDefaultMaxParkNs;
};

// The default for this process: backoff with fewer than 4 allowed CPUs,
// else spin. `why` says which and why.
IdleKind default_idle_kind(std::string* why = nullptr);

// Implemented by whoever owns the Parker: announces "parked" to producers,
// re-checks for work, then blocks (see Engine::park).
class ParkSite {
 public:
  virtual ~ParkSite() = default;
  virtual void park(std::int64_t timeout_ns) = 0;
};

class IdleStrategy {
 public:
  IdleStrategy(IdleKind kind, BackoffParams params, ParkSite& site)
      : kind_(kind), params_(params), site_(site), park_ns_(params.min_park_ns) {}

  // Called once per duty cycle with the work done in it.
  void idle(int work_count) {
    if (work_count > 0) {
      reset();
      return;
    }
    idle();
  }
  void idle();
  void reset() {
    spins_ = 0;
    yields_ = 0;
    park_ns_ = params_.min_park_ns;
  }

  IdleKind kind() const { return kind_; }
  const BackoffParams& params() const { return params_; }

 private:
  IdleKind kind_;
  BackoffParams params_;
  ParkSite& site_;
  std::uint64_t spins_ = 0;
  std::uint64_t yields_ = 0;
  std::int64_t park_ns_ = 0;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace qpgate::engine
