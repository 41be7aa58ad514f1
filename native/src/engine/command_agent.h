// The agent that serves toEngine: JS's commands. It reads the ring and routes
// every record by type: ECHO it answers itself (so the JS -> engine -> JS path
// can be tested and measured end to end); any other type goes to the
// RecordHandler registered for it; a type nobody handles is skipped and
// counted (rejected_records).
//
// It is the first agent of every engine (Engine's constructor adds it); the
// agents that take record types register their handlers with it, found
// through Engine::commands() by whoever builds the engine
// (native/src/gateway/engine_agents.h), not through a global.
//
// Faults (agent_faults.h): a record whose handler throws is skipped, counted
// and reported; the records after it go on.
#pragma once

#include <array>

#include "agent.h"
#include "record_types.h"

namespace qpgate::engine {

class RecordHandler {
 public:
  virtual ~RecordHandler() = default;
  // One toEngine record of a type this handler registered for, on the engine
  // thread. Return false to leave it (and every later record) in the ring:
  // back-pressure; it is offered again on the next duty cycle.
  virtual bool on_record(std::int32_t type, const std::byte* payload, std::int32_t length) = 0;
};

class CommandAgent final : public Agent {
 public:
  // Records per do_work, so one busy ring cannot starve the other agents.
  static constexpr int kBatchLimit = 4096;

  CommandAgent() = default;
  ~CommandAgent() override = default;
  CommandAgent(const CommandAgent&) = delete;
  CommandAgent& operator=(const CommandAgent&) = delete;

  const char* name() const override { return "commands"; }
  void on_start(AgentContext& context) override { context_ = &context; }
  int do_work(std::uint64_t now_ns) override;

  // Engine thread (or before start). `type` in (kEcho, kMaxRoutedType);
  // nullptr removes. A handler must outlive its registration.
  bool set_handler(std::int32_t type, RecordHandler* handler);
  RecordHandler* handler(std::int32_t type) const;

 private:
  AgentContext* context_ = nullptr;
  std::array<RecordHandler*, record_type::kMaxRoutedType> handlers_{};
  // Offers one record to its handler; a throw skips the record (reported, counted).
  bool offer(RecordHandler& handler, std::int32_t type, const std::byte* payload, std::int32_t length);
};

}  // namespace qpgate::engine
