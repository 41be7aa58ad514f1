#include "engine_driver.h"

#include <string>

namespace qpgate::addon {

EngineDriver::EngineDriver(Napi::Env env, std::shared_ptr<engine::Engine> engine, Napi::Function on_work)
    : env_(env), engine_(std::move(engine)), on_work_(Napi::Persistent(on_work)) {
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
  uv_poll_start(handle_, UV_READABLE, &EngineDriver::OnReadable);
}

EngineDriver::~EngineDriver() { stop(); }

void EngineDriver::stop() {
  if (handle_ == nullptr) return;
  uv_poll_stop(handle_);
  handle_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(handle_), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
  handle_ = nullptr;
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
  Napi::Env env = env_;
  ++wakes_;
  // Drain first: the agents re-arm their deadlines in the cycles below.
  engine_->drain_wakes();
  for (int i = 0; i < kMaxCyclesPerWake; ++i) {
    if (engine_->do_work_once() == 0) break;
  }
  Napi::HandleScope scope(env);
  try {
    on_work_.MakeCallback(env.Global(), {}, *context_);
  } catch (const Napi::Error& e) {
    // As an exception out of any other I/O callback: process 'uncaughtException'.
    napi_fatal_exception(env, e.Value());
  }
}

}  // namespace qpgate::addon
