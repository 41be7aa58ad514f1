// An agent is one job on the engine thread, run by the duty cycle as in
// Aeron: do_work() does whatever is ready without blocking and returns how
// much it did (0 = nothing, which lets the idle strategy back off). Later
// issues add the soft RoCEv2 transport, the feed publisher and the order
// handler as agents.
#pragma once

#include <cstdint>

#include "agent_faults.h"
#include "counters.h"
#include "parker.h"
#include "spsc_ring.h"

namespace qpgate::engine {

// What an agent may use. All of it belongs to the engine thread.
struct AgentContext {
  SpscConsumer* to_engine = nullptr;    // commands from JS
  SpscProducer* from_engine = nullptr;  // records for JS; the engine publishes once per duty cycle
  Parker* parker = nullptr;
  EngineCounters* counters = nullptr;
  AgentFaults* faults = nullptr;        // where exceptions on the engine thread are reported

  // A protocol timer: ends a park at `monotonic_deadline_ns`. The agent still
  // checks its deadline itself in do_work (it may be spinning, not parked).
  void arm_deadline(std::uint64_t monotonic_deadline_ns) const { parker->arm_deadline(monotonic_deadline_ns); }
  // An fd (non-blocking socket, completion channel) whose readiness ends a park.
  bool add_fd(int fd, std::uint32_t epoll_events) const { return parker->add_fd(fd, epoll_events); }
  bool remove_fd(int fd) const { return parker->remove_fd(fd); }
};

class Agent {
 public:
  virtual ~Agent() = default;
  virtual const char* name() const = 0;
  // On the engine thread, after pinning and buffer allocation.
  virtual void on_start(AgentContext& context) = 0;
  // `now_ns` is CLOCK_MONOTONIC at the start of the duty cycle.
  virtual int do_work(std::uint64_t now_ns) = 0;
  // On the engine thread, before it exits: release what on_start took.
  virtual void on_close() {}
};

// Runs agent.do_work(now_ns). If it throws, the fault is reported and
// counted (agent_errors, agents_stopped) and -1 is returned: the caller
// stops calling that agent. Never throws.
int do_work_guarded(Agent& agent, std::uint64_t now_ns, const AgentContext& context) noexcept;
// Runs agent.on_close(); a throw is reported and counted (agent_errors). Never throws.
void on_close_guarded(Agent& agent, const AgentContext& context) noexcept;

}  // namespace qpgate::engine
