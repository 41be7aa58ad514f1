// Idle strategies and the park: backoff goes spin -> yield -> park with a
// doubling timeout, a parked thread is woken promptly by the doorbell, and
// the timerfd deadline ends a park on time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/cpu_list.h"
#include "engine/idle_strategy.h"
#include "engine/parker.h"

namespace qpgate::engine {
namespace {

struct RecordingSite final : ParkSite {
  std::vector<std::int64_t> timeouts;
  void park(std::int64_t timeout_ns) override { timeouts.push_back(timeout_ns); }
};

TEST(IdleStrategy, BackoffSpinsThenYieldsThenParksWithADoublingTimeoutUpToTheMax) {
  RecordingSite site;
  BackoffParams params;
  params.max_spins = 3;
  params.max_yields = 2;
  params.min_park_ns = 1000;
  params.max_park_ns = 8000;
  IdleStrategy idle(IdleKind::kBackoff, params, site);
  idle.reset();
  for (int i = 0; i < 5; ++i) idle.idle(0);
  EXPECT_TRUE(site.timeouts.empty()) << "3 spins and 2 yields come before any park";
  for (int i = 0; i < 6; ++i) idle.idle(0);
  EXPECT_EQ(site.timeouts, (std::vector<std::int64_t>{1000, 2000, 4000, 8000, 8000, 8000}));
  idle.idle(1);  // work resets the backoff
  for (int i = 0; i < 6; ++i) idle.idle(0);
  EXPECT_EQ(site.timeouts.back(), 1000);
}

TEST(IdleStrategy, SpinAndYieldNeverPark) {
  RecordingSite site;
  IdleStrategy spin(IdleKind::kSpin, {}, site);
  IdleStrategy yield(IdleKind::kYield, {}, site);
  for (int i = 0; i < 1000; ++i) {
    spin.idle(0);
    yield.idle(0);
  }
  EXPECT_TRUE(site.timeouts.empty());
}

TEST(IdleStrategy, NamesRoundTripAndTheDefaultIsBackoffBelowFourCpus) {
  IdleKind kind = IdleKind::kSpin;
  ASSERT_TRUE(parse_idle_kind("backoff", kind));
  EXPECT_EQ(kind, IdleKind::kBackoff);
  EXPECT_STREQ(idle_kind_name(IdleKind::kYield), "yield");
  EXPECT_FALSE(parse_idle_kind("sleep", kind));
  std::string why;
  const IdleKind def = default_idle_kind(&why);
  EXPECT_EQ(def, process_allowed_cpus().size() < 4 ? IdleKind::kBackoff : IdleKind::kSpin) << why;
  EXPECT_NE(why.find("allowed CPUs"), std::string::npos);
}

// A ParkSite over a real Parker, counting parks, like the engine's.
struct ParkerSite final : ParkSite {
  Parker parker;
  std::atomic<int> parked{0};
  std::atomic<unsigned> last_reasons{0};
  void park(std::int64_t timeout_ns) override {
    parked.store(1);
    last_reasons.store(parker.park(timeout_ns));
    parked.store(0);
  }
};

TEST(IdleStrategy, ABackoffThreadParkedForASecondIsWokenByTheDoorbellPromptly) {
  ParkerSite site;
  BackoffParams params;
  params.min_park_ns = 1'000'000'000;  // only the doorbell can end this park early
  params.max_park_ns = 1'000'000'000;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> woke_at{0};
  std::thread engine([&] {
    IdleStrategy idle(IdleKind::kBackoff, params, site);
    while (!stop.load()) {
      idle.idle(0);
      if (site.last_reasons.load() & kWakeDoorbell) {
        woke_at.store(monotonic_ns());
        break;
      }
    }
  });
  while (site.parked.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // be sure it is blocked in epoll
  const std::uint64_t rang = monotonic_ns();
  site.parker.ring();
  engine.join();
  ASSERT_NE(woke_at.load(), 0u);
  const double us = static_cast<double>(woke_at.load() - rang) / 1e3;
  // 13-23 us on this VM; the bound is loose for sanitizers and noisy CI.
  EXPECT_LT(us, 50'000.0) << "doorbell wake took " << us << " us";
  std::printf("[          ] doorbell -> awake: %.1f us\n", us);
}

TEST(IdleStrategy, ATimerfdDeadlineEndsAParkOnTime) {
  Parker parker;
  const std::uint64_t start = monotonic_ns();
  parker.arm_deadline(start + 2'000'000);  // 2 ms
  EXPECT_EQ(parker.armed_deadline(), start + 2'000'000);
  parker.arm_deadline(start + 9'000'000'000);  // a later deadline does not replace it
  const unsigned reasons = parker.park(-1);    // no timeout: only the timer can end it
  const std::uint64_t took = monotonic_ns() - start;
  EXPECT_TRUE(reasons & kWakeTimer);
  EXPECT_GE(took, 2'000'000u);
  EXPECT_LT(took, 500'000'000u);
  EXPECT_EQ(parker.armed_deadline(), 0u) << "a fired deadline is forgotten";
}

TEST(IdleStrategy, AParkTimesOutWithMicrosecondResolution) {
  Parker parker;
  const std::uint64_t start = monotonic_ns();
  EXPECT_EQ(parker.park(200'000), static_cast<unsigned>(kWakeTimeout));
  const std::uint64_t took = monotonic_ns() - start;
  EXPECT_GE(took, 200'000u);
  EXPECT_LT(took, 100'000'000u);
}

}  // namespace
}  // namespace qpgate::engine
