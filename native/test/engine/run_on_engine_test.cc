// Engine::run_on_engine: control operations (open a device, create a QP)
// reach the engine thread synchronously from the JS thread.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "test_agents.h"

namespace qpgate::engine {
namespace {

using testing::CountingAgent;
using testing::quiet_config;

// With lending off: with it on, a parked engine runs the owner's calls on the
// owner's thread (lending_test.cc).
TEST(RunOnEngine, RunsOnTheEngineThreadAndReturnsAfterItRan) {
  EngineConfig c = quiet_config();
  c.lend_when_parked = false;
  Engine engine(c);
  engine.start();
  std::thread::id ran_on;
  bool flag_seen_on_engine = false;
  engine.run_on_engine([&] {
    ran_on = std::this_thread::get_id();
    flag_seen_on_engine = engine.on_engine_thread();
  });
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(flag_seen_on_engine);
  EXPECT_FALSE(engine.on_engine_thread());
  engine.stop();
}

TEST(RunOnEngine, WakesAParkedEngineAtOnce) {
  EngineConfig c = quiet_config();
  c.lend_when_parked = false;
  c.idle = IdleKind::kBackoff;
  c.backoff.max_park_ns = 10'000'000'000;  // a park that only a doorbell ends
  c.backoff.min_park_ns = 1'000'000'000;
  Engine engine(c);
  engine.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it reach its long park
  const auto t0 = std::chrono::steady_clock::now();
  int value = 0;
  engine.run_on_engine([&] { value = 42; });
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(value, 42);
  EXPECT_LT(took, std::chrono::milliseconds(500));
  EXPECT_GE(engine.stats().doorbell_wakes, 1u);
  engine.stop();
}

TEST(RunOnEngine, RethrowsWhatTheCommandThrewInTheCaller) {
  Engine engine(quiet_config());
  engine.start();
  EXPECT_THROW(engine.run_on_engine([] { throw std::runtime_error("no such device"); }), std::runtime_error);
  int after = 0;
  engine.run_on_engine([&] { after = 1; });  // the engine survived it
  EXPECT_EQ(after, 1);
  engine.stop();
}

TEST(RunOnEngine, RunsInlineWhenTheEngineIsNotRunning) {
  Engine engine(quiet_config());
  std::thread::id ran_on;
  engine.run_on_engine([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  engine.start();
  engine.stop();
  engine.run_on_engine([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(RunOnEngine, ANestedCallFromTheEngineThreadRunsInlineInsteadOfDeadlocking) {
  Engine engine(quiet_config());
  engine.start();
  int depth = 0;
  engine.run_on_engine([&] { engine.run_on_engine([&] { depth = 2; }); });
  EXPECT_EQ(depth, 2);
  engine.stop();
}

TEST(RunOnEngine, ManyThreadsIssueCommandsAndEveryOneRunsExactlyOnceBetweenDutyCycles) {
  auto agent = std::make_unique<CountingAgent>();
  CountingAgent* counting = agent.get();
  Engine engine(quiet_config());
  engine.add_agent(std::move(agent));
  engine.start();
  std::uint64_t total = 0;  // touched only on the engine thread: no data race if commands are serialised there
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) engine.run_on_engine([&] { ++total; });
    });
  }
  for (auto& th : threads) th.join();
  std::uint64_t seen = 0;
  engine.run_on_engine([&] { seen = total; });
  EXPECT_EQ(seen, 800u);
  EXPECT_GT(counting->cycles.load(), 0u);
  engine.stop();
}

TEST(RunOnEngine, ACommandRacingStopStillRunsExactlyOnce) {
  for (int round = 0; round < 20; ++round) {
    Engine engine(quiet_config());
    engine.start();
    std::atomic<int> runs{0};
    std::thread caller([&] { engine.run_on_engine([&] { runs.fetch_add(1); }); });
    engine.stop();
    caller.join();
    EXPECT_EQ(runs.load(), 1);
  }
}

TEST(RunOnEngine, ATaskThatRunsOutOfMemoryFailsItsCallerAndTheEngineGoesOn) {
  auto agent = std::make_unique<CountingAgent>();
  CountingAgent* counting = agent.get();
  Engine engine(quiet_config());
  engine.add_agent(std::move(agent));
  engine.start();
  EXPECT_THROW(engine.run_on_engine([] { throw std::bad_alloc(); }), std::bad_alloc);
  EXPECT_THROW(engine.run_on_engine([] { throw 42; }), int);  // not even a std::exception
  EXPECT_EQ(engine.stats().task_errors, 2u);
  EXPECT_EQ(engine.stats().agents_stopped, 0u);  // a task's failure is its caller's, not an agent's
  const std::uint64_t cycles = counting->cycles.load();
  int after = 0;
  engine.run_on_engine([&] { after = 1; });
  EXPECT_EQ(after, 1);
  while (counting->cycles.load() < cycles + 10) std::this_thread::yield();  // the duty cycle still turns
  EXPECT_TRUE(engine.stats().running);
  engine.stop();
}

// A driven engine (start_driven): the owner's thread is the engine thread.
TEST(RunOnEngine, ADrivenEngineRunsTheOwnersCallsInlineAndAnotherThreadsAtTheNextCycle) {
  Engine engine(quiet_config());
  auto* agent = engine.add_agent(std::make_unique<CountingAgent>());
  engine.start_driven();
  ASSERT_TRUE(engine.driven());
  EXPECT_TRUE(engine.on_engine_thread());
  EXPECT_GE(engine.wait_fd(), 0);

  bool inline_ran = false;
  engine.run_on_engine([&] { inline_ran = true; });
  EXPECT_TRUE(inline_ran) << "the owner's call runs at once, with no cycle";
  EXPECT_EQ(agent->cycles.load(), 0u) << "no thread runs the agents by itself";

  std::atomic<bool> ran{false};
  std::thread other([&] { engine.run_on_engine([&] { ran = true; }); });
  // The other thread's command waits for the owner's next duty cycle; the
  // doorbell makes wait_fd() readable meanwhile.
  while (engine.stats().doorbell_wakes == 0) {
    engine.drain_wakes();
    std::this_thread::yield();
  }
  EXPECT_FALSE(ran.load());
  EXPECT_GE(engine.do_work_once(), 1);
  other.join();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(agent->cycles.load(), 1u);
  engine.stop();
  EXPECT_FALSE(engine.driven());
  EXPECT_FALSE(engine.running());
}

TEST(RunOnEngine, DoWorkOnceIsRefusedOnAThreadedEngine) {
  Engine engine(quiet_config());
  engine.start();
  EXPECT_THROW(engine.do_work_once(), std::logic_error);
  engine.stop();
}

}  // namespace
}  // namespace qpgate::engine
