// feed.createSubscriber and the FeedSubscriber handle it returns (feed_wrap.h).
#include "feed_wrap_support.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "args.h"
#include "engine/engine.h"
#include "engine_wrap.h"
#include "feed/feed_agent.h"
#include "feed/feed_records.h"
#include "declared_counters.h"
#include "js_number.h"
#include "verbs/gid.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"
#include "verbs_convert.h"

namespace qpgate::addon::feed_wrap {
namespace {

class SubscriberWrap : public Napi::ObjectWrap<SubscriberWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FeedSubscriber",
                       {InstanceAccessor<&SubscriberWrap::Id>("id"),
                        InstanceAccessor<&SubscriberWrap::HasAlternateDevice>("hasAlternateDevice"),
                        InstanceMethod<&SubscriberWrap::Stats>("stats"),
                        InstanceMethod<&SubscriberWrap::LatencyCounts>("latencyCounts"),
                        InstanceMethod<&SubscriberWrap::RecoveryLocal>("recoveryLocal"),
                        InstanceMethod<&SubscriberWrap::ConnectRecovery>("connectRecovery"),
                        InstanceMethod<&SubscriberWrap::RenewRecovery>("renewRecovery"),
                        InstanceMethod<&SubscriberWrap::RecoveryPath>("recoveryPath"),
                        InstanceMethod<&SubscriberWrap::ReportConsumer>("reportConsumer"),
                        InstanceMethod<&SubscriberWrap::Close>("close")});
  }
  explicit SubscriberWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SubscriberWrap>(info) {}
  ~SubscriberWrap() override {
    try {
      release();
    } catch (...) {
      // A finalizer must not throw; the engine counted the failed task.
    }
  }

  void init(const Napi::CallbackInfo& info, const Resolved& r, std::uint32_t id, std::shared_ptr<feed::SubscriberStats> stats,
            std::optional<verbs::RcPeer> recovery_local, std::shared_ptr<feed::RecoveryClientCounters> client,
            std::shared_ptr<feed::ConsumerLoad> load) {
    load_ = std::move(load);
    h_.bind(info, r.engine, r.agent, id);
    has_alternate_device_ = r.alternate != nullptr;
    stats_ = std::move(stats);
    recovery_local_ = recovery_local;
    client_ = std::move(client);
  }

 private:
  void release() { h_.release(&feed::FeedAgent::remove_subscriber); }
  // Our side of the recovery connection, for the handshake; null without config.recovery.
  Napi::Value RecoveryLocal(const Napi::CallbackInfo& info) {
    if (!recovery_local_) return info.Env().Null();
    return rc_peer_to_js(info.Env(), *recovery_local_);
  }
  // reportConsumer({queued, dropped, conflated}): the application's queue, sent to the gateway in SubscriberReports.
  Napi::Value ReportConsumer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = to_object(env, info[0], "subscriber.reportConsumer: load", "an object {queued, dropped, conflated}");
    if (load_ != nullptr) {
      load_->queued.store(to_u64(env, o.Get("queued"), "subscriber.reportConsumer: queued"), std::memory_order_relaxed);
      load_->dropped.store(to_u64(env, o.Get("dropped"), "subscriber.reportConsumer: dropped"), std::memory_order_relaxed);
      load_->conflated.store(to_u64(env, o.Get("conflated"), "subscriber.reportConsumer: conflated"), std::memory_order_relaxed);
    }
    return env.Undefined();
  }
  // connectRecovery({qpn, psn, gid, mtu}): the gateway's answer; the QP goes to RTS.
  Napi::Value ConnectRecovery(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const verbs::RcPeer peer = rc_peer_of(env, info[0], "subscriber.connectRecovery: gateway");
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this subscriber was closed");
    if (!recovery_local_) throw Napi::Error::New(env, "subscriber.connectRecovery: created without a recovery config");
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    verbs::Status st;
    h_.engine->run_on_engine([&] {
      feed::Subscriber* s = agent->subscriber(id);
      st = s == nullptr ? verbs::Status{verbs::Error{ENOENT, "the subscriber is gone"}} : s->connect_recovery(peer);
    });
    if (!st.ok()) throw Napi::Error::New(env, "subscriber.connectRecovery: " + std::string(st.message()));
    return env.Undefined();
  }
  // recoveryPath(): the path the recovery connection runs on ({activePath,
  // pathMigState, pathMigrations}, docs/protocol.md §1.10); null without one or
  // before it is connected.
  Napi::Value RecoveryPath(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (h_.id == 0 || !recovery_local_) return env.Null();
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    std::optional<verbs::RcPathInfo> path;
    h_.engine->run_on_engine([&] {
      feed::Subscriber* s = agent->subscriber(id);
      if (s != nullptr && s->recovery() != nullptr && s->recovery()->connected()) path = s->recovery()->path();
    });
    if (!path) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    set_rc_path(env, o, *path);
    return o;
  }
  // renewRecovery(device?): a new recovery QP in place of the old one, on the
  // device ('primary', the default) or the alternate device ('alternate': a
  // failover) (feed::Subscriber::renew_recovery); our new side.
  Napi::Value RenewRecovery(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this subscriber was closed");
    if (!recovery_local_) throw Napi::Error::New(env, "subscriber.renewRecovery: created without a recovery config");
    const std::uint8_t device = info.Length() > 0 && !info[0].IsUndefined()
                                    ? to_device_choice(env, info[0], "subscriber.renewRecovery: device")
                                    : verbs::kPrimaryDevice;
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    verbs::Result<verbs::RcPeer> local = verbs::Error{ENOENT, "the subscriber is gone"};
    h_.engine->run_on_engine([&] {
      if (feed::Subscriber* s = agent->subscriber(id); s != nullptr) local = s->renew_recovery(device);
    });
    if (!local.ok()) throw Napi::Error::New(env, "subscriber.renewRecovery: " + local.error().message);
    recovery_local_ = *local;
    return rc_peer_to_js(env, *recovery_local_);
  }
  Napi::Value Id(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), h_.id); }
  Napi::Value HasAlternateDevice(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), has_alternate_device_); }
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const feed::SubscriberStats& s = *stats_;
    Napi::Object o = Napi::Object::New(env);
    set_counters(env, o, [&](auto&& fn) { s.for_each(fn); });
    if (client_ != nullptr) {
      const feed::RecoveryClientCounters& rc = *client_;
      Napi::Object r = Napi::Object::New(env);
      set_counters(env, r, [&](auto&& fn) { rc.for_each(fn); });
      o.Set("recovery", r);
    }
    Napi::Array chans = Napi::Array::New(env, s.channels.size());
    for (std::size_t i = 0; i < s.channels.size(); ++i) {
      const feed::SubscriberChannelCounters& c = s.channels[i];
      Napi::Object co = Napi::Object::New(env);
      co.Set("id", Napi::Number::New(env, c.id));
      set_counters(env, co, [&](auto&& fn) { c.for_each(fn); });
      co.Set("latencyCount", num(env, c.latency.total()));
      Napi::Object fe = Napi::Object::New(env);
      std::uint64_t rejected = 0;
      c.frame_counters.for_each([&](std::string_view name, std::uint64_t v) {
        fe.Set(std::string(name), num(env, v));
        if (name != "accepted" && name != "heartbeats") rejected += v;
      });
      co.Set("frameCounters", fe);
      co.Set("rejectedFrames", num(env, rejected));
      chans.Set(static_cast<std::uint32_t>(i), co);
    }
    o.Set("channels", chans);
    return o;
  }
  Napi::Value LatencyCounts(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t i = info.Length() > 0 && !info[0].IsUndefined() ? to_u32(env, info[0], "subscriber.latencyCounts: channel index") : 0;
    if (i >= stats_->channels.size()) throw Napi::RangeError::New(env, "subscriber.latencyCounts: no channel at index " + std::to_string(i));
    return histogram_counts(env, stats_->channels[i].latency);
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  Handle h_;
  std::shared_ptr<feed::SubscriberStats> stats_;
  std::optional<verbs::RcPeer> recovery_local_;
  bool has_alternate_device_ = false;
  std::shared_ptr<feed::RecoveryClientCounters> client_;  // null without a recovery connection
  std::shared_ptr<feed::ConsumerLoad> load_;
};

// createSubscriber(engine, device, {channels: [{id, groupA, groupB?, holdFrames?, maxWaitUs?}],
//   maxFrameSize?, recvSlots?}, alternateDevice?): line B is received on
//   alternateDevice when given, and the recovery connection may move there.
}  // namespace

Napi::Function define_subscriber(Napi::Env env) { return SubscriberWrap::Define(env); }

Napi::Value create_subscriber(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<FeedClasses*>(info.Data());
  const Resolved r = resolve(info, *classes, "feed.createSubscriber");
  Napi::Object cfg = info[2].As<Napi::Object>();
  feed::SubscriberConfig sc;
  Napi::Array chans = channels_of(env, cfg, "feed.createSubscriber");
  for (std::uint32_t i = 0; i < chans.Length(); ++i) {
    const std::string where = "feed.createSubscriber: channels[" + std::to_string(i) + "]";
    Napi::Object c = to_object(env, chans.Get(i), where);
    feed::SubscriberChannelConfig ch;
    ch.id = static_cast<std::uint16_t>(to_u32(env, c.Get("id"), where + ".id", 0xffff));
    ch.group_a = group_of(env, c.Get("groupA"), where + ".groupA");
    if (has(c, "groupB")) ch.group_b = group_of(env, c.Get("groupB"), where + ".groupB");
    if (has(c, "holdFrames")) ch.arbiter.window_frames = to_u32(env, c.Get("holdFrames"), where + ".holdFrames", 65536);
    if (has(c, "maxWaitUs")) ch.arbiter.max_wait_ns = std::uint64_t{to_u32(env, c.Get("maxWaitUs"), where + ".maxWaitUs", 10'000'000)} * 1000;
    sc.channels.push_back(ch);
  }
  if (has(cfg, "maxFrameSize")) sc.max_frame_bytes = to_limit(env, cfg.Get("maxFrameSize"), "feed.createSubscriber: maxFrameSize", feed::limits::max_frame_bytes);
  if (has(cfg, "recvSlots")) sc.recv_slots = to_limit(env, cfg.Get("recvSlots"), "feed.createSubscriber: recvSlots", feed::limits::recv_slots);
  if (has(cfg, "recovery")) {
    const std::string where = "feed.createSubscriber: recovery";
    Napi::Object ro = to_object(env, cfg.Get("recovery"), where);
    feed::SubscriberRecoveryConfig& rc = sc.recovery;
    rc.enabled = true;
    if (has(ro, "replyBytes")) rc.reply_bytes = to_u32(env, ro.Get("replyBytes"), where + ".replyBytes", 1u << 24);
    if (has(ro, "recvSlots")) rc.recv_slots = to_u32(env, ro.Get("recvSlots"), where + ".recvSlots", 1024);
    if (has(ro, "maxRequestMessages")) rc.max_request_messages = to_u32(env, ro.Get("maxRequestMessages"), where + ".maxRequestMessages");
    if (has(ro, "requestTimeoutMs")) rc.request_timeout_ns = std::uint64_t{to_u32(env, ro.Get("requestTimeoutMs"), where + ".requestTimeoutMs", 3'600'000)} * 1'000'000;
    if (has(ro, "requestAttempts")) rc.request_attempts = to_u32(env, ro.Get("requestAttempts"), where + ".requestAttempts", 1, 100);
    if (has(ro, "reportIntervalMs")) rc.report_interval_ns = std::uint64_t{to_u32(env, ro.Get("reportIntervalMs"), where + ".reportIntervalMs", 3'600'000)} * 1'000'000;
    if (has(ro, "bufferFrames")) rc.buffer_frames = to_u32(env, ro.Get("bufferFrames"), where + ".bufferFrames", 1u << 22);
  }
  if (std::string e = feed::validate(sc); !e.empty()) throw Napi::TypeError::New(env, "feed.createSubscriber: " + e);
  // A frame fromEngine can never hold would be a hole asked for again until recovery gives up (subscriber_channel.h).
  const engine::RingMemory ring = r.engine->from_engine_ring();
  const engine::RingView delivery = ring.view;
  const std::int64_t largest = delivery.max_record_length() - engine::ring_layout::kHeaderLength;
  if (ring && feed::records::kFrameRecordHeaderBytes + static_cast<std::int64_t>(sc.max_frame_bytes) > largest) {
    throw Napi::RangeError::New(env, "feed.createSubscriber: maxFrameSize " + std::to_string(sc.max_frame_bytes) +
                                         " does not fit the engine's fromEngine records (at most " +
                                         std::to_string(largest - feed::records::kFrameRecordHeaderBytes) +
                                         " frame bytes with fromEngineCapacity " + std::to_string(delivery.capacity()) +
                                         "): raise fromEngineCapacity or lower maxFrameSize");
  }

  verbs::Result<std::uint32_t> id = verbs::Error{};
  std::shared_ptr<feed::SubscriberStats> stats;
  std::optional<verbs::RcPeer> recovery_local;
  std::shared_ptr<feed::RecoveryClientCounters> client;
  std::shared_ptr<feed::ConsumerLoad> load;
  run_on_engine(env, *r.engine, "feed.createSubscriber", [&] {
    id = r.agent->add_subscriber(*r.device, sc, r.alternate);
    if (!id.ok()) return;
    feed::Subscriber* s = r.agent->subscriber(*id);
    stats = s->stats();
    load = s->consumer_load();
    if (feed::RecoveryClient* rc = s->recovery()) {
      recovery_local = rc->local();
      client = rc->shared_counters();
    }
  });
  if (!id.ok()) throw verbs_error(env, id.error());
  Napi::Object js = classes->subscriber.New({});
  SubscriberWrap::Unwrap(js)->init(info, r, *id, std::move(stats), recovery_local, client, load);
  return js;
}

}  // namespace qpgate::addon::feed_wrap
