// What the engine does with an exception on its thread: it never ends the
// process. A run_on_engine task that throws has its caller's call fail with
// the exception (counted: task_errors). An agent whose do_work throws is
// stopped — not called again, the other agents go on — and reported here
// with its name and the exception's message (counted: agent_errors,
// agents_stopped); a toEngine record whose handler throws is skipped and
// reported (agent_errors), its handler keeps its registration.
//
// The engine thread writes (rarely: only on a fault), any thread reads.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace qpgate::engine {

struct AgentFault {
  std::string agent;    // the agent's name(), or "record handler (type N)"
  std::string message;  // what the exception said
  bool stopped = false; // the agent was stopped (a record handler is not)
};

// "std::bad_alloc", "no such device" ...; never throws.
std::string describe_exception(const std::exception_ptr& e) noexcept;

class AgentFaults {
 public:
  static constexpr std::size_t kMaxKept = 16;  // the first faults are kept: they are the cause

  // Never throws (out of memory: the fault is counted by the caller, not described).
  void report(std::string_view agent, const std::exception_ptr& e, bool stopped) noexcept;
  std::vector<AgentFault> list() const;

 private:
  mutable std::mutex mutex_;
  std::vector<AgentFault> faults_;
};

}  // namespace qpgate::engine
