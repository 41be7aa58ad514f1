#include "engine_driver.h"

#include <string>

namespace qpgate::addon {

EngineDriver::EngineDriver(Napi::Env env, std::shared_ptr<engine::Engine> engine, Napi::Function on_work,
                           Napi::Function on_wake)
    : env_(env), engine_(std::move(engine)), on_work_(Napi::Persistent(on_work)) {
  if (!on_wake.IsEmpty()) on_wake_ = Napi::Persistent(on_wake);
  context_ = std::make_unique<Napi::AsyncContext>(env, "qpgate.engine.driven");
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    throw Napi::Error::New(env, "qpgate Engine: startDriven: no event loop for this environment");
  }
  auto* handle = new uv_poll_t{};
  const int rc = uv_poll_init(loop, handle, engine_->wait_fd());
  if (rc != 0) {
    delete handle;
    throw Napi::Error::New(env, std::string("qpgate Engine: startDriven: uv_poll_init: ") + uv_strerror(rc));
  }
  handle->data = this;
  handle_ = handle;
  wake_ = new uv_idle_t{};
  uv_idle_init(loop, wake_);  // cannot fail (libuv's own list)
  wake_->data = this;
  uv_poll_start(handle_, UV_READABLE, &EngineDriver::OnReadable);
}

EngineDriver::~EngineDriver() { stop(); }

void EngineDriver::stop() {
  if (handle_ == nullptr) return;
  uv_poll_stop(handle_);
  handle_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(handle_), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
  handle_ = nullptr;
  uv_idle_stop(wake_);
  wake_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(wake_), [](uv_handle_t* h) { delete reinterpret_cast<uv_idle_t*>(h); });
  wake_ = nullptr;
}

void EngineDriver::wake_js() {
  if (wake_ != nullptr && uv_is_active(reinterpret_cast<uv_handle_t*>(wake_)) == 0) {
    uv_idle_start(wake_, &EngineDriver::OnIdle);
  }
}

void EngineDriver::OnIdle(uv_idle_t* handle) {
  uv_idle_stop(handle);
  auto* self = static_cast<EngineDriver*>(handle->data);
  if (self == nullptr) return;
  const std::shared_ptr<EngineDriver> keep = self->shared_from_this();  // on_wake may stop the engine
  self->Call(self->on_wake_);
}

void EngineDriver::OnReadable(uv_poll_t* handle, int status, int /*events*/) {
  auto* self = static_cast<EngineDriver*>(handle->data);
  // status < 0 (EBADF after the engine's fds closed) cannot happen while we
  // watch: the engine is stopped only after this driver is gone.
  if (self == nullptr || status < 0) return;
  self->Run();
}

void EngineDriver::Run() {
  const std::shared_ptr<EngineDriver> keep = shared_from_this();  // on_work may stop the engine
  ++wakes_;
  // Drain first: the agents re-arm their deadlines in the cycles below.
  engine_->drain_wakes();
  for (int i = 0; i < kMaxCyclesPerWake; ++i) {
    if (engine_->do_work_once() == 0) break;
  }
  Call(on_work_);
}

// As MakeCallback from any other I/O callback: microtasks run after it, and
// an exception is the process's 'uncaughtException'.
void EngineDriver::Call(Napi::FunctionReference& fn) {
  if (fn.IsEmpty()) return;
  Napi::Env env = env_;
  Napi::HandleScope scope(env);
  try {
    fn.MakeCallback(env.Global(), {}, *context_);
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());
  }
}

}  // namespace qpgate::addon
