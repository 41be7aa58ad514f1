#include "engine_wrap.h"

#include <chrono>
#include <new>
#include <stdexcept>
#include <thread>

#include "args.h"
#include "convert.h"
#include "verbs_convert.h"
#include "options.h"

namespace qpgate::addon {

namespace {

// Marks objects made by this class, so FromValue can tell them apart.
constexpr napi_type_tag kEngineTag = {0x71c2a9d05b3e4f10ULL, 0x8d6e2f4a1b7c9e03ULL};

// Queue depth for wake-ups. The engine queues at most one per JS drain (the
// ring's waiting word), so a handful is plenty; a full queue is retried by
// the engine on its next duty cycle, never waited for.
constexpr std::size_t kWakeQueueSize = 4;

Napi::ArrayBuffer ring_buffer(Napi::Env env, const engine::RingMemory& mem) {
  // The finalizer's shared_ptr keeps the memory alive while JS holds it.
  auto* keep = new std::shared_ptr<engine::NodeBuffer>(mem.buffer);
  return Napi::ArrayBuffer::New(
      env, mem.view.data(), static_cast<std::size_t>(engine::RingView::total_length(mem.view.capacity())),
      [](Napi::Env, void*, std::shared_ptr<engine::NodeBuffer>* hint) { delete hint; }, keep);
}

// __testing_engine.throwOnEngine(engine, kind): a run_on_engine task that
// throws std::bad_alloc ('bad_alloc'), std::runtime_error ('runtime_error')
// or an int ('other'), as a failing allocation or bug would.
Napi::Value TestingThrowOnEngine(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EngineWrap* ew = &EngineWrap::FromArg(env, info[0], "throwOnEngine: engine");
  const std::string kind = to_str(env, info[1], "throwOnEngine: kind");
  run_on_engine(env, *ew->engine(), "engine task", [&] {
    if (kind == "bad_alloc") throw std::bad_alloc();
    if (kind == "runtime_error") throw std::runtime_error("a task failed on purpose");
    if (kind == "other") throw 42;
  });
  return env.Undefined();
}

}  // namespace

Napi::Error native_error(Napi::Env env, const std::string& what, const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc& ex) {
    Napi::Error err = Napi::Error::New(env, what + ": out of memory (" + ex.what() + ")");
    err.Set("code", Napi::String::New(env, "ENOMEM"));
    return err;
  } catch (const std::exception& ex) {
    return Napi::Error::New(env, what + ": " + ex.what());
  } catch (...) {
    return Napi::Error::New(env, what + ": " + engine::describe_exception(e));
  }
}

void run_on_engine(Napi::Env env, engine::Engine& engine, const std::string& what, const std::function<void()>& fn) {
  try {
    engine.run_on_engine(fn);
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    throw native_error(env, what, std::current_exception());
  }
}

Napi::Object testing_engine_exports(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("throwOnEngine", Napi::Function::New(env, TestingThrowOnEngine, "throwOnEngine"));
  return o;
}

Napi::Function EngineWrap::Define(Napi::Env env) {
  return DefineClass(env, "Engine",
                     {InstanceMethod<&EngineWrap::Start>("start"),
                      InstanceMethod<&EngineWrap::StartDriven>("startDriven"),
                      InstanceMethod<&EngineWrap::DoWork>("doWork"),
                      InstanceMethod<&EngineWrap::Stop>("stop"),
                      InstanceMethod<&EngineWrap::Placement>("placement"),
                      InstanceMethod<&EngineWrap::Stats>("stats"),
                      InstanceMethod<&EngineWrap::CycleTimeCounts>("cycleTimeCounts"),
                      InstanceMethod<&EngineWrap::Rings>("rings"),
                      InstanceMethod<&EngineWrap::Notify>("notify"),
                      // Test-only door (src/native/testing/stall.ts), deliberately not in engine.ts.
                      InstanceMethod<&EngineWrap::TestingStall>("__testing_stall"),
                      InstanceAccessor<&EngineWrap::Running>("running"),
                      InstanceAccessor<&EngineWrap::Driven>("driven")});
}

EngineWrap& EngineWrap::FromArg(Napi::Env env, Napi::Value value, const std::string& where) {
  EngineWrap* ew = FromValue(value);
  if (ew == nullptr) type_error(env, where, "an Engine from this addon", value);
  return *ew;
}

EngineWrap* EngineWrap::FromValue(Napi::Value value) {
  if (!value.IsObject()) return nullptr;
  Napi::Object o = value.As<Napi::Object>();
  if (!o.CheckTypeTag(&kEngineTag)) return nullptr;
  return Unwrap(o);
}

EngineWrap::EngineWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineWrap>(info), env_(info.Env()) {
  info.This().As<Napi::Object>().TypeTag(&kEngineTag);
  EngineOptions options = parse_engine_options(info.Env(), info[0]);
  if (!options.on_wake.IsEmpty()) on_wake_ = Napi::Persistent(options.on_wake);
  engine::JsWaker waker;
  if (!on_wake_.IsEmpty()) waker = [this] { return WakeJs(); };
  try {
    engine_ = std::make_shared<engine::Engine>(std::move(options.config), std::move(waker));
    agents_ = gateway::add_engine_agents(*engine_);
  } catch (const std::exception& e) {
    throw Napi::TypeError::New(info.Env(), std::string("qpgate Engine: ") + e.what());
  }
}

EngineWrap::~EngineWrap() { StopEngine(false); }

bool EngineWrap::WakeJs() {
  if (driver_) {  // driven: this is the JS thread (engine_driver.h)
    driver_->wake_js();
    return true;
  }
  const napi_status status = tsfn_.NonBlockingCall();
  // napi_closing: the environment is going away; nothing left to wake.
  return status != napi_queue_full;
}

void EngineWrap::StartWakes(Napi::Env env) {
  if (!on_wake_.IsEmpty()) {
    tsfn_ = Napi::ThreadSafeFunction::New(env, on_wake_.Value(), "qpgate.engine.wake", kWakeQueueSize, 1);
    tsfn_live_ = true;
  }
}

Napi::Value EngineWrap::Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (engine_->running()) return env.Undefined();
  StartWith(env, [this] { engine_->start(); });
  return env.Undefined();
}

// startDriven(onWork): the engine on this (the JS) thread, run by the event
// loop (engine_driver.h); onWork() is called after the cycles of each wake.
Napi::Value EngineWrap::StartDriven(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (engine_->running()) throw Napi::Error::New(env, "qpgate Engine: startDriven on a started engine");
  const Napi::Function on_work = to_function(env, info[0], "qpgate Engine: startDriven: onWork");
  StartWith(env, [&] {
    engine_->start_driven();
    driver_ = std::make_shared<EngineDriver>(env, engine_, on_work,
                                             on_wake_.IsEmpty() ? Napi::Function() : on_wake_.Value());
  });
  return env.Undefined();
}

void EngineWrap::StartWith(Napi::Env env, const std::function<void()>& start) {
  StartWakes(env);
  try {
    start();
  } catch (const Napi::Error&) {
    StopEngine(false);
    throw;
  } catch (const std::exception& e) {
    StopEngine(false);
    throw Napi::Error::New(env, e.what());
  }
  if (napi_add_env_cleanup_hook(env, &EngineWrap::OnEnvCleanup, this) == napi_ok) cleanup_hook_ = true;
}

// doWork(): one duty cycle of a driven engine now (after posting work, or
// busy-polling for a completion); returns the work done.
Napi::Value EngineWrap::DoWork(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_->driven()) throw Napi::Error::New(env, "qpgate Engine: doWork needs an engine started with startDriven");
  return Napi::Number::New(env, engine_->do_work_once());
}

Napi::Value EngineWrap::Driven(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), engine_->driven());
}

Napi::Value EngineWrap::Stop(const Napi::CallbackInfo& info) {
  StopEngine(true);
  return info.Env().Undefined();
}

void EngineWrap::StopEngine(bool detach) {
  if (driver_) {
    driver_->stop();  // before the engine closes the fd it watches
    driver_.reset();
  }
  if (engine_) engine_->stop();  // joins; idempotent
  if (tsfn_live_) {
    tsfn_.Release();  // after the join: no engine call can follow it
    tsfn_live_ = false;
  }
  for (Napi::Reference<Napi::ArrayBuffer>* ref : {&to_engine_ab_, &from_engine_ab_}) {
    if (ref->IsEmpty()) continue;
    if (detach) {
      Napi::ArrayBuffer ab = ref->Value();
      if (!ab.IsEmpty() && !ab.IsDetached()) ab.Detach();
    }
    ref->Reset();
  }
  if (cleanup_hook_) {
    napi_remove_env_cleanup_hook(env_, &EngineWrap::OnEnvCleanup, this);
    cleanup_hook_ = false;
  }
}

void EngineWrap::OnEnvCleanup(void* self) {
  auto* wrap = static_cast<EngineWrap*>(self);
  wrap->cleanup_hook_ = false;  // do not remove the hook from inside itself
  wrap->StopEngine(false);
}

Napi::Value EngineWrap::Placement(const Napi::CallbackInfo& info) {
  if (engine_->placement().tid == 0) {
    throw Napi::Error::New(info.Env(), "qpgate Engine: placement() is known once start() has run");
  }
  return placement_to_js(info.Env(), engine_->placement());
}

Napi::Value EngineWrap::Stats(const Napi::CallbackInfo& info) { return stats_to_js(info.Env(), engine_->stats()); }

// The duty-cycle time histogram's raw counts (HdrHistogram layout, ns), as latencyCounts() gives a feed's.
Napi::Value EngineWrap::CycleTimeCounts(const Napi::CallbackInfo& info) {
  constexpr std::size_t n = metrics::LatencyHistogram::kCountsLength;
  const metrics::LatencyHistogram& h = engine_->cycle_times();
  Napi::Float64Array out = Napi::Float64Array::New(info.Env(), n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(h.count_at_index(i));
  return out;
}

Napi::Value EngineWrap::Rings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_->running()) throw Napi::Error::New(env, "qpgate Engine: rings() needs a started engine");
  // The same ArrayBuffers every time: one external buffer per memory range.
  if (to_engine_ab_.IsEmpty()) to_engine_ab_ = Napi::Persistent(ring_buffer(env, engine_->to_engine_ring()));
  if (from_engine_ab_.IsEmpty()) from_engine_ab_ = Napi::Persistent(ring_buffer(env, engine_->from_engine_ring()));
  Napi::Object o = Napi::Object::New(env);
  o.Set("toEngine", to_engine_ab_.Value());
  o.Set("fromEngine", from_engine_ab_.Value());
  o.Set("toEngineCapacity", Napi::Number::New(env, static_cast<double>(engine_->config().to_engine_capacity)));
  o.Set("fromEngineCapacity", Napi::Number::New(env, static_cast<double>(engine_->config().from_engine_capacity)));
  return o;
}

Napi::Value EngineWrap::Notify(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), engine_->notify());
}

// __testing_stall(ms): the engine thread runs a command that sleeps `ms`, as a
// duty cycle stuck in work would; queued from a helper thread, so the JS
// thread is not blocked (run_on_engine waits for the command). FOR TESTS.
Napi::Value EngineWrap::TestingStall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::uint32_t ms = to_u32(env, info[0], "__testing_stall: ms", 60'000);
  if (!engine_->running()) throw Napi::Error::New(env, "qpgate Engine: __testing_stall needs a started engine");
  std::thread([engine = engine_, ms] {
    engine->run_on_engine([ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
  }).detach();
  return env.Undefined();
}

Napi::Value EngineWrap::Running(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), engine_->running());
}

}  // namespace qpgate::addon
