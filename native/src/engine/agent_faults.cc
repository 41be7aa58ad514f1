#include "agent_faults.h"

#include "agent.h"

#include <new>

namespace qpgate::engine {

std::string describe_exception(const std::exception_ptr& e) noexcept {
  try {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      return ex.what();
    } catch (...) {
      return "an exception that is not a std::exception";
    }
  } catch (...) {
    return {};  // the string itself could not be made
  }
}

void AgentFaults::report(std::string_view agent, const std::exception_ptr& e, bool stopped) noexcept {
  try {
    AgentFault fault{std::string(agent), describe_exception(e), stopped};
    const std::lock_guard<std::mutex> lock(mutex_);
    if (faults_.size() < kMaxKept) faults_.push_back(std::move(fault));
  } catch (...) {
    // Out of memory describing it: the counters still say it happened.
  }
}

std::vector<AgentFault> AgentFaults::list() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return faults_;
}

namespace {

void count_fault(const AgentContext& context, const char* name, bool stopped) noexcept {
  if (context.counters != nullptr) {
    context.counters->agent_errors.add();
    if (stopped) context.counters->agents_stopped.add();
  }
  if (context.faults != nullptr) context.faults->report(name, std::current_exception(), stopped);
}

}  // namespace

int do_work_guarded(Agent& agent, std::uint64_t now_ns, const AgentContext& context) noexcept {
  try {
    return agent.do_work(now_ns);
  } catch (...) {
    count_fault(context, agent.name(), true);
    return -1;
  }
}

void on_close_guarded(Agent& agent, const AgentContext& context) noexcept {
  try {
    agent.on_close();
  } catch (...) {
    count_fault(context, agent.name(), false);
  }
}

}  // namespace qpgate::engine
