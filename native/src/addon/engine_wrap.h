// The JS class `Engine`: an engine::Engine, its wake-up ThreadSafeFunction
// and the ArrayBuffers over its rings.
//
// Lifetime: stop() joins the thread, releases the TSFN and detaches the
// ring ArrayBuffers (so stale JS views read as empty instead of freed
// memory). The memory itself is owned through shared_ptrs that the
// ArrayBuffers' finalizers hold, so it stays valid for as long as JS can
// reach it. stop() also runs from the object's finalizer and from an env
// cleanup hook (registered at start, after the TSFN's own, so it runs first
// and the TSFN is still alive when we release it).
#pragma once

#include <napi.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine_driver.h"
#include "gateway/engine_agents.h"

namespace qpgate::engine {
class SoftDeviceAgent;
}

namespace qpgate::addon {

// Runs `fn` on the engine thread (Engine::run_on_engine) and waits. What it
// throws comes back to JS as an Error "<what>: <message>" (std::bad_alloc:
// code ENOMEM, "out of memory (std::bad_alloc)"); a Napi::Error passes as it
// is. The engine counts it (task_errors) and goes on.
void run_on_engine(Napi::Env env, engine::Engine& engine, const std::string& what, const std::function<void()>& fn);
// The JS Error for an exception caught from native code, prefixed with `what`.
Napi::Error native_error(Napi::Env env, const std::string& what, const std::exception_ptr& e);
// exports.__testing_engine (tests only, src/native/testing/engine-faults.ts).
Napi::Object testing_engine_exports(Napi::Env env);

class EngineWrap : public Napi::ObjectWrap<EngineWrap> {
 public:
  static Napi::Function Define(Napi::Env env);

  explicit EngineWrap(const Napi::CallbackInfo& info);
  ~EngineWrap() override;
  EngineWrap(const EngineWrap&) = delete;
  EngineWrap& operator=(const EngineWrap&) = delete;

  // For the verbs, feed and orders bindings: the engine (shared, so verbs
  // objects keep it alive for their finalizers) and its agents
  // (gateway/engine_agents.h), owned by the engine.
  const std::shared_ptr<engine::Engine>& engine() const { return engine_; }
  const gateway::EngineAgents& agents() const { return agents_; }
  // Non-null when `value` is an Engine made by this addon.
  static EngineWrap* FromValue(Napi::Value value);
  // The same, or args.h's TypeError "<where> must be an Engine from this addon, got ...".
  static EngineWrap& FromArg(Napi::Env env, Napi::Value value, const std::string& where);

 private:
  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value StartDriven(const Napi::CallbackInfo& info);
  Napi::Value DoWork(const Napi::CallbackInfo& info);
  Napi::Value Driven(const Napi::CallbackInfo& info);
  void StartWakes(Napi::Env env);
  // StartWakes, then `start`; on a throw everything is stopped again and the error goes to JS.
  void StartWith(Napi::Env env, const std::function<void()>& start);
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value Placement(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value CycleTimeCounts(const Napi::CallbackInfo& info);
  Napi::Value Rings(const Napi::CallbackInfo& info);
  Napi::Value Notify(const Napi::CallbackInfo& info);
  Napi::Value Running(const Napi::CallbackInfo& info);
  Napi::Value TestingStall(const Napi::CallbackInfo& info);

  // Engine thread: one wake per batch; false when the TSFN queue is full.
  bool WakeJs();
  // `detach`: also detach the ArrayBuffers (needs a live JS heap).
  void StopEngine(bool detach);
  static void OnEnvCleanup(void* self);

  napi_env env_;
  std::shared_ptr<engine::Engine> engine_;
  gateway::EngineAgents agents_;
  Napi::FunctionReference on_wake_;
  std::shared_ptr<EngineDriver> driver_;  // driven mode: the event loop's watch
  Napi::ThreadSafeFunction tsfn_;
  bool tsfn_live_ = false;
  bool cleanup_hook_ = false;
  Napi::Reference<Napi::ArrayBuffer> to_engine_ab_;
  Napi::Reference<Napi::ArrayBuffer> from_engine_ab_;
};

}  // namespace qpgate::addon
