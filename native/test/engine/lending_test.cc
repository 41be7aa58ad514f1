// Lending (engine.h): a parked engine runs its owner's notify() and
// run_on_engine() work on the owner's thread at once, never on two threads
// at a time, and never for anyone but its owner.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "common/clock.h"
#include "engine/engine.h"
#include "engine/record_types.h"
#include "test_agents.h"

namespace qpgate::engine {
namespace {

using testing::quiet_config;

// An engine that, once idle, stays parked for 10 s unless something wakes it.
EngineConfig long_park_config() {
  EngineConfig c = quiet_config();
  c.idle = IdleKind::kBackoff;
  c.backoff.min_park_ns = 10'000'000'000;
  c.backoff.max_park_ns = 10'000'000'000;
  return c;
}

// An engine that parks at once when idle, for min_park_ns..max_park_ns:
// short parks make its thread wake all through the owner's lends.
EngineConfig eager_park_config(std::int64_t min_park_ns, std::int64_t max_park_ns) {
  EngineConfig c = quiet_config();
  c.idle = IdleKind::kBackoff;
  c.backoff.max_spins = 0;
  c.backoff.max_yields = 0;
  c.backoff.min_park_ns = min_park_ns;
  c.backoff.max_park_ns = max_park_ns;
  return c;
}

void wait_until_parked(const Engine& engine) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.stats().parks == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_GT(engine.stats().parks, 0u);
  // parks is counted just before the engine offers its cycle: let it get into epoll.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// Counts the cycles it ran on each thread and any two that overlapped.
class WitnessAgent final : public Agent {
 public:
  const char* name() const override { return "witness"; }
  void on_start(AgentContext&) override {}
  int do_work(std::uint64_t) override {
    if (inside_.exchange(true, std::memory_order_acq_rel)) overlaps.fetch_add(1);
    last_thread = std::this_thread::get_id();
    for (int i = 0; i < 50; ++i) cpu_relax();  // widen the window two threads would share
    inside_.store(false, std::memory_order_release);
    return 0;
  }
  std::atomic<std::uint64_t> overlaps{0};
  std::thread::id last_thread;

 private:
  std::atomic<bool> inside_{false};
};

std::uint64_t write_echo(SpscProducer& out, std::uint64_t seq) {
  std::byte* p = out.claim(record_type::kEcho, 8);
  if (p == nullptr) return 0;
  std::memcpy(p, &seq, 8);
  out.publish();
  return 1;
}

// Echo replies read so far, checked to arrive in order.
struct EchoReader {
  explicit EchoReader(SpscConsumer& in) : in(in) {}
  int read() {
    return in.read([&](std::int32_t type, const std::byte* p, std::int32_t) {
      std::uint64_t seq = 0;
      std::memcpy(&seq, p, 8);
      if (type != record_type::kEcho || seq != received) ++out_of_order;
      ++received;
      return true;
    });
  }
  SpscConsumer& in;
  std::uint64_t received = 0;
  std::uint64_t out_of_order = 0;
};

TEST(Lending, TheOwnersNotifyRunsAParkedEnginesCycleAtOnceOnTheOwnersThread) {
  Engine engine(long_park_config());
  auto* witness = engine.add_agent(std::make_unique<WitnessAgent>());
  engine.start();
  wait_until_parked(engine);
  const std::uint64_t parks = engine.stats().parks;
  SpscProducer out(engine.to_engine_ring().view);
  SpscConsumer in(engine.from_engine_ring().view);
  EchoReader replies(in);

  ASSERT_EQ(write_echo(out, 0), 1u);
  EXPECT_TRUE(engine.notify());
  // No wait: the reply is there when notify() returns.
  EXPECT_EQ(replies.read(), 1);
  EXPECT_EQ(witness->last_thread, std::this_thread::get_id());
  const EngineStats s = engine.stats();
  EXPECT_GE(s.lent_cycles, 1u);
  EXPECT_EQ(s.doorbell_wakes, 0u) << "the engine thread was not woken";
  EXPECT_EQ(s.notifies, 0u);
  EXPECT_EQ(s.parks, parks) << "the engine thread is still in the same park";
  EXPECT_FALSE(engine.on_engine_thread()) << "the owner gave the engine back";

  // Lent again for the next record: the engine still waits for work.
  ASSERT_EQ(write_echo(out, 1), 1u);
  EXPECT_TRUE(engine.notify());
  EXPECT_EQ(replies.read(), 1);
  EXPECT_EQ(replies.out_of_order, 0u);
  engine.stop();
}

TEST(Lending, TheOwnersCallRunsOnItsOwnThreadAsTheEngineThreadAndItsErrorsAreCounted) {
  Engine engine(long_park_config());
  engine.start();
  wait_until_parked(engine);
  std::thread::id ran_on;
  bool seen_as_engine_thread = false;
  engine.run_on_engine([&] {
    ran_on = std::this_thread::get_id();
    seen_as_engine_thread = engine.on_engine_thread();
    engine.run_on_engine([] {});  // nested: inline, no deadlock
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(seen_as_engine_thread);
  EXPECT_FALSE(engine.on_engine_thread());
  EXPECT_THROW(engine.run_on_engine([] { throw std::runtime_error("no such device"); }), std::runtime_error);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.task_errors, 1u);
  EXPECT_EQ(s.doorbell_wakes, 0u);
  EXPECT_GE(s.lent_cycles, 2u) << "the duty cycles after each call ran too";
  engine.stop();
}

TEST(Lending, AnotherThreadIsNeverLentTheEngineItWakesIt) {
  Engine engine(long_park_config());
  auto* witness = engine.add_agent(std::make_unique<WitnessAgent>());
  engine.start();
  wait_until_parked(engine);
  std::thread::id ran_on;
  std::thread::id caller;
  std::thread other([&] {
    caller = std::this_thread::get_id();
    engine.run_on_engine([&] { ran_on = std::this_thread::get_id(); });
  });
  other.join();
  EXPECT_NE(ran_on, caller);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_GE(engine.stats().doorbell_wakes, 1u);
  EXPECT_EQ(engine.stats().lent_cycles, 0u);
  EXPECT_EQ(witness->overlaps.load(), 0u);
  engine.stop();
}

TEST(Lending, WithLendingOffTheOwnersNotifyRingsTheDoorbell) {
  EngineConfig c = long_park_config();
  c.lend_when_parked = false;
  Engine engine(c);
  engine.start();
  wait_until_parked(engine);
  SpscProducer out(engine.to_engine_ring().view);
  SpscConsumer in(engine.from_engine_ring().view);
  EchoReader replies(in);
  ASSERT_EQ(write_echo(out, 0), 1u);
  EXPECT_TRUE(engine.notify());
  while (replies.read() == 0) std::this_thread::yield();
  EXPECT_EQ(engine.stats().lent_cycles, 0u);
  EXPECT_GE(engine.stats().doorbell_wakes, 1u);
  engine.stop();
}

// A lend longer than the engine thread's park: the thread wakes (its 1 ms
// timeout) while the owner holds the cycle, runs nothing until it is given
// back, sleeps rather than spins meanwhile, and goes on once it is.
TEST(Lending, AnEngineThreadWokenDuringALongLendRunsNothingUntilItIsGivenBack) {
  Engine engine(eager_park_config(1'000'000, 1'000'000));
  auto* witness = engine.add_agent(std::make_unique<WitnessAgent>());
  auto* counting = engine.add_agent(std::make_unique<testing::CountingAgent>());
  engine.start();
  wait_until_parked(engine);
  std::uint64_t cycles_at_start = 0;
  std::uint64_t cycles_at_end = 0;
  std::uint64_t parks_at_start = 0;
  std::uint64_t parks_at_end = 0;
  engine.run_on_engine([&] {
    cycles_at_start = counting->cycles.load();
    parks_at_start = engine.stats().parks;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // 50 of the engine thread's timeouts
    cycles_at_end = counting->cycles.load();
    parks_at_end = engine.stats().parks;
  });
  EXPECT_EQ(cycles_at_end, cycles_at_start) << "the engine thread ran a cycle while the owner held it";
  EXPECT_EQ(parks_at_end, parks_at_start) << "it woke once and waited, it did not park again";
  // Given back: the engine thread runs its cycles (and parks) again.
  const std::uint64_t after_lend = counting->cycles.load();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.stats().parks <= parks_at_start + 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_GT(engine.stats().parks, parks_at_start + 2);
  EXPECT_GT(counting->cycles.load(), after_lend);
  EXPECT_EQ(witness->overlaps.load(), 0u);
  engine.stop();
}

// The engine thread parks for 1-20 us at a time, so it wakes (and takes its
// cycle back) all through the owner's lends: the agents never run on both
// threads at once, and every record is answered once, in order.
TEST(Lending, AnEngineWakingDuringALendWaitsForItAndNothingRunsTwiceOrIsLost) {
  Engine engine(eager_park_config(1'000, 20'000));
  auto* witness = engine.add_agent(std::make_unique<WitnessAgent>());
  engine.start();
  SpscProducer out(engine.to_engine_ring().view);
  SpscConsumer in(engine.from_engine_ring().view);
  EchoReader replies(in);
  constexpr std::uint64_t kRecords = 100'000;
  std::uint64_t sent = 0;
  std::uint64_t last_pause = 0;
  // Bounded: a lost record (two threads in the rings) must fail, not hang.
  const std::uint64_t until = monotonic_ns() + 60'000'000'000;
  while (replies.received < kRecords && monotonic_ns() < until) {
    // Every 1000 records, with nothing in flight, wait for the engine to
    // park, so the owner's next notify finds it parked and is lent its cycle.
    const bool pausing = sent - last_pause >= 1000;
    if (!pausing && sent < kRecords && sent - replies.received < 64) {
      sent += write_echo(out, sent);
      engine.notify();
    }
    replies.read();
    if (pausing && replies.received == sent) {
      const std::uint64_t parks = engine.stats().parks;
      while (engine.stats().parks == parks && monotonic_ns() < until) std::this_thread::yield();
      last_pause = sent;
    }
  }
  const EngineStats s = engine.stats();
  EXPECT_EQ(replies.received, kRecords);
  EXPECT_EQ(replies.out_of_order, 0u);
  EXPECT_EQ(witness->overlaps.load(), 0u);
  EXPECT_GT(s.lent_cycles, 0u) << "the owner ran some cycles";
  EXPECT_GT(s.duty_cycles, s.lent_cycles) << "and the engine thread others";
  EXPECT_EQ(s.records_in, kRecords);
  std::printf("records %llu, duty cycles %llu of which lent %llu, parks %llu\n",
              static_cast<unsigned long long>(kRecords), static_cast<unsigned long long>(s.duty_cycles),
              static_cast<unsigned long long>(s.lent_cycles), static_cast<unsigned long long>(s.parks));
  engine.stop();
}

}  // namespace
}  // namespace qpgate::engine
