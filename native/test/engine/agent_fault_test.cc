// An exception out of an agent or a record handler on the engine thread: the
// agent that threw is stopped and reported by name, everything else goes on,
// the process lives (agent_faults.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <thread>

#include "engine/command_agent.h"
#include "engine/engine.h"
#include "test_agents.h"

namespace qpgate::engine {
namespace {

using testing::CountingAgent;

EngineConfig spinning_config() {
  EngineConfig c = testing::quiet_config();
  c.idle = IdleKind::kSpin;
  return c;
}

// Throws std::bad_alloc on its `fail_at`-th call, as an agent growing a table would.
class FailingAgent final : public Agent {
 public:
  explicit FailingAgent(std::uint64_t fail_at) : fail_at_(fail_at) {}
  const char* name() const override { return "failing"; }
  void on_start(AgentContext&) override {}
  int do_work(std::uint64_t) override {
    if (calls.fetch_add(1) + 1 == fail_at_) throw std::bad_alloc();
    return 0;
  }
  std::atomic<std::uint64_t> calls{0};

 private:
  std::uint64_t fail_at_;
};

void wait_for(const std::function<bool()>& cond) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(AgentFaults, AnAgentThatThrowsIsStoppedAndReportedAndTheOthersGoOn) {
  auto failing = std::make_unique<FailingAgent>(5);
  auto counting = std::make_unique<CountingAgent>();
  FailingAgent* f = failing.get();
  CountingAgent* c = counting.get();
  Engine engine(spinning_config());
  engine.add_agent(std::move(failing));
  engine.add_agent(std::move(counting));
  engine.start();
  wait_for([&] { return engine.stats().agents_stopped == 1; });
  const std::uint64_t seen = c->cycles.load();
  wait_for([&] { return c->cycles.load() > seen + 100; });  // the agent after it still runs
  EXPECT_GT(c->cycles.load(), seen + 100);
  EXPECT_EQ(f->calls.load(), 5u);  // never called again after it threw
  int after = 0;
  engine.run_on_engine([&] { after = 1; });  // and the engine still takes commands
  EXPECT_EQ(after, 1);
  const EngineStats s = engine.stats();
  EXPECT_TRUE(s.running);
  EXPECT_EQ(s.agent_errors, 1u);
  EXPECT_EQ(s.agents_stopped, 1u);
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].agent, "failing");
  EXPECT_EQ(s.faults[0].message, "std::bad_alloc");
  EXPECT_TRUE(s.faults[0].stopped);
  engine.stop();
}

// A handler for one record type that throws on a poisoned record.
class ThrowingHandler final : public RecordHandler {
 public:
  bool on_record(std::int32_t, const std::byte* payload, std::int32_t length) override {
    if (length > 0 && payload[0] == std::byte{0xff}) throw std::runtime_error("poisoned record");
    handled.fetch_add(1);
    return true;
  }
  std::atomic<int> handled{0};
};

TEST(AgentFaults, ARecordWhoseHandlerThrowsIsSkippedAndTheRecordsAfterItAreHandled) {
  constexpr std::int32_t kType = 15;
  ThrowingHandler handler;
  Engine engine(spinning_config());
  engine.start();
  engine.run_on_engine([&] { engine.commands().set_handler(kType, &handler); });
  SpscProducer producer(engine.to_engine_ring().view);
  for (std::uint8_t first : {std::uint8_t{1}, std::uint8_t{0xff}, std::uint8_t{2}}) {
    std::byte* p = producer.claim(kType, 8);
    ASSERT_NE(p, nullptr);
    std::memset(p, first, 8);
    producer.publish();
  }
  engine.notify();
  wait_for([&] { return handler.handled.load() == 2; });
  EXPECT_EQ(handler.handled.load(), 2);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.agent_errors, 1u);
  EXPECT_EQ(s.agents_stopped, 0u);  // the command agent goes on
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].agent, "record handler (type 15)");
  EXPECT_EQ(s.faults[0].message, "poisoned record");
  EXPECT_FALSE(s.faults[0].stopped);
  engine.run_on_engine([&] { engine.commands().set_handler(kType, nullptr); });
  engine.stop();
}

}  // namespace
}  // namespace qpgate::engine
