#include "feed_wrap.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine_wrap.h"
#include "feed/feed_agent.h"
#include "feed/feed_records.h"
#include "js_number.h"
#include "verbs/gid.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"
#include "verbs_convert.h"

namespace qpgate::addon {
namespace {

using EnginePtr = std::shared_ptr<engine::Engine>;

std::uint32_t group_of(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsString()) throw Napi::TypeError::New(env, where + " must be an IPv4 multicast address string like '239.77.0.1'");
  const std::string text = v.As<Napi::String>().Utf8Value();
  const auto ip = verbs::ipv4_parse(text);
  if (!ip || !verbs::ipv4_is_multicast(*ip)) {
    throw Napi::TypeError::New(env, where + " must be an IPv4 multicast address (224.0.0.0/4), got '" + text + "'");
  }
  return *ip;
}

bool has(const Napi::Object& o, const char* key) { return o.Has(key) && !o.Get(key).IsUndefined(); }

Napi::Value histogram_counts(Napi::Env env, const metrics::LatencyHistogram& h) {
  constexpr std::size_t n = metrics::LatencyHistogram::kCountsLength;
  Napi::Float64Array out = Napi::Float64Array::New(env, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(h.count_at_index(i));
  return out;
}

// {qpn, psn, gid, mtu} of the control-plane handshake (sessions.md).
verbs::RcPeer rc_peer_of(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, where + " must be an object {qpn, psn, gid, mtu}");
  Napi::Object o = v.As<Napi::Object>();
  verbs::RcPeer p;
  p.qpn = to_u32(env, o.Get("qpn"), where + ".qpn", 0xffffff);
  p.psn = to_u32(env, o.Get("psn"), where + ".psn", 0xffffff);
  p.gid = to_gid(env, o.Get("gid"), where + ".gid");
  const std::uint32_t mtu = to_u32(env, o.Get("mtu"), where + ".mtu", 4096);
  if (!verbs::mtu_from_bytes(mtu, &p.mtu)) throw Napi::RangeError::New(env, where + ".mtu must be 256, 512, 1024, 2048 or 4096");
  return p;
}

Napi::Object rc_peer_to_js(Napi::Env env, const verbs::RcPeer& p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("qpn", Napi::Number::New(env, p.qpn));
  o.Set("psn", Napi::Number::New(env, p.psn));
  o.Set("gid", Napi::String::New(env, p.gid.to_string()));
  o.Set("mtu", Napi::Number::New(env, verbs::mtu_to_bytes(p.mtu)));
  return o;
}

Napi::Object recovery_session_to_js(Napi::Env env, const feed::RecoverySessionInfo& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("session", Napi::Number::New(env, s.session));
  o.Set("publisher", Napi::Number::New(env, s.publisher));
  o.Set("qpn", Napi::Number::New(env, s.qpn));
  o.Set("state", Napi::String::New(env, std::string(verbs::qp_state_name(s.state))));
  Napi::Array chans = Napi::Array::New(env, s.channels.size());
  for (std::size_t i = 0; i < s.channels.size(); ++i) chans.Set(static_cast<std::uint32_t>(i), Napi::Number::New(env, s.channels[i]));
  o.Set("channels", chans);
  const feed::RecoverySessionCounters& c = *s.counters;
  o.Set("requests", num(env, c.requests.get()));
  o.Set("retransmitRequests", num(env, c.retransmit_requests.get()));
  o.Set("snapshotRequests", num(env, c.snapshot_requests.get()));
  o.Set("replies", num(env, c.replies.get()));
  o.Set("framesSent", num(env, c.frames_sent.get()));
  o.Set("bytesSent", num(env, c.bytes_sent.get()));
  o.Set("snapshotsSent", num(env, c.snapshots_sent.get()));
  o.Set("errors", num(env, c.errors.get()));
  o.Set("silenced", Napi::Boolean::New(env, c.silenced.get() != 0));
  Napi::Object by = Napi::Object::New(env);
  for (std::size_t i = 1; i < feed::recovery::kStatusCount; ++i) {
    by.Set(std::string(feed::recovery::status_name(static_cast<feed::recovery::Status>(i))), num(env, c.by_status[i].get()));
  }
  o.Set("byStatus", by);
  o.Set("throttled", num(env, c.by_status[static_cast<std::size_t>(feed::recovery::Status::kThrottled)].get()));
  o.Set("rangeGone", num(env, c.by_status[static_cast<std::size_t>(feed::recovery::Status::kRangeGone)].get()));
  Napi::Object rep = Napi::Object::New(env);
  rep.Set("reports", num(env, c.reports.get()));
  rep.Set("lastReportNs", num(env, c.last_report_ns.get()));
  rep.Set("queued", num(env, c.report_queued.get()));
  rep.Set("dropped", num(env, c.report_dropped.get()));
  rep.Set("conflated", num(env, c.report_conflated.get()));
  rep.Set("gaps", num(env, c.report_gaps.get()));
  rep.Set("unrecoverable", num(env, c.report_unrecoverable.get()));
  rep.Set("ringFullDrops", num(env, c.report_ring_full_drops.get()));
  rep.Set("otherSessionFrames", num(env, c.report_other_session_frames.get()));
  o.Set("subscriber", rep);
  return o;
}

// limits: {maxMessages?, messagesPerSecond?, burstMessages?, replyBytes?, sendSlots?, recvSlots?}
feed::RecoveryLimits limits_of(Napi::Env env, Napi::Value v, const std::string& where) {
  feed::RecoveryLimits l;
  if (v.IsUndefined()) return l;
  if (!v.IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
  Napi::Object o = v.As<Napi::Object>();
  auto opt = [&](const char* key, auto& dst, std::uint32_t max) {
    if (o.Has(key) && !o.Get(key).IsUndefined()) dst = to_u32(env, o.Get(key), where + "." + key, max);
  };
  opt("maxMessages", l.max_messages, 1u << 20);
  opt("messagesPerSecond", l.messages_per_second, 0xffffffffu);
  opt("burstMessages", l.burst_messages, 0xffffffffu);
  opt("replyBytes", l.reply_bytes, 1u << 24);
  opt("sendSlots", l.send_slots, 1024);
  opt("recvSlots", l.recv_slots, 1024);
  if (o.Has("silenceTimeoutMs") && !o.Get("silenceTimeoutMs").IsUndefined()) {
    l.silence_timeout_ns = std::uint64_t{to_u32(env, o.Get("silenceTimeoutMs"), where + ".silenceTimeoutMs", 3'600'000)} * 1'000'000;
  }
  if (std::string e = feed::validate(l); !e.empty()) throw Napi::RangeError::New(env, where + ": " + e);
  return l;
}

// What both handles share: the engine, its feed agent, the JS objects kept alive.
struct Handle {
  EnginePtr engine;
  feed::FeedAgent* agent = nullptr;  // owned by the engine (its command agent)
  std::uint32_t id = 0;
  Napi::ObjectReference engine_js;
  Napi::ObjectReference device_js;

  void hold(const Napi::CallbackInfo& info) {
    engine_js = Napi::Persistent(info[0].As<Napi::Object>());
    device_js = Napi::Persistent(info[1].As<Napi::Object>());
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
};

Resolved resolve(const Napi::CallbackInfo& info, const FeedClasses& classes, const char* what) {
  Napi::Env env = info.Env();
  EngineWrap* ew = EngineWrap::FromValue(info[0]);
  if (ew == nullptr) throw Napi::TypeError::New(env, std::string(what) + ": the first argument must be an Engine from this addon");
  Resolved r;
  r.engine = ew->engine();
  r.device = device_of(info[1], *classes.verbs);
  if (r.device == nullptr) {
    throw Napi::TypeError::New(env, std::string(what) + ": the second argument must be an open Device from verbs.openDevice()");
  }
  if (!info[2].IsObject()) throw Napi::TypeError::New(env, std::string(what) + ": config must be an object {channels: [...]}");
  if (!r.engine->running()) throw Napi::Error::New(env, std::string(what) + ": start the engine first");
  r.agent = ew->agents().feed;
  return r;
}

Napi::Array channels_of(Napi::Env env, const Napi::Object& config, const char* what) {
  Napi::Value v = config.Get("channels");
  if (!v.IsArray() || v.As<Napi::Array>().Length() == 0) {
    throw Napi::TypeError::New(env, std::string(what) + ": config.channels must be a non-empty array");
  }
  return v.As<Napi::Array>();
}

// A refused reservation: ENOMEM (the host cannot give it) as an Error with
// code ENOMEM, anything else (a config reserve() refused) as a TypeError.
Napi::Error reservation_error(Napi::Env env, const std::string& what, const verbs::Error& e) {
  if (e.code != ENOMEM) return Napi::TypeError::New(env, what + ": " + e.message);
  Napi::Error err = Napi::Error::New(env, e.message);  // "feed publisher: ..." says what
  err.Set("code", Napi::String::New(env, "ENOMEM"));
  return err;
}

// ---------------------------------------------------------------- publisher
class PublisherWrap : public Napi::ObjectWrap<PublisherWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FeedPublisher",
                       {InstanceAccessor<&PublisherWrap::Id>("id"), InstanceAccessor<&PublisherWrap::Session>("session"),
                        InstanceMethod<&PublisherWrap::Stats>("stats"),
                        InstanceMethod<&PublisherWrap::LatencyCounts>("latencyCounts"),
                        InstanceMethod<&PublisherWrap::SetLineMask>("setLineMask"),
                        InstanceMethod<&PublisherWrap::Qp>("qp"),
                        InstanceMethod<&PublisherWrap::OpenRecoverySession>("openRecoverySession"),
                        InstanceMethod<&PublisherWrap::CloseRecoverySession>("closeRecoverySession"),
                        InstanceMethod<&PublisherWrap::RecoverySessions>("recoverySessions"),
                        InstanceMethod<&PublisherWrap::Close>("close")});
  }
  explicit PublisherWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PublisherWrap>(info) {}
  ~PublisherWrap() override {
    try {
      release();
    } catch (...) {
      // A finalizer must not throw; the engine counted the failed task.
    }
  }

  void init(const Napi::CallbackInfo& info, const Resolved& r, std::uint32_t id, std::shared_ptr<feed::PublisherStats> stats) {
    h_.bind(info, r.engine, r.agent, id);
    device_ = r.device;
    stats_ = std::move(stats);
  }

 private:
  // Closes it on the engine thread; its rings and snapshot stores come back
  // and are freed here, off the engine thread. Idempotent.
  void release() {
    if (h_.id == 0) return;
    const std::uint32_t id = h_.id;
    h_.id = 0;
    feed::FeedAgent* agent = h_.agent;
    feed::PublisherReservation released;
    h_.engine->run_on_engine([&] {
      // Its recovery sessions go with it (their QPs to ERR).
      for (const auto& s : agent->recovery_sessions()) {
        if (s.publisher == id) agent->close_recovery_session(s.session);
      }
      (void)agent->remove_publisher(id, released);
    });
  }
  std::uint32_t live_id(Napi::Env env) const {
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this publisher was closed");
    return h_.id;
  }
  // openRecoverySession({session, channels, remote: {qpn, psn, gid, mtu}, limits?}) → {qpn, psn, gid, mtu, regions: []}
  Napi::Value OpenRecoverySession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string where = "publisher.openRecoverySession";
    if (!info[0].IsObject()) throw Napi::TypeError::New(env, where + ": options must be an object {session, channels, remote, limits?}");
    Napi::Object o = info[0].As<Napi::Object>();
    feed::RecoverySessionConfig c;
    c.publisher = live_id(env);
    c.session = to_u32(env, o.Get("session"), where + ": session");
    if (c.session == 0) throw Napi::RangeError::New(env, where + ": session must be > 0");
    if (!o.Get("channels").IsArray()) throw Napi::TypeError::New(env, where + ": channels must be an array of channel ids");
    Napi::Array chans = o.Get("channels").As<Napi::Array>();
    for (std::uint32_t i = 0; i < chans.Length(); ++i) {
      c.channels.push_back(static_cast<std::uint16_t>(to_u32(env, chans.Get(i), where + ": channels[" + std::to_string(i) + "]", 0xffff)));
    }
    c.remote = rc_peer_of(env, o.Get("remote"), where + ": remote");
    c.limits = limits_of(env, o.Get("limits"), where + ": limits");
    verbs::Result<verbs::RcPeer> local = verbs::Error{};
    feed::FeedAgent* agent = h_.agent;
    verbs::Device* device = device_;
    h_.engine->run_on_engine([&] { local = agent->open_recovery_session(*device, c); });
    if (!local.ok()) throw verbs_error(env, local.error());
    Napi::Object out = rc_peer_to_js(env, *local);
    out.Set("regions", Napi::Array::New(env, 0));
    return out;
  }
  Napi::Value CloseRecoverySession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t session = to_u32(env, info[0], "publisher.closeRecoverySession: session");
    const std::uint32_t id = live_id(env);
    bool closed = false;
    feed::FeedAgent* agent = h_.agent;
    h_.engine->run_on_engine([&] {
      for (const auto& s : agent->recovery_sessions()) {
        if (s.session == session && s.publisher == id) closed = agent->close_recovery_session(session);
      }
    });
    return Napi::Boolean::New(env, closed);
  }
  Napi::Value RecoverySessions(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t id = live_id(env);
    std::vector<feed::RecoverySessionInfo> all;
    feed::FeedAgent* agent = h_.agent;
    h_.engine->run_on_engine([&] { all = agent->recovery_sessions(); });
    Napi::Array out = Napi::Array::New(env);
    std::uint32_t n = 0;
    for (const auto& s : all) {
      if (s.publisher == id) out.Set(n++, recovery_session_to_js(env, s));
    }
    return out;
  }
  Napi::Value Id(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), h_.id); }
  Napi::Value Session(const Napi::CallbackInfo& info) { return num(info.Env(), stats_->session.get()); }
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const feed::PublisherStats& s = *stats_;
    Napi::Object o = Napi::Object::New(env);
    o.Set("session", num(env, s.session.get()));
    o.Set("reservedBytes", num(env, s.reserved_bytes.get()));
    o.Set("records", num(env, s.records.get()));
    o.Set("rejectedRecords", num(env, s.rejected_records.get()));
    o.Set("retries", num(env, s.retries.get()));
    o.Set("postErrors", num(env, s.post_errors.get()));
    o.Set("sendErrors", num(env, s.send_errors.get()));
    o.Set("suppressed", num(env, s.suppressed.get()));
    o.Set("publishLatencyCount", num(env, s.publish_latency.total()));
    Napi::Array chans = Napi::Array::New(env, s.channels.size());
    for (std::size_t i = 0; i < s.channels.size(); ++i) {
      const feed::PublisherChannelCounters& c = s.channels[i];
      Napi::Object co = Napi::Object::New(env);
      co.Set("id", Napi::Number::New(env, c.id));
      co.Set("frames", num(env, c.frames.get()));
      co.Set("messages", num(env, c.messages.get()));
      co.Set("bytes", num(env, c.bytes.get()));
      co.Set("heartbeats", num(env, c.heartbeats.get()));
      co.Set("nextSeq", num(env, c.next_seq.get()));
      co.Set("ringFrames", num(env, c.ring_frames.get()));
      co.Set("snapshotSlots", num(env, c.snapshot_slots.get()));
      co.Set("reservedBytes", num(env, c.reserved_bytes.get()));
      chans.Set(static_cast<std::uint32_t>(i), co);
    }
    o.Set("channels", chans);
    return o;
  }
  Napi::Value LatencyCounts(const Napi::CallbackInfo& info) { return histogram_counts(info.Env(), stats_->publish_latency); }
  Napi::Value SetLineMask(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t mask = to_u32(env, info[0], "publisher.setLineMask: mask", 3);
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this publisher was closed");
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    h_.engine->run_on_engine([&] {
      if (feed::Publisher* p = agent->publisher(id)) p->set_line_mask(static_cast<std::uint8_t>(mask));
    });
    return env.Undefined();
  }
  // qp(): the publisher's UD QP as QueuePair.query() describes one, with its
  // qpNum and the soft transport's counters. The QP is made natively, so the
  // verbs bindings cannot list it; /v1/qps reads it through here. Copied on
  // the engine thread: the publisher may go away right after.
  Napi::Value Qp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this publisher was closed");
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    bool found = false;
    verbs::Result<verbs::QpAttr> attr = verbs::Error{};
    verbs::QpInitAttr init;
    std::uint32_t qpn = 0;
    std::optional<std::pair<std::uint32_t, std::uint32_t>> wrs;  // send outstanding, receive posted (soft)
    std::vector<std::pair<std::string_view, std::uint64_t>> counters;
    h_.engine->run_on_engine([&] {
      const feed::Publisher* p = agent->publisher(id);
      if (p == nullptr) return;
      found = true;
      const verbs::QueuePair& qp = p->qp();
      attr = qp.query();
      init = qp.init_attr();
      qpn = qp.qp_num();
      if (const verbs::soft::SoftQp* sqp = verbs::soft::as_soft_qp(qp)) {
        wrs.emplace(sqp->send_wrs_outstanding(), sqp->recv_wrs_posted());
        sqp->counters().for_each([&](std::string_view name, std::uint64_t v) { counters.emplace_back(name, v); });
      }
    });
    if (!found) throw Napi::Error::New(env, "qpgate: this publisher was closed");
    if (!attr.ok()) throw verbs_error(env, attr.error());
    Napi::Object o = qp_attr_to_js(env, *attr, init);
    o.Set("qpNum", Napi::Number::New(env, qpn));
    if (wrs) {
      o.Set("sendWrsOutstanding", Napi::Number::New(env, wrs->first));
      o.Set("recvWrsPosted", Napi::Number::New(env, wrs->second));
    }
    Napi::Object c = Napi::Object::New(env);
    for (const auto& [name, v] : counters) c.Set(std::string(name), num(env, v));
    o.Set("counters", c);
    return o;
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  Handle h_;
  verbs::Device* device_ = nullptr;  // kept alive by h_.device_js
  std::shared_ptr<feed::PublisherStats> stats_;
};

// createPublisher(engine, device, {channels: [{id, groupA, groupB?, frameSize?, heartbeatMs?,
//   ring?: {frames?, bytes?}, snapshotSlots?}], sendSlots?, hopLimit?})
Napi::Value CreatePublisher(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<FeedClasses*>(info.Data());
  const Resolved r = resolve(info, *classes, "feed.createPublisher");
  Napi::Object cfg = info[2].As<Napi::Object>();
  feed::PublisherConfig pc;
  Napi::Array chans = channels_of(env, cfg, "feed.createPublisher");
  for (std::uint32_t i = 0; i < chans.Length(); ++i) {
    const std::string where = "feed.createPublisher: channels[" + std::to_string(i) + "]";
    if (!chans.Get(i).IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
    Napi::Object c = chans.Get(i).As<Napi::Object>();
    feed::PublisherChannelConfig ch;
    ch.id = static_cast<std::uint16_t>(to_u32(env, c.Get("id"), where + ".id", 0xffff));
    ch.group_a = group_of(env, c.Get("groupA"), where + ".groupA");
    if (has(c, "groupB")) ch.group_b = group_of(env, c.Get("groupB"), where + ".groupB");
    if (has(c, "frameSize")) ch.frame_bytes = to_u32(env, c.Get("frameSize"), where + ".frameSize", 4096);
    if (has(c, "heartbeatMs")) ch.heartbeat_ns = std::uint64_t{to_u32(env, c.Get("heartbeatMs"), where + ".heartbeatMs", 3'600'000)} * 1'000'000;
    if (has(c, "ring")) {
      if (!c.Get("ring").IsObject()) throw Napi::TypeError::New(env, where + ".ring must be an object {frames, bytes}");
      Napi::Object ring = c.Get("ring").As<Napi::Object>();
      if (has(ring, "frames")) ch.ring.max_frames = to_u32(env, ring.Get("frames"), where + ".ring.frames", 1u << 24);
      if (has(ring, "bytes")) ch.ring.max_bytes = to_u32(env, ring.Get("bytes"), where + ".ring.bytes", 1u << 31);
    }
    if (has(c, "snapshotSlots")) ch.snapshot.slot_count = to_u32(env, c.Get("snapshotSlots"), where + ".snapshotSlots", 1u << 22);
    pc.channels.push_back(ch);
  }
  if (has(cfg, "sendSlots")) pc.send_slots = to_u32(env, cfg.Get("sendSlots"), "feed.createPublisher: sendSlots", 16384);
  if (has(cfg, "hopLimit")) pc.hop_limit = static_cast<std::uint8_t>(to_u32(env, cfg.Get("hopLimit"), "feed.createPublisher: hopLimit", 255));
  if (std::string e = feed::validate(pc); !e.empty()) throw Napi::TypeError::New(env, "feed.createPublisher: " + e);

  // Allocated and touched here, on the JS thread: the engine thread only takes the pointers.
  auto memory = feed::reserve(pc, r.engine->placement().plan.numa_node);
  if (!memory.ok()) throw reservation_error(env, "feed.createPublisher", memory.error());
  verbs::Result<std::uint32_t> id = verbs::Error{};
  std::shared_ptr<feed::PublisherStats> stats;
  run_on_engine(env, *r.engine, "feed.createPublisher", [&] {
    id = r.agent->add_publisher(*r.device, pc, std::move(memory).value());
    if (id.ok()) stats = r.agent->publisher(*id)->stats();
  });
  if (!id.ok()) throw verbs_error(env, id.error());
  Napi::Object js = classes->publisher.New({});
  PublisherWrap::Unwrap(js)->init(info, r, *id, std::move(stats));
  return js;
}

// ---------------------------------------------------------------- subscriber
class SubscriberWrap : public Napi::ObjectWrap<SubscriberWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FeedSubscriber",
                       {InstanceAccessor<&SubscriberWrap::Id>("id"), InstanceMethod<&SubscriberWrap::Stats>("stats"),
                        InstanceMethod<&SubscriberWrap::LatencyCounts>("latencyCounts"),
                        InstanceMethod<&SubscriberWrap::RecoveryLocal>("recoveryLocal"),
                        InstanceMethod<&SubscriberWrap::ConnectRecovery>("connectRecovery"),
                        InstanceMethod<&SubscriberWrap::RenewRecovery>("renewRecovery"),
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
    if (!info[0].IsObject()) throw Napi::TypeError::New(env, "subscriber.reportConsumer: expects {queued, dropped, conflated}");
    Napi::Object o = info[0].As<Napi::Object>();
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
  // renewRecovery(): a new recovery QP in place of the old one (feed::Subscriber::renew_recovery); our new side.
  Napi::Value RenewRecovery(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this subscriber was closed");
    if (!recovery_local_) throw Napi::Error::New(env, "subscriber.renewRecovery: created without a recovery config");
    const std::uint32_t id = h_.id;
    feed::FeedAgent* agent = h_.agent;
    verbs::Result<verbs::RcPeer> local = verbs::Error{ENOENT, "the subscriber is gone"};
    h_.engine->run_on_engine([&] {
      if (feed::Subscriber* s = agent->subscriber(id); s != nullptr) local = s->renew_recovery();
    });
    if (!local.ok()) throw Napi::Error::New(env, "subscriber.renewRecovery: " + local.error().message);
    recovery_local_ = *local;
    return rc_peer_to_js(env, *recovery_local_);
  }
  Napi::Value Id(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), h_.id); }
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const feed::SubscriberStats& s = *stats_;
    Napi::Object o = Napi::Object::New(env);
    o.Set("received", num(env, s.received.get()));
    o.Set("recvErrors", num(env, s.recv_errors.get()));
    o.Set("unknownGroup", num(env, s.unknown_group.get()));
    o.Set("snapshotFrames", num(env, s.snapshot_frames.get()));
    o.Set("ringFullDrops", num(env, s.ring_full_drops.get()));
    if (client_ != nullptr) {
      const feed::RecoveryClientCounters& rc = *client_;
      Napi::Object r = Napi::Object::New(env);
      r.Set("requests", num(env, rc.requests.get()));
      r.Set("replies", num(env, rc.replies.get()));
      r.Set("malformedReplies", num(env, rc.malformed_replies.get()));
      r.Set("staleReplies", num(env, rc.stale_replies.get()));
      r.Set("sendFailures", num(env, rc.send_failures.get()));
      r.Set("errors", num(env, rc.errors.get()));
      o.Set("recovery", r);
    }
    Napi::Array chans = Napi::Array::New(env, s.channels.size());
    for (std::size_t i = 0; i < s.channels.size(); ++i) {
      const feed::SubscriberChannelCounters& c = s.channels[i];
      Napi::Object co = Napi::Object::New(env);
      co.Set("id", Napi::Number::New(env, c.id));
      co.Set("frames", num(env, c.frames.get()));
      co.Set("messages", num(env, c.messages.get()));
      co.Set("duplicates", num(env, c.duplicates.get()));
      co.Set("gaps", num(env, c.gaps.get()));
      co.Set("unrecoverable", num(env, c.unrecoverable.get()));
      co.Set("recovered", num(env, c.recovered.get()));
      co.Set("snapshots", num(env, c.snapshots.get()));
      co.Set("snapshotMessages", num(env, c.snapshot_messages.get()));
      co.Set("recoveryRequests", num(env, c.recovery_requests.get()));
      co.Set("throttled", num(env, c.throttled.get()));
      co.Set("rangeGone", num(env, c.range_gone.get()));
      co.Set("recoveryFailures", num(env, c.recovery_failures.get()));
      co.Set("bufferOverflows", num(env, c.buffer_overflows.get()));
      co.Set("held", num(env, c.held.get()));
      co.Set("sessionChanges", num(env, c.session_changes.get()));
      co.Set("session", num(env, c.session.get()));
      co.Set("expected", num(env, c.expected.get()));
      co.Set("heartbeats", num(env, c.heartbeats.get()));
      co.Set("otherSessionFrames", num(env, c.other_session_frames.get()));
      co.Set("lineAFrames", num(env, c.line_frames[0].get()));
      co.Set("lineBFrames", num(env, c.line_frames[1].get()));
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
  std::shared_ptr<feed::RecoveryClientCounters> client_;  // null without a recovery connection
  std::shared_ptr<feed::ConsumerLoad> load_;
};

// createSubscriber(engine, device, {channels: [{id, groupA, groupB?, holdFrames?, maxWaitUs?}],
//   maxFrameSize?, recvSlots?})
Napi::Value CreateSubscriber(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<FeedClasses*>(info.Data());
  const Resolved r = resolve(info, *classes, "feed.createSubscriber");
  Napi::Object cfg = info[2].As<Napi::Object>();
  feed::SubscriberConfig sc;
  Napi::Array chans = channels_of(env, cfg, "feed.createSubscriber");
  for (std::uint32_t i = 0; i < chans.Length(); ++i) {
    const std::string where = "feed.createSubscriber: channels[" + std::to_string(i) + "]";
    if (!chans.Get(i).IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
    Napi::Object c = chans.Get(i).As<Napi::Object>();
    feed::SubscriberChannelConfig ch;
    ch.id = static_cast<std::uint16_t>(to_u32(env, c.Get("id"), where + ".id", 0xffff));
    ch.group_a = group_of(env, c.Get("groupA"), where + ".groupA");
    if (has(c, "groupB")) ch.group_b = group_of(env, c.Get("groupB"), where + ".groupB");
    if (has(c, "holdFrames")) ch.arbiter.window_frames = to_u32(env, c.Get("holdFrames"), where + ".holdFrames", 65536);
    if (has(c, "maxWaitUs")) ch.arbiter.max_wait_ns = std::uint64_t{to_u32(env, c.Get("maxWaitUs"), where + ".maxWaitUs", 10'000'000)} * 1000;
    sc.channels.push_back(ch);
  }
  if (has(cfg, "maxFrameSize")) sc.max_frame_bytes = to_u32(env, cfg.Get("maxFrameSize"), "feed.createSubscriber: maxFrameSize", 4096);
  if (has(cfg, "recvSlots")) sc.recv_slots = to_u32(env, cfg.Get("recvSlots"), "feed.createSubscriber: recvSlots", 16384);
  if (has(cfg, "recovery")) {
    const std::string where = "feed.createSubscriber: recovery";
    if (!cfg.Get("recovery").IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
    Napi::Object ro = cfg.Get("recovery").As<Napi::Object>();
    feed::SubscriberRecoveryConfig& rc = sc.recovery;
    rc.enabled = true;
    if (has(ro, "replyBytes")) rc.reply_bytes = to_u32(env, ro.Get("replyBytes"), where + ".replyBytes", 1u << 24);
    if (has(ro, "recvSlots")) rc.recv_slots = to_u32(env, ro.Get("recvSlots"), where + ".recvSlots", 1024);
    if (has(ro, "maxRequestMessages")) rc.max_request_messages = to_u32(env, ro.Get("maxRequestMessages"), where + ".maxRequestMessages");
    if (has(ro, "requestTimeoutMs")) rc.request_timeout_ns = std::uint64_t{to_u32(env, ro.Get("requestTimeoutMs"), where + ".requestTimeoutMs", 3'600'000)} * 1'000'000;
    if (has(ro, "reportIntervalMs")) rc.report_interval_ns = std::uint64_t{to_u32(env, ro.Get("reportIntervalMs"), where + ".reportIntervalMs", 3'600'000)} * 1'000'000;
    if (has(ro, "bufferFrames")) rc.buffer_frames = to_u32(env, ro.Get("bufferFrames"), where + ".bufferFrames", 1u << 22);
  }
  if (std::string e = feed::validate(sc); !e.empty()) throw Napi::TypeError::New(env, "feed.createSubscriber: " + e);

  verbs::Result<std::uint32_t> id = verbs::Error{};
  std::shared_ptr<feed::SubscriberStats> stats;
  std::optional<verbs::RcPeer> recovery_local;
  std::shared_ptr<feed::RecoveryClientCounters> client;
  std::shared_ptr<feed::ConsumerLoad> load;
  run_on_engine(env, *r.engine, "feed.createSubscriber", [&] {
    id = r.agent->add_subscriber(*r.device, sc);
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

Napi::Object record_layout(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("publishHeaderBytes", Napi::Number::New(env, feed::records::kPublishHeaderBytes));
  o.Set("frameRecordHeaderBytes", Napi::Number::New(env, feed::records::kFrameRecordHeaderBytes));
  o.Set("gapRecordBytes", Napi::Number::New(env, feed::records::kGapRecordBytes));
  o.Set("sessionRecordBytes", Napi::Number::New(env, feed::records::kSessionRecordBytes));
  o.Set("latencyCountsLength", Napi::Number::New(env, static_cast<double>(metrics::LatencyHistogram::kCountsLength)));
  return o;
}

}  // namespace

void init_feed(Napi::Env env, Napi::Object exports, FeedClasses* classes) {
  Napi::Function publisher = PublisherWrap::Define(env);
  Napi::Function subscriber = SubscriberWrap::Define(env);
  classes->publisher = Napi::Persistent(publisher);
  classes->subscriber = Napi::Persistent(subscriber);
  Napi::Object feed = Napi::Object::New(env);
  feed.Set("createPublisher", Napi::Function::New(env, CreatePublisher, "createPublisher", classes));
  feed.Set("createSubscriber", Napi::Function::New(env, CreateSubscriber, "createSubscriber", classes));
  feed.Set("recordLayout", record_layout(env));
  feed.Set("FeedPublisher", publisher);
  feed.Set("FeedSubscriber", subscriber);
  exports.Set("feed", feed);
}

}  // namespace qpgate::addon
