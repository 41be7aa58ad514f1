// The engine thread: pinned where placement says (checked in /proc), the
// echo path through both rings with one JS wake per batch, the doorbell,
// retries when the wake queue is full, and a clean, idempotent stop.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/cpu_list.h"
#include "engine/engine.h"
#include "engine/record_types.h"

namespace qpgate::engine {
namespace {

std::string task_status_field(int tid, const std::string& field) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

// pthread_join returns when the kernel clears the thread's tid word, a few
// steps before it unhashes the task from /proc: allow it a moment.
bool thread_gone(int tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid);
  for (int i = 0; i < 1000 && std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return !std::filesystem::exists(path);
}

// Sends `count` echo records of varying length, batch by batch, and collects
// the replies; the "JS side" is this test thread.
struct EchoClient {
  explicit EchoClient(Engine& e)
      : engine(e), out(e.to_engine_ring().view), in(e.from_engine_ring().view) {}

  void send(std::uint64_t seq) {
    const auto len = static_cast<std::int32_t>(8 + seq % 50);
    std::byte* p = nullptr;
    while ((p = out.claim(record_type::kEcho, len)) == nullptr) {
      out.publish();
      engine.notify();
      drain();
      std::this_thread::yield();
    }
    std::memcpy(p, &seq, 8);
    std::memset(p + 8, static_cast<int>(seq & 0xff), static_cast<std::size_t>(len - 8));
  }
  void flush() {
    out.publish();
    engine.notify();
  }
  // Like the JS handler: drain, and when empty announce that we wait, so
  // the engine owes us one wake for the next batch.
  int drain() {
    const int n = read_all();
    if (n == 0) in.announce_waiting();
    return n;
  }
  int read_all() {
    return in.read([&](std::int32_t type, const std::byte* p, std::int32_t len) {
      std::uint64_t seq = 0;
      std::uint64_t stamp = 0;
      std::memcpy(&seq, p, 8);
      std::memcpy(&stamp, p + len - 8, 8);
      if (type != record_type::kEcho || seq != received || len != static_cast<std::int32_t>(8 + seq % 50 + 8) ||
          stamp < last_stamp) {
        ++bad;
      }
      last_stamp = stamp;
      ++received;
      return true;
    });
  }

  Engine& engine;
  SpscProducer out;
  SpscConsumer in;
  std::uint64_t received = 0;
  std::uint64_t bad = 0;
  std::uint64_t last_stamp = 0;
};

TEST(Engine, TheEngineThreadIsPinnedWhereThePlacementReportSays) {
  Engine engine(EngineConfig{});
  engine.start();
  const PlacementReport& report = engine.placement();
  ASSERT_GT(report.tid, 0);
  ASSERT_TRUE(report.pin.pinned) << report.pin.error;
  // The last allowed CPU, unless another qpgate engine on the host has it (placement_test covers the choice).
  const CpuList allowed = process_allowed_cpus();
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), report.plan.cpu), allowed.end()) << report.plan.cpu_reason;
  EXPECT_EQ(task_status_field(report.tid, "Cpus_allowed_list"), std::to_string(report.plan.cpu));
  EXPECT_EQ(task_status_field(report.tid, "Name"), "qpgate-engine");
  EXPECT_FALSE(report.memory_policy.empty());
  EXPECT_FALSE(report.huge_pages.empty());
  EXPECT_FALSE(report.idle_strategy.empty());
  engine.stop();
}

// Two pinned pollers on one CPU starve each other's timers while another CPU
// has room: the second engine of a process goes to another CPU.
TEST(Engine, TwoEnginesOfOneProcessArePinnedToDifferentCpus) {
  if (process_allowed_cpus().size() < 2) GTEST_SKIP() << "one CPU allowed";
  if (!engine_cpus_in_use().empty()) GTEST_SKIP() << "another qpgate engine is pinned on this host: the choice would balance against it";
  Engine a(EngineConfig{});
  a.start();
  Engine b(EngineConfig{});
  b.start();
  ASSERT_TRUE(a.placement().pin.pinned && b.placement().pin.pinned);
  EXPECT_NE(a.placement().plan.cpu, b.placement().plan.cpu) << b.placement().plan.cpu_reason;
  EXPECT_NE(b.placement().plan.cpu_reason.find("no other qpgate engine is pinned to"), std::string::npos)
      << b.placement().plan.cpu_reason;
  b.stop();
  a.stop();
}

TEST(Engine, AnExplicitCpuIsHonouredAndShowsInProc) {
  EngineConfig config;
  config.cpus = std::to_string(process_allowed_cpus().front());
  Engine engine(config);
  engine.start();
  EXPECT_EQ(task_status_field(engine.placement().tid, "Cpus_allowed_list"), config.cpus);
  engine.stop();
}

TEST(Engine, ACpuThatIsNotAllowedLeavesTheThreadUnpinnedAndSaysWhy) {
  EngineConfig config;
  config.cpus = "1000";
  Engine engine(config);
  engine.start();
  EXPECT_FALSE(engine.placement().pin.pinned);
  EXPECT_NE(engine.placement().pin.error.find("not allowed"), std::string::npos) << engine.placement().pin.error;
  EXPECT_EQ(task_status_field(engine.placement().tid, "Cpus_allowed_list"),
            format_cpu_list(process_allowed_cpus()));
  engine.stop();
}

TEST(Engine, StopJoinsTheThreadAndASecondStopIsHarmless) {
  auto engine = std::make_unique<Engine>(EngineConfig{});
  engine->start();
  const int tid = engine->placement().tid;
  EXPECT_TRUE(std::filesystem::exists("/proc/self/task/" + std::to_string(tid)));
  EXPECT_TRUE(engine->running());
  while (engine->stats().duty_cycles == 0) std::this_thread::yield();
  engine->stop();
  EXPECT_FALSE(engine->running());
  EXPECT_TRUE(thread_gone(tid)) << "the thread is joined";
  EXPECT_FALSE(engine->to_engine_ring()) << "buffers are freed";
  engine->stop();
  EXPECT_FALSE(engine->notify());
  EXPECT_GT(engine->stats().duty_cycles, 0u) << "stats survive stop";
  engine.reset();  // the destructor after stop
}

TEST(Engine, TheDestructorStopsARunningEngine) {
  int tid = 0;
  {
    Engine engine(EngineConfig{});
    engine.start();
    tid = engine.placement().tid;
  }
  EXPECT_TRUE(thread_gone(tid));
}

TEST(Engine, ItCanBeStartedAgainAfterStop) {
  Engine engine(EngineConfig{});
  engine.start();
  engine.stop();
  engine.start();
  EchoClient client(engine);
  client.send(0);
  client.flush();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client.received < 1 && std::chrono::steady_clock::now() < deadline) client.drain();
  EXPECT_EQ(client.received, 1u);
  engine.stop();
}

TEST(Engine, EchoesManyRecordsCompleteAndInOrderWithFarFewerWakesThanRecords) {
  constexpr std::uint64_t kRecords = 200'000;
  std::atomic<std::uint64_t> wakes{0};
  EngineConfig config;
  config.to_engine_capacity = 1 << 16;  // small rings: wrap and back-pressure many times
  config.from_engine_capacity = 1 << 16;
  // The engine thread's own echo and its wakes of JS: a parked engine lent to
  // this thread would answer inside flush(), and no wake would be owed
  // (lending_test.cc echoes through lends).
  config.lend_when_parked = false;
  Engine engine(config, [&] {
    wakes.fetch_add(1);
    return true;
  });
  engine.start();
  EchoClient client(engine);
  std::uint64_t sent = 0;
  while (sent < kRecords) {
    for (int i = 0; i < 256 && sent < kRecords; ++i) client.send(sent++);
    client.flush();
    client.drain();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (client.received < kRecords && std::chrono::steady_clock::now() < deadline) {
    if (client.drain() == 0) std::this_thread::yield();
  }
  engine.stop();
  const EngineStats s = engine.stats();
  EXPECT_EQ(client.received, kRecords);
  EXPECT_EQ(client.bad, 0u);
  EXPECT_EQ(s.records_in, kRecords);
  EXPECT_EQ(s.records_out, kRecords);
  EXPECT_EQ(s.js_wakes, wakes.load());
  EXPECT_GT(s.js_wakes, 1u) << "the client announced waiting between batches";
  EXPECT_LT(s.js_wakes * 10, kRecords) << "wakes " << s.js_wakes << " for " << kRecords << " records";
  EXPECT_FALSE(s.to_engine_corrupt);
  std::printf("[          ] %llu records, %llu JS wakes, %llu parks, %llu notifies, max cycle %llu ns\n",
              static_cast<unsigned long long>(s.records_out), static_cast<unsigned long long>(s.js_wakes),
              static_cast<unsigned long long>(s.parks), static_cast<unsigned long long>(s.notifies),
              static_cast<unsigned long long>(s.max_cycle_ns));
}

// The doorbell path, so with lending off: with it on, the owner's notify runs
// the cycle itself (lending_test.cc).
TEST(Engine, AParkedEngineIsWokenByNotifyAndAnswersPromptly) {
  EngineConfig config;
  config.lend_when_parked = false;
  config.idle = IdleKind::kBackoff;
  config.backoff.min_park_ns = 10'000'000'000;  // 10 s: only the doorbell can wake it in time
  config.backoff.max_park_ns = 10'000'000'000;
  Engine engine(config);
  engine.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.stats().parks == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GT(engine.stats().parks, 0u);
  EchoClient client(engine);
  client.send(0);
  const std::uint64_t t0 = monotonic_ns();
  client.out.publish();
  EXPECT_TRUE(engine.notify()) << "the engine announced it was parked, so notify rings";
  EXPECT_FALSE(engine.notify()) << "a second notify finds the flag taken";
  while (client.received == 0 && monotonic_ns() - t0 < 2'000'000'000) client.drain();
  EXPECT_EQ(client.received, 1u);
  EXPECT_LT(monotonic_ns() - t0, 1'000'000'000u);
  EXPECT_GE(engine.stats().doorbell_wakes, 1u);
  engine.stop();
}

TEST(Engine, AFullWakeQueueIsRetriedNextCycleAndNeverBlocksTheEngine) {
  std::atomic<int> refusals{3};
  std::atomic<int> accepted{0};
  Engine engine(EngineConfig{}, [&] {
    if (refusals.load() > 0) {
      refusals.fetch_sub(1);
      return false;
    }
    accepted.fetch_add(1);
    return true;
  });
  engine.start();
  EchoClient client(engine);
  client.send(0);
  client.flush();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (accepted.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  engine.stop();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(engine.stats().js_wake_retries, 3u);
  EXPECT_EQ(engine.stats().js_wakes, 1u);
}

TEST(Engine, UnknownRecordTypesAreSkippedAndCounted) {
  Engine engine(EngineConfig{});
  engine.start();
  SpscProducer out(engine.to_engine_ring().view);
  ASSERT_TRUE(out.append(77, "x", 1));
  out.publish();
  engine.notify();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.stats().rejected_records == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(engine.stats().rejected_records, 1u);
  engine.stop();
}

TEST(Engine, BadConfigurationIsRefusedWithTheReason) {
  EngineConfig config;
  config.to_engine_capacity = 3000;
  try {
    Engine engine(config);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("toEngineCapacity"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3000"), std::string::npos) << e.what();
  }
  config = EngineConfig{};
  config.cpus = "1-x";
  EXPECT_THROW(Engine{config}, std::invalid_argument);
}

TEST(Engine, AnAgentCanArmAProtocolDeadlineThatWakesAParkedEngine) {
  struct TimerAgent final : Agent {
    const char* name() const override { return "timer"; }
    void on_start(AgentContext& c) override {
      context = &c;
      // Far enough that the engine has parked by then even when its spins
      // and yields crawl on a loaded machine (the wake is what is tested).
      deadline = monotonic_ns() + 200'000'000;
      c.arm_deadline(deadline);
    }
    int do_work(std::uint64_t now) override {
      if (fired_at.load() == 0 && now >= deadline) {
        fired_at.store(now);
        return 1;
      }
      return 0;
    }
    AgentContext* context = nullptr;
    std::uint64_t deadline = 0;
    std::atomic<std::uint64_t> fired_at{0};
  };
  EngineConfig config;
  config.idle = IdleKind::kBackoff;
  config.backoff.min_park_ns = 10'000'000'000;
  config.backoff.max_park_ns = 10'000'000'000;
  Engine engine(config);
  auto agent = std::make_unique<TimerAgent>();
  TimerAgent* timer = agent.get();
  engine.add_agent(std::move(agent));
  engine.start();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (timer->fired_at.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_NE(timer->fired_at.load(), 0u);
  EXPECT_LT(timer->fired_at.load() - timer->deadline, 500'000'000u);
  EXPECT_GE(engine.stats().timer_wakes, 1u);
  engine.stop();
}

}  // namespace
}  // namespace qpgate::engine
