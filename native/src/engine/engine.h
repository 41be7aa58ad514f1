// The engine: one pinned thread running a duty cycle over its agents
// (Aeron's agent runner), with two SPSC rings to JS in node-local memory.
//
//   start()  spawns the thread and waits until it has pinned itself,
//            allocated and first-touched its buffers, and started its agents;
//            throws if any of that failed outright (a refused pin is not a
//            failure: the report says why and the thread runs unpinned).
//   stop()   sets the stop flag, rings the doorbell, joins, frees. Idempotent;
//            the destructor calls it.
//
//   start_driven()  the same set-up on the calling thread, which becomes the
//            engine thread (never pinned: it is the owner's, e.g. Node's main
//            thread); no thread is spawned and nothing runs by itself: the
//            owner runs a duty cycle with do_work_once() when wait_fd() is
//            readable (a socket, the protocol timer, the doorbell) or after
//            it posted work. An order client drives its QP this way
//            (src/orders/rc-endpoint.ts): every verbs call runs inline, with
//            no cross-thread wake per operation.
//
// Lending: a threaded engine that parks (the backoff idle strategy) lends its
// duty cycle to its owner while it is parked. notify() and run_on_engine()
// called by the owner then run the duty cycles on the owner's thread, at
// once, instead of waking the engine thread (13-23 us on a 2-CPU host, where
// nothing on the hot path may wait for a wake-up). One word says who runs the
// agents: the engine thread, nobody (parked, lendable), or the owner (lent);
// a waking engine thread takes its duty cycle back only when the owner has
// given it back, so the agents never run on two threads at once.
//
// Control methods (start, stop, placement, stats, rings) are for one thread,
// the owner (the Node main thread); notify() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent.h"
#include "counters.h"
#include "idle_strategy.h"
#include "metrics/latency_histogram.h"
#include "node_buffer.h"
#include "parker.h"
#include "placement.h"
#include "spsc_ring.h"

namespace qpgate::engine {

class CommandAgent;

struct EngineConfig {
  static constexpr std::int64_t kDefaultRingCapacity = std::int64_t{1} << 20;  // 1 MiB + trailer: one 2 MiB page
  static constexpr std::int64_t kDefaultCycleThresholdNs = 1'000'000;          // Aeron's 1 ms

  std::string device;                // netdev or RDMA device whose NUMA node to use
  std::string cpus;                  // explicit CPU list; overrides the NUMA choice
  std::string sysfs_root = "/sys";   // tests use a fake tree
  std::optional<IdleKind> idle;      // unset: default_idle_kind()
  BackoffParams backoff;
  std::int64_t to_engine_capacity = kDefaultRingCapacity;
  std::int64_t from_engine_capacity = kDefaultRingCapacity;
  bool huge_pages = true;
  std::int64_t cycle_threshold_ns = kDefaultCycleThresholdNs;
  // A parked engine runs its owner's notify() and run_on_engine() work on
  // the owner's thread (lending, above); false: it is always woken.
  bool lend_when_parked = true;
};

// Empty string when the config is usable, else what is wrong with it.
std::string validate(const EngineConfig& config);

// Wakes JS; called on the engine thread. Returns false when the wake could
// not be queued (TSFN queue full): the engine retries on the next cycle and
// never blocks.
using JsWaker = std::function<bool()>;

struct EngineStats {
  bool running = false;
  // The declared counters' values (engine_counters.def), read once.
#define QPGATE_X(name, kind, help, family, label) std::uint64_t name = 0;
  QPGATE_ENGINE_COUNTERS(QPGATE_X)
#undef QPGATE_X
  std::uint64_t notifies = 0;          // doorbell rings by notify(): the JS thread's, so not an EngineCounter
  std::vector<AgentFault> faults;      // the first AgentFaults::kMaxKept of them, described
  std::int64_t to_engine_used = 0;     // bytes published, not yet consumed
  std::int64_t to_engine_capacity = 0;
  std::int64_t from_engine_used = 0;
  std::int64_t from_engine_capacity = 0;

  // fn(std::string_view name, CounterKind kind, std::uint64_t value) for every declared counter, in order.
  template <class Fn>
  void for_each_counter(Fn&& fn) const {
#define QPGATE_X(name, kind, help, family, label) fn(std::string_view(#name), CounterKind::kind, name);
    QPGATE_ENGINE_COUNTERS(QPGATE_X)
#undef QPGATE_X
  }
};

// A ring's memory and its view. The shared_ptr lets JS's ArrayBuffers keep
// the memory alive after stop() has dropped the engine's reference.
struct RingMemory {
  std::shared_ptr<NodeBuffer> buffer;
  RingView view;
  explicit operator bool() const { return buffer != nullptr; }
};

class Engine final : private ParkSite {
 public:
  explicit Engine(EngineConfig config, JsWaker waker = {});
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Before start(). The engine owns its agents and runs them in the order
  // they were added, after the built-in command agent, which always runs
  // first. Returns the agent, for its builder to wire (engine_agents.h).
  template <class A>
  A* add_agent(std::unique_ptr<A> agent) {
    A* added = agent.get();
    add_agent_owned(std::move(agent));
    return added;
  }
  // The built-in command agent: where agents register their record handlers.
  CommandAgent& commands() const { return *command_agent_; }

  void start();
  void start_driven();
  void stop();
  bool running() const { return running_; }
  bool driven() const { return driven_; }

  // Driven mode, owner thread: one duty cycle (commands, every agent once,
  // the fromEngine publish); returns the work done (0: nothing was ready).
  int do_work_once();
  // Driven mode, owner thread: readable when a parked engine would wake. The
  // parker's epoll fd: the agents' fds, the timerfd of their earliest
  // deadline and the doorbell (run_on_engine from another thread) are in it.
  int wait_fd() const { return parker_ ? parker_->epoll_fd() : -1; }
  // Driven mode, owner thread: reads the doorbell and an expired timer
  // without blocking, so wait_fd() is readable again only for new events.
  // Call before do_work_once(), whose agents re-arm their deadlines.
  void drain_wakes();

  // Valid once start() has returned (kept after stop()).
  const PlacementReport& placement() const { return report_; }
  EngineStats stats() const;
  // How long each duty cycle that did work took, ns (reset by start()). Any
  // thread: a reader diffs two copies to see the cycles of a window (e.g.
  // while a feed was added), which the all-time max_cycle_ns cannot show.
  const metrics::LatencyHistogram& cycle_times() const { return *cycle_times_; }

  // Empty when not running.
  RingMemory to_engine_ring() const { return to_engine_mem_; }
  RingMemory from_engine_ring() const { return from_engine_mem_; }

  // After publishing to toEngine: nothing if the engine is awake (it will
  // see the records); if it has announced that it is parked (toEngine's
  // consumer_waiting word), runs its duty cycles here when the caller is the
  // owner and the engine lends (lending, above), else rings the doorbell.
  // Returns whether it lent or rang. Any thread.
  bool notify();

  const EngineConfig& config() const { return config_; }

  // Control path (rare, not the data path): runs `fn` on the engine thread
  // and returns once it has run, rethrowing what it threw (std::bad_alloc
  // included; counted as task_errors: the engine goes on). The engine drains
  // these at the top of each duty cycle; the doorbell is rung so a parked
  // engine runs it at once. Runs `fn` inline when the engine is not running
  // (nothing else touches the agents then), when called from the engine
  // thread itself, or when called by the owner while the engine is parked
  // (lending, above: `fn` and the duty cycles after it run on the owner's
  // thread, which is the engine thread meanwhile). Any thread while the
  // engine runs (commands run one at a time, in arrival order); while it is
  // stopped, inline calls from several threads are not serialised, so then
  // only the owner should call it.
  void run_on_engine(const std::function<void()>& fn);
  // True on the engine thread while it runs (on the owner while it is lent).
  bool on_engine_thread() const { return std::this_thread::get_id() == engine_thread_id_.load(); }

 private:
  void add_agent_owned(std::unique_ptr<Agent> agent);
  // Engine thread: runs every queued control command; returns how many.
  int run_commands();
  void reset_for_start();
  void run(std::promise<std::string>& ready);
  std::string set_up_on_engine_thread();
  void pin_engine_thread();
  std::string set_up_buffers_and_agents();
  void duty_cycle_loop();
  int duty_cycle(std::uint64_t start_ns);
  void close_agents();
  // One agent's turn in the duty cycle; an agent that threw is stopped (agent_faults.h).
  int run_agent(std::size_t index, std::uint64_t now_ns);
  void deliver_js_wake();
  void park(std::int64_t timeout_ns) override;
  // Lending (above). The owner takes the duty cycle of a parked engine, runs
  // cycles while they find work and gives it back; the engine thread, woken,
  // takes it back (waiting out a lend in progress).
  bool borrow();
  // Lent: runs `fn` (if any; counted in task_errors and rethrown when it
  // throws), then the duty cycles, then gives the engine back.
  void run_lent(const std::function<void()>* fn);
  bool run_lent_cycles();  // true: cut short with work left
  void give_back(bool work_left);
  void take_back();
  void release_buffers();

  EngineConfig config_;
  JsWaker waker_;
  std::vector<std::unique_ptr<Agent>> agents_;
  CommandAgent* command_agent_ = nullptr;  // agents_[0]

  std::thread thread_;
  bool running_ = false;
  bool driven_ = false;
  std::atomic<bool> stop_requested_{false};
  std::unique_ptr<Parker> parker_;
  RingMemory to_engine_mem_;
  RingMemory from_engine_mem_;
  SpscConsumer to_engine_;
  SpscProducer from_engine_;
  AgentContext context_;
  std::unique_ptr<EngineCounters> counters_ = std::make_unique<EngineCounters>();
  std::unique_ptr<AgentFaults> faults_ = std::make_unique<AgentFaults>();
  std::unique_ptr<metrics::LatencyHistogram> cycle_times_ = std::make_unique<metrics::LatencyHistogram>();
  std::vector<char> agent_stopped_;  // engine thread: per agent, 1 once its do_work threw
  std::atomic<std::uint64_t> notifies_{0};
  bool wake_owed_ = false;  // engine thread: took the wake duty, TSFN refused; retry
  PlacementReport report_;

  // run_on_engine's queue. `accepting_` is true while the duty cycle runs.
  struct ControlCommand {
    const std::function<void()>* fn = nullptr;
    std::promise<void> done;
  };
  std::mutex commands_mutex_;
  std::vector<ControlCommand*> commands_;
  bool accepting_ = false;
  std::atomic<bool> commands_pending_{false};
  std::atomic<std::thread::id> engine_thread_id_{};

  // Lending (above): who runs the agents now.
  enum LendState : std::uint32_t { kEngineRuns, kParkedLendable, kLentToOwner, kLentEngineWaits };
  std::atomic<std::uint32_t> lend_state_{kEngineRuns};
  std::thread::id owner_thread_id_;  // start()'s caller
};

}  // namespace qpgate::engine
