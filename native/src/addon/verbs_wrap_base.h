// The parts of the verbs wraps that verbs_wrap.cc (PD, CQ, QP, MR, AH, SRQ)
// and device_wrap.cc (the device, openDevice) share: the engine each JS
// object lives on, and how an object is made and released there.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "verbs/device.h"
#include "verbs_convert.h"
#include "verbs_wrap.h"

namespace qpgate::addon {

using EnginePtr = std::shared_ptr<engine::Engine>;

// Runs `fn` on the engine thread and waits for it.
inline void on_engine(const EnginePtr& e, const std::function<void()>& fn) { e->run_on_engine(fn); }

[[noreturn]] inline void throw_status(Napi::Env env, const verbs::Status& s) { throw verbs_error(env, s.error()); }

template <class T>
T unwrap_result(Napi::Env env, verbs::Result<T>& r) {
  if (!r.ok()) throw verbs_error(env, r.error());
  return std::move(r).value();
}

inline Napi::Object counters_object(Napi::Env env) { return Napi::Object::New(env); }

template <class C>
Napi::Object counters_to_js(Napi::Env env, const C& c) {
  Napi::Object o = counters_object(env);
  c.for_each([&](std::string_view name, std::uint64_t v) {
    o.Set(std::string(name), Napi::Number::New(env, static_cast<double>(v)));
  });
  return o;
}

// The shared part of every verbs object wrap: the engine it lives on and
// the verbs object. release() destroys the object on the engine thread.
template <class Self, class Obj>
class VerbsWrap : public Napi::ObjectWrap<Self> {
 public:
  explicit VerbsWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Self>(info) {}

  // `engine_js` is the JS Engine: held so that it is not collected (and
  // its finalizer does not stop the engine) while this object lives.
  void init(EnginePtr e, Napi::Object engine_js, std::unique_ptr<Obj> o, VerbsClasses* classes) {
    engine_ = std::move(e);
    engine_js_ = Napi::Persistent(engine_js);
    obj_ = std::move(o);
    classes_ = classes;
  }
  Obj* get() const { return obj_.get(); }

 protected:
  Obj& obj(Napi::Env env, const char* what) const {
    if (!obj_) throw Napi::Error::New(env, std::string("qpgate: this ") + what + " was destroyed (or not made by the addon)");
    return *obj_;
  }
  void run(const std::function<void()>& fn) const { on_engine(engine_, fn); }
  void release() {
    if (!obj_) return;
    EnginePtr e = engine_;
    on_engine(e, [this] { obj_.reset(); });
  }

  Napi::Object engine_js() const { return engine_js_.Value(); }

  EnginePtr engine_;
  Napi::ObjectReference engine_js_;
  std::unique_ptr<Obj> obj_;
  VerbsClasses* classes_ = nullptr;
};

template <class W, class Obj>
Napi::Object make_wrap(Napi::FunctionReference& ctor, const EnginePtr& e, Napi::Object engine_js, std::unique_ptr<Obj> o,
                       VerbsClasses* classes) {
  Napi::Object js = ctor.New({});
  W::Unwrap(js)->init(e, engine_js, std::move(o), classes);
  return js;
}


// Made by verbs_wrap.cc, for the device's allocPd and createCq.
Napi::Object wrap_pd(VerbsClasses* classes, const EnginePtr& e, Napi::Object engine_js, std::unique_ptr<verbs::ProtectionDomain> pd);
Napi::Object wrap_cq(VerbsClasses* classes, const EnginePtr& e, Napi::Object engine_js, std::unique_ptr<verbs::CompletionQueue> cq);

// device_wrap.cc: the Device class, openDevice and the test-only fault injector doors.
Napi::Function define_device(Napi::Env env);
Napi::Value open_device_js(const Napi::CallbackInfo& info);
Napi::Value testing_set_faults(const Napi::CallbackInfo& info);
Napi::Value testing_fault_counters(const Napi::CallbackInfo& info);

}  // namespace qpgate::addon
