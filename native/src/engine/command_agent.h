// The agent that serves toEngine: JS's commands. It reads the ring and routes
// every record by type: ECHO it answers itself (so the JS -> engine -> JS path
// can be tested and measured end to end); any other type goes to the
// RecordHandler registered for it; a type nobody handles is skipped and
// counted (rejected_records).
//
// Extensions: agents that every engine should host without the engine (or
// the addon's Engine class) knowing them — the feed agent is one. A factory
// registered once per process with register_extension() is instantiated by
// every CommandAgent constructed afterwards (so by every Engine made after
// it); the command agent runs its extensions right after itself in each duty
// cycle (on_start, do_work, on_close in registration order). An extension
// finds its engine's command agent with CommandAgent::current() (engine
// thread) to register record handlers; the owner of an engine finds an
// extension with current()->extension(name) inside Engine::run_on_engine.
//
// Faults (agent_faults.h): an extension whose do_work throws is stopped, the
// others and the records go on; a record whose handler throws is skipped.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

  using ExtensionFactory = std::unique_ptr<Agent> (*)();
  // Any thread; idempotent per name. Engines constructed before the call do
  // not get the extension.
  static void register_extension(const char* name, ExtensionFactory factory);

  CommandAgent();
  ~CommandAgent() override;

  const char* name() const override { return "commands"; }
  void on_start(AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread (or before start). `type` in (kEcho, kMaxRoutedType);
  // nullptr removes. A handler must outlive its registration.
  bool set_handler(std::int32_t type, RecordHandler* handler);
  RecordHandler* handler(std::int32_t type) const;

  // The extension instantiated under `name` (nullptr if none).
  Agent* extension(std::string_view name) const;

  // Engine thread: the command agent of the engine running on this thread
  // (between its on_start and on_close); nullptr on any other thread.
  static CommandAgent* current();

 private:
  AgentContext* context_ = nullptr;
  std::array<RecordHandler*, record_type::kMaxRoutedType> handlers_{};
  std::vector<std::pair<std::string, std::unique_ptr<Agent>>> extensions_;
  std::vector<char> extension_stopped_;  // per extension, 1 once its do_work threw
  // Offers one record to its handler; a throw skips the record (reported, counted).
  bool offer(RecordHandler& handler, std::int32_t type, const std::byte* payload, std::int32_t length);
  int run_extensions(std::uint64_t now_ns);
};

}  // namespace qpgate::engine
