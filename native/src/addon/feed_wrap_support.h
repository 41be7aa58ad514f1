// What the feed's two JS handles (feed_publisher_wrap.cc,
// feed_subscriber_wrap.cc) share: argument conversion, the engine and agent
// a create call resolves to, and the Handle that keeps them.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "engine/engine.h"
#include "feed/feed_agent.h"
#include "feed/feed_limits.h"
#include "feed/recovery_service.h"
#include "feed_wrap.h"
#include "metrics/latency_histogram.h"
#include "verbs/rc_connect.h"

namespace qpgate::addon::feed_wrap {

using EnginePtr = std::shared_ptr<engine::Engine>;

// What both handles share: the engine, its feed agent, the JS objects kept alive.
struct Handle {
  EnginePtr engine;
  feed::FeedAgent* agent = nullptr;  // owned by the engine (its command agent)
  std::uint32_t id = 0;
  Napi::ObjectReference engine_js;
  Napi::ObjectReference device_js;
  Napi::ObjectReference alternate_js;  // the alternate device, when given

  void hold(const Napi::CallbackInfo& info) {
    engine_js = Napi::Persistent(info[0].As<Napi::Object>());
    device_js = Napi::Persistent(info[1].As<Napi::Object>());
    if (info.Length() > 3 && info[3].IsObject()) alternate_js = Napi::Persistent(info[3].As<Napi::Object>());
  }
  void bind(const Napi::CallbackInfo& info, EnginePtr e, feed::FeedAgent* a, std::uint32_t handle_id) {
    engine = std::move(e);
    agent = a;
    id = handle_id;
    hold(info);
  }
  // Removes the publisher or subscriber from its agent, on the engine thread. Idempotent.
  void release(bool (feed::FeedAgent::*remove)(std::uint32_t)) {
    if (id == 0) return;
    const std::uint32_t was = id;
    id = 0;
    feed::FeedAgent* a = agent;
    engine->run_on_engine([&] { (void)(a->*remove)(was); });
  }
};

struct Resolved {
  EnginePtr engine;
  feed::FeedAgent* agent = nullptr;
  verbs::Device* device = nullptr;
  verbs::Device* alternate = nullptr;  // create*(engine, device, config, alternateDevice?)
};

std::uint32_t group_of(Napi::Env env, Napi::Value v, const std::string& where);
// An integer within a declared setting's bounds (feed_config_limits.def): a RangeError otherwise.
std::uint32_t to_limit(Napi::Env env, Napi::Value v, const std::string& where, const feed::FeedLimit& limit);
Napi::Value histogram_counts(Napi::Env env, const metrics::LatencyHistogram& h);
// {qpn, psn, gid, mtu} of the control-plane handshake (docs/protocol.md §3.1).
verbs::RcPeer rc_peer_of(Napi::Env env, Napi::Value v, const std::string& where);
Napi::Object rc_peer_to_js(Napi::Env env, const verbs::RcPeer& p);
Napi::Object recovery_session_to_js(Napi::Env env, const feed::RecoverySessionInfo& s);
// limits: {maxMessages?, messagesPerSecond?, burstMessages?, replyBytes?, sendSlots?, recvSlots?}
feed::RecoveryLimits limits_of(Napi::Env env, Napi::Value v, const std::string& where);
// The engine, its feed agent and the devices of create*(engine, device,
// config, alternateDevice?); TypeError if not those.
Resolved resolve(const Napi::CallbackInfo& info, const FeedClasses& classes, const char* what);
Napi::Array channels_of(Napi::Env env, const Napi::Object& config, const char* what);
// A refused reservation: ENOMEM (the host cannot give it) as an Error with
// code ENOMEM, anything else (a config reserve() refused) as a TypeError.
Napi::Error reservation_error(Napi::Env env, const std::string& what, const verbs::Error& e);

// The classes and create functions of each handle.
Napi::Function define_publisher(Napi::Env env);
Napi::Value create_publisher(const Napi::CallbackInfo& info);
Napi::Function define_subscriber(Napi::Env env);
Napi::Value create_subscriber(const Napi::CallbackInfo& info);

}  // namespace qpgate::addon::feed_wrap
