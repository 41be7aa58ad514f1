// Drives an engine from Node's event loop (Engine::start_driven): a
// uv_poll_t on the engine's wait fd (the parker's epoll set: the agents'
// sockets and completion channels, the timerfd of their earliest protocol
// deadline, the doorbell). When it is readable the loop runs duty cycles
// until one does nothing (at most kMaxCyclesPerWake, so a peer that floods
// us cannot hold the JS thread) and then calls `on_work` once, as
// MakeCallback does (microtasks run after it): the client polls its CQ
// there, a batch of completions per call. A retransmission or ACK timeout
// therefore fires while JS is idle, with no engine thread.
//
// The engine's fromEngine records are handed to JS the same way, without the
// thread-safe function an engine thread needs: the cycles run on the JS
// thread, so wake_js() only starts a uv_idle_t, and `on_wake` runs early in
// the next turn of the loop (libuv's idle phase, before it polls). No
// eventfd write, no wait in epoll: on this 2-vCPU VM each syscall saved is
// 1-3 µs of a driven publish (bench/README.md, "Driven delivery").
#pragma once

#include <napi.h>
#include <uv.h>

#include <memory>

#include "engine/engine.h"

namespace qpgate::addon {

class EngineDriver : public std::enable_shared_from_this<EngineDriver> {
 public:
  // Duty cycles per readable wake, at most: 64 cycles of a soft device are
  // 64 recvmmsg batches, well under a millisecond of the JS thread.
  static constexpr int kMaxCyclesPerWake = 64;

  // Starts watching; throws Napi::Error when libuv refuses the fd.
  EngineDriver(Napi::Env env, std::shared_ptr<engine::Engine> engine, Napi::Function on_work, Napi::Function on_wake);
  ~EngineDriver();  // stop()
  EngineDriver(const EngineDriver&) = delete;
  EngineDriver& operator=(const EngineDriver&) = delete;

  // Stops watching (before the engine stops: its fds close with it). Safe
  // inside on_work: the handle is freed by uv_close's callback, this object
  // by the last shared_ptr (Run holds one across the call).
  void stop();

  // Wakes handled (readable callbacks), for stats and tests.
  std::uint64_t wakes() const { return wakes_; }

  // The engine's JsWaker while driven (JS thread only): on_wake runs in the
  // loop's next idle phase, once however often this is called before it.
  void wake_js();

 private:
  static void OnReadable(uv_poll_t* handle, int status, int events);
  static void OnIdle(uv_idle_t* handle);
  void Run();
  void Call(Napi::FunctionReference& fn);

  Napi::Env env_;
  std::shared_ptr<engine::Engine> engine_;
  Napi::FunctionReference on_work_;
  Napi::FunctionReference on_wake_;
  std::unique_ptr<Napi::AsyncContext> context_;
  uv_poll_t* handle_ = nullptr;  // owned by libuv from uv_close on
  uv_idle_t* wake_ = nullptr;    // likewise
  std::uint64_t wakes_ = 0;
};

}  // namespace qpgate::addon
