#include "engine.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "common/clock.h"
#include "command_agent.h"

namespace qpgate::engine {
namespace {

// While a JS wake is owed (TSFN queue full), park no longer than this, so
// the retry happens soon without spinning on a queue JS is still draining.
constexpr std::int64_t kWakeRetryParkNs = 50'000;

// A lent engine runs duty cycles while they find work, at most this many: a
// record's work takes more than one (a publish record becomes a frame the
// device agent sends in the same cycle; a looped-back frame is read in the
// next), as after a driven engine's flush (src/native/engine.ts).
constexpr int kMaxLentCycles = 8;
// A waking engine thread that finds its duty cycle lent spins this many
// times, then sleeps until the owner gives it back.
constexpr int kTakeBackSpins = 64;

std::string describe_pages(const NodeBuffer& buffer) {
  const PageInfo info = page_info(buffer.data());
  std::string text = buffer.page_reason();
  if (info.found) {
    text += "; smaps: KernelPageSize " + std::to_string(info.kernel_page_kb) + " kB";
    if (buffer.page_kind() == PageKind::kTransparent) {
      text += ", AnonHugePages " + std::to_string(info.anon_huge_kb) + " kB" +
              (info.anon_huge_kb == 0 ? " (the kernel has not collapsed it into a huge page)" : "");
    }
  }
  return text;
}

}  // namespace

std::string validate(const EngineConfig& c) {
  if (!valid_ring_capacity(c.to_engine_capacity)) {
    return "toEngineCapacity must be a power of two from " + std::to_string(ring_layout::kMinCapacity) +
           " to " + std::to_string(ring_layout::kMaxCapacity) + ", got " + std::to_string(c.to_engine_capacity);
  }
  if (!valid_ring_capacity(c.from_engine_capacity)) {
    return "fromEngineCapacity must be a power of two from " + std::to_string(ring_layout::kMinCapacity) +
           " to " + std::to_string(ring_layout::kMaxCapacity) + ", got " + std::to_string(c.from_engine_capacity);
  }
  if (c.backoff.min_park_ns <= 0 || c.backoff.max_park_ns < c.backoff.min_park_ns) {
    return "backoff park times must satisfy 0 < minParkNs <= maxParkNs, got " +
           std::to_string(c.backoff.min_park_ns) + " and " + std::to_string(c.backoff.max_park_ns);
  }
  if (!c.cpus.empty()) {
    const CpuListParse parsed = parse_cpu_list(c.cpus);
    if (!parsed.ok()) return "cpus: " + parsed.error;
  }
  return "";
}

Engine::Engine(EngineConfig config, JsWaker waker) : config_(std::move(config)), waker_(std::move(waker)) {
  const std::string error = validate(config_);
  if (!error.empty()) throw std::invalid_argument(error);
  auto commands = std::make_unique<CommandAgent>();
  command_agent_ = commands.get();
  agents_.push_back(std::move(commands));
}

Engine::~Engine() { stop(); }

void Engine::add_agent_owned(std::unique_ptr<Agent> agent) {
  if (running_) throw std::logic_error("Engine::add_agent: engine is running");
  agents_.push_back(std::move(agent));
}

void Engine::reset_for_start() {
  parker_ = std::make_unique<Parker>();
  counters_ = std::make_unique<EngineCounters>();
  faults_ = std::make_unique<AgentFaults>();
  cycle_times_ = std::make_unique<metrics::LatencyHistogram>();
  agent_stopped_.assign(agents_.size(), 0);
  notifies_.store(0, std::memory_order_relaxed);
  stop_requested_.store(false);
  wake_owed_ = false;
  report_ = PlacementReport{};
  lend_state_.store(kEngineRuns);
  owner_thread_id_ = std::this_thread::get_id();
}

void Engine::start() {
  if (running_) return;
  reset_for_start();
  std::promise<std::string> ready;
  std::future<std::string> result = ready.get_future();
  thread_ = std::thread([this, &ready] { run(ready); });
  const std::string error = result.get();
  if (!error.empty()) {
    thread_.join();
    release_buffers();
    throw std::runtime_error("qpgate engine failed to start: " + error);
  }
  running_ = true;
}

void Engine::start_driven() {
  if (running_) return;
  reset_for_start();
  report_.tid = static_cast<int>(gettid());
  report_.pin.error = "driven on its owner's thread, which is not pinned";
  report_.pin.affinity = thread_allowed_cpus();
  report_.idle_strategy = "none";
  report_.idle_reason = "driven: its owner's event loop waits on the engine's fds";
  std::string error;
  try {
    error = set_up_buffers_and_agents();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    release_buffers();
    throw std::runtime_error("qpgate engine failed to start: " + error);
  }
  // The owner is the engine thread: its run_on_engine calls run inline;
  // other threads queue theirs and ring the doorbell (wait_fd), as they do
  // for a threaded engine.
  engine_thread_id_.store(std::this_thread::get_id());
  {
    const std::lock_guard<std::mutex> lock(commands_mutex_);
    accepting_ = true;
  }
  driven_ = true;
  running_ = true;
}

void Engine::stop() {
  if (driven_) {
    {
      const std::lock_guard<std::mutex> lock(commands_mutex_);
      accepting_ = false;
    }
    run_commands();
    close_agents();
    driven_ = false;
    running_ = false;
    release_buffers();
    return;
  }
  if (!thread_.joinable()) return;
  stop_requested_.store(true, std::memory_order_seq_cst);
  parker_->ring();  // unconditionally: it may be parked or about to park
  thread_.join();
  running_ = false;
  release_buffers();
}

void Engine::close_agents() {
  for (auto& agent : agents_) on_close_guarded(*agent, context_);
  engine_thread_id_.store(std::thread::id{});
}

int Engine::do_work_once() {
  if (!driven_) throw std::logic_error("Engine::do_work_once: the engine is not driven (start_driven)");
  return duty_cycle(monotonic_ns());
}

void Engine::drain_wakes() {
  if (!driven_) return;
  const unsigned reasons = parker_->park(0);
  EngineCounters& counters = *counters_;
  if (reasons & kWakeDoorbell) counters.doorbell_wakes.add();
  if (reasons & kWakeTimer) counters.timer_wakes.add();
  if (reasons & kWakeFd) counters.fd_wakes.add();
}

void Engine::release_buffers() {
  to_engine_ = SpscConsumer{};
  from_engine_ = SpscProducer{};
  context_ = AgentContext{};
  // JS may still hold ArrayBuffers over these; their shared_ptrs keep the
  // memory until they are collected (or detached by the addon).
  to_engine_mem_ = RingMemory{};
  from_engine_mem_ = RingMemory{};
  parker_.reset();
}

void Engine::run(std::promise<std::string>& ready) {
  std::string error;
  try {
    error = set_up_on_engine_thread();
  } catch (const std::exception& e) {
    error = e.what();
  }
  // After set_value the promise (on start()'s stack) must not be touched.
  const bool ok = error.empty();
  if (ok) {
    engine_thread_id_.store(std::this_thread::get_id());
    const std::lock_guard<std::mutex> lock(commands_mutex_);
    accepting_ = true;
  }
  ready.set_value(std::move(error));
  if (!ok) return;
  duty_cycle_loop();
  {
    // From here on run_on_engine runs inline in its caller; what was queued
    // before still runs here, with the agents alive.
    const std::lock_guard<std::mutex> lock(commands_mutex_);
    accepting_ = false;
  }
  run_commands();
  close_agents();
}

void Engine::run_on_engine(const std::function<void()>& fn) {
  if (on_engine_thread()) {
    fn();
    return;
  }
  if (borrow()) {
    run_lent(&fn);
    return;
  }
  ControlCommand command;
  command.fn = &fn;
  std::future<void> done = command.done.get_future();
  {
    const std::lock_guard<std::mutex> lock(commands_mutex_);
    if (accepting_) {
      commands_.push_back(&command);
      commands_pending_.store(true, std::memory_order_release);
      // Under the lock: the engine cannot have left its loop (and stop()
      // cannot have freed the parker) while accepting_ is true.
      parker_->ring();  // unconditionally: it may be parked or about to park
    } else {
      command.fn = nullptr;
    }
  }
  if (command.fn == nullptr) {  // not running: nothing else touches the agents
    fn();
    return;
  }
  done.get();  // rethrows what fn threw
}

int Engine::run_commands() {
  if (!commands_pending_.load(std::memory_order_acquire)) return 0;
  std::vector<ControlCommand*> batch;
  {
    const std::lock_guard<std::mutex> lock(commands_mutex_);
    batch.swap(commands_);
    commands_pending_.store(false, std::memory_order_relaxed);
  }
  for (ControlCommand* command : batch) {
    try {
      (*command->fn)();
      command->done.set_value();
    } catch (...) {
      counters_->task_errors.add();
      command->done.set_exception(std::current_exception());
    }
  }
  return static_cast<int>(batch.size());
}

std::string Engine::set_up_on_engine_thread() {
  report_.tid = static_cast<int>(gettid());
  pthread_setname_np(pthread_self(), "qpgate-engine");
  // The default 50 us timer slack would turn a 1 us park into 50 us.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  // Pin first, so first touch and the kernel's local policy see the right CPU.
  pin_engine_thread();
  if (config_.idle) {
    report_.idle_strategy = idle_kind_name(*config_.idle);
    report_.idle_reason = "configured";
  } else {
    report_.idle_strategy = idle_kind_name(default_idle_kind(&report_.idle_reason));
  }
  return set_up_buffers_and_agents();
}

void Engine::pin_engine_thread() {
  PlacementRequest request;
  request.device = config_.device;
  request.cpus = config_.cpus;
  request.sysfs_root = config_.sysfs_root;
  {
    // Engines of this process starting at once see each other's pins.
    static std::mutex placing;
    const std::lock_guard lock(placing);
    request.taken_cpus = engine_cpus_in_use();
    report_.plan = plan_placement(request, process_allowed_cpus());
    report_.pin = report_.plan.cpu >= 0 ? pin_current_thread(report_.plan.cpu) : PinResult{};
  }
  if (report_.plan.cpu < 0) {
    report_.pin.error = report_.plan.cpu_reason;
    report_.pin.affinity = thread_allowed_cpus();
  }
}

std::string Engine::set_up_buffers_and_agents() {
  // The node the memory should live on: the device's, else the pinned CPU's
  // own (first touch gets that anyway; libnuma makes it explicit).
  const int node = report_.plan.numa_node;

  // Buffers on the node, touched by this thread.
  BufferOptions options;
  options.numa_node = node;
  options.huge_pages = config_.huge_pages;
  options.sysfs_root = config_.sysfs_root;
  options.size = static_cast<std::size_t>(RingView::total_length(config_.to_engine_capacity));
  auto to_buffer = std::make_shared<NodeBuffer>(options);
  options.size = static_cast<std::size_t>(RingView::total_length(config_.from_engine_capacity));
  auto from_buffer = std::make_shared<NodeBuffer>(options);
  to_buffer->first_touch();
  from_buffer->first_touch();
  to_engine_mem_ = RingMemory{to_buffer, RingView(to_buffer->data(), config_.to_engine_capacity)};
  from_engine_mem_ = RingMemory{from_buffer, RingView(from_buffer->data(), config_.from_engine_capacity)};
  // JS starts out waiting for its first wake-up.
  from_engine_mem_.view.waiting().store(1, std::memory_order_release);

  report_.memory_policy = to_buffer->node_bound() ? "libnuma node-local" : "first-touch";
  report_.memory_reason = to_buffer->node_reason();
  report_.huge_pages = page_kind_name(to_buffer->page_kind());
  report_.huge_pages_reason = describe_pages(*to_buffer);
  if (from_buffer->page_kind() != to_buffer->page_kind()) {
    report_.huge_pages_reason += "; but the fromEngine ring got " +
                                 std::string(page_kind_name(from_buffer->page_kind())) + ": " +
                                 describe_pages(*from_buffer);
  }
  // Agents.
  to_engine_ = SpscConsumer(to_engine_mem_.view);
  from_engine_ = SpscProducer(from_engine_mem_.view);
  context_ = AgentContext{&to_engine_, &from_engine_, parker_.get(), counters_.get(), faults_.get()};
  for (auto& agent : agents_) agent->on_start(context_);
  return "";
}

void Engine::duty_cycle_loop() {
  IdleKind kind = IdleKind::kBackoff;
  parse_idle_kind(report_.idle_strategy, kind);
  IdleStrategy idle(kind, config_.backoff, *this);
  while (!stop_requested_.load(std::memory_order_relaxed)) idle.idle(duty_cycle(monotonic_ns()));
}

int Engine::duty_cycle(std::uint64_t start_ns) {
  EngineCounters& counters = *counters_;
  int work = run_commands();
  for (std::size_t i = 0; i < agents_.size(); ++i) work += run_agent(i, start_ns);
  // One tail store for everything the agents produced this cycle, and at
  // most one JS wake-up for it.
  if (from_engine_.publish() || wake_owed_) deliver_js_wake();
  counters.duty_cycles.add();
  if (work > 0) {
    const std::uint64_t took = monotonic_ns() - start_ns;
    counters.max_cycle_ns.raise_to(took);
    cycle_times_->record(took);
    if (took > static_cast<std::uint64_t>(config_.cycle_threshold_ns)) counters.cycles_over_threshold.add();
  } else {
    counters.idle_cycles.add();
  }
  return work;
}

int Engine::run_agent(std::size_t index, std::uint64_t now_ns) {
  if (agent_stopped_[index] != 0) return 0;
  const int work = do_work_guarded(*agents_[index], now_ns, context_);
  if (work >= 0) return work;
  agent_stopped_[index] = 1;
  return 1;  // the fault was work: no park on it
}

void Engine::deliver_js_wake() {
  if (!wake_owed_) {
    // JS cleared its flag (waiting = 1) after draining: we must wake it.
    // Otherwise a wake is already pending and JS will see these records too.
    if (!from_engine_.take_wake_duty()) return;
    wake_owed_ = true;
  }
  if (!waker_) {  // no JS (C++ tests): the consumer polls
    wake_owed_ = false;
    return;
  }
  if (waker_()) {
    wake_owed_ = false;
    counters_->js_wakes.add();
  } else {
    counters_->js_wake_retries.add();
  }
}

bool Engine::borrow() {
  // Only park() makes the engine lendable, and only with lend_when_parked
  // (a driven engine never parks): the word alone says whether it lends.
  if (std::this_thread::get_id() != owner_thread_id_) return false;
  std::uint32_t expected = kParkedLendable;
  if (!lend_state_.compare_exchange_strong(expected, kLentToOwner, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
    return false;
  }
  engine_thread_id_.store(owner_thread_id_);
  return true;
}

void Engine::run_lent(const std::function<void()>* fn) {
  std::exception_ptr failed;
  if (fn != nullptr) {
    try {
      (*fn)();
    } catch (...) {
      counters_->task_errors.add();
      failed = std::current_exception();
    }
  }
  give_back(run_lent_cycles());
  if (failed) std::rethrow_exception(failed);
}

bool Engine::run_lent_cycles() {
  EngineCounters& counters = *counters_;
  for (int i = 0; i < kMaxLentCycles; ++i) {
    counters.lent_cycles.add();
    if (duty_cycle(monotonic_ns()) == 0) return false;
  }
  return true;
}

void Engine::give_back(bool work_left) {
  engine_thread_id_.store(thread_.get_id());
  // A waking engine thread that found the cycle lent sleeps on the word
  // (take_back): wake it, and only then pay for the futex call.
  if (lend_state_.exchange(kParkedLendable, std::memory_order_acq_rel) == kLentEngineWaits) lend_state_.notify_one();
  // Cut short with work still there: the engine thread goes on with it.
  if (work_left) parker_->ring();
}

void Engine::take_back() {
  std::uint32_t state = kParkedLendable;
  for (int tries = 0;; ++tries) {
    if (lend_state_.compare_exchange_weak(state, kEngineRuns, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
    }
    if (state == kParkedLendable) continue;  // a spurious failure
    if (tries < kTakeBackSpins) {
      cpu_relax();
    } else if (state == kLentEngineWaits ||
               lend_state_.compare_exchange_weak(state, kLentEngineWaits, std::memory_order_relaxed)) {
      // Sleep, not spin or yield: the owner may be running the cycle on this
      // CPU, and a thread that keeps taking the CPU back only makes the lend longer.
      lend_state_.wait(kLentEngineWaits, std::memory_order_relaxed);
    }
    state = kParkedLendable;
  }
}

void Engine::park(std::int64_t timeout_ns) {
  if (wake_owed_) timeout_ns = std::min(timeout_ns, kWakeRetryParkNs);
  // Announce, then re-check: a JS producer that published before seeing the
  // announcement is caught here; one after it sees waiting == 1 and rings.
  if (!to_engine_.announce_waiting()) return;
  if (stop_requested_.load(std::memory_order_seq_cst)) {
    to_engine_.clear_waiting();
    return;
  }
  EngineCounters& counters = *counters_;
  counters.parks.add();
  const bool lend = config_.lend_when_parked;
  if (lend) lend_state_.store(kParkedLendable, std::memory_order_release);
  const Parker::Ready ready = parker_->wait(timeout_ns);
  if (lend) take_back();
  const unsigned reasons = parker_->take_wakes(ready);
  to_engine_.clear_waiting();
  if (reasons & kWakeDoorbell) counters.doorbell_wakes.add();
  if (reasons & kWakeTimer) counters.timer_wakes.add();
  if (reasons & kWakeFd) counters.fd_wakes.add();
}

bool Engine::notify() {
  if (!running_ || !to_engine_mem_) return false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (to_engine_mem_.view.waiting().load(std::memory_order_seq_cst) != 1) return false;
  if (borrow()) {
    run_lent(nullptr);
    return true;
  }
  if (to_engine_mem_.view.waiting().exchange(0, std::memory_order_seq_cst) != 1) return false;
  parker_->ring();
  notifies_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

EngineStats Engine::stats() const {
  EngineStats s;
  const EngineCounters& c = *counters_;
  s.running = running_;
#define QPGATE_X(name, kind, help, family, label) s.name = c.name.get();
  QPGATE_ENGINE_COUNTERS(QPGATE_X)
#undef QPGATE_X
  s.notifies = notifies_.load(std::memory_order_relaxed);
  s.faults = faults_->list();
  s.to_engine_capacity = config_.to_engine_capacity;
  s.from_engine_capacity = config_.from_engine_capacity;
  if (to_engine_mem_) s.to_engine_used = to_engine_mem_.view.used();
  if (from_engine_mem_) s.from_engine_used = from_engine_mem_.view.used();
  return s;
}

}  // namespace qpgate::engine
