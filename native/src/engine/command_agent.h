// The agent that serves toEngine: JS's commands. For now one command, ECHO,
// so the JS -> engine -> JS path can be tested and measured end to end.
#pragma once

#include "agent.h"

namespace qpgate::engine {

class CommandAgent final : public Agent {
 public:
  // Records per do_work, so one busy ring cannot starve the other agents.
  static constexpr int kBatchLimit = 4096;

  const char* name() const override { return "commands"; }
  void on_start(AgentContext& context) override { context_ = &context; }
  int do_work(std::uint64_t now_ns) override;

 private:
  AgentContext* context_ = nullptr;
};

}  // namespace qpgate::engine
