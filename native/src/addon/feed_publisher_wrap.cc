// feed.createPublisher and the FeedPublisher handle it returns (feed_wrap.h).
#include "feed_wrap_support.h"

#include <array>
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
    devices_ = {r.device, r.alternate};
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
  // openRecoverySession({session, channels, remote: {qpn, psn, gid, mtu}, limits?, device?}) → {qpn, psn, gid, mtu, regions: []}
  // device 'alternate': on the publisher's alternate device (a subscriber failing over, docs/protocol.md 1.11).
  Napi::Value OpenRecoverySession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string where = "publisher.openRecoverySession";
    Napi::Object o = to_object(env, info[0], where + ": options", "an object {session, channels, remote, limits?}");
    feed::RecoverySessionConfig c;
    c.publisher = live_id(env);
    c.session = to_u32(env, o.Get("session"), where + ": session", 1, 0xffffffffu);
    Napi::Array chans = to_array(env, o.Get("channels"), where + ": channels", "an array of channel ids");
    for (std::uint32_t i = 0; i < chans.Length(); ++i) {
      c.channels.push_back(static_cast<std::uint16_t>(to_u32(env, chans.Get(i), where + ": channels[" + std::to_string(i) + "]", 0xffff)));
    }
    c.remote = rc_peer_of(env, o.Get("remote"), where + ": remote");
    c.limits = limits_of(env, o.Get("limits"), where + ": limits");
    if (has(o, "device")) c.device = to_device_choice(env, o.Get("device"), where + ": device");
    verbs::Device* device = devices_[c.device];
    if (device == nullptr) {
      throw Napi::Error::New(env, where + ": device: this publisher has no alternate device (createPublisher's alternateDevice)");
    }
    verbs::Result<verbs::RcPeer> local = verbs::Error{};
    feed::FeedAgent* agent = h_.agent;
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
    set_counters(env, o, [&](auto&& fn) { s.for_each(fn); });
    o.Set("publishLatencyCount", num(env, s.publish_latency.total()));
    Napi::Array chans = Napi::Array::New(env, s.channels.size());
    for (std::size_t i = 0; i < s.channels.size(); ++i) {
      const feed::PublisherChannelCounters& c = s.channels[i];
      Napi::Object co = Napi::Object::New(env);
      co.Set("id", Napi::Number::New(env, c.id));
      set_counters(env, co, [&](auto&& fn) { c.for_each(fn); });
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
  // qp(device?): the publisher's UD QP as QueuePair.query() describes one,
  // with its qpNum and the soft transport's counters; 'alternate': line B's
  // on the alternate device (null without one). The QP is made natively, so
  // the verbs bindings cannot list it; /v1/qps reads it through here. Copied
  // on the engine thread: the publisher may go away right after.
  Napi::Value Qp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (h_.id == 0) throw Napi::Error::New(env, "qpgate: this publisher was closed");
    const bool alternate = info.Length() > 0 && !info[0].IsUndefined() &&
                           to_device_choice(env, info[0], "publisher.qp: device") == verbs::kAlternateDevice;
    if (alternate && devices_[verbs::kAlternateDevice] == nullptr) return env.Null();
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
      const verbs::QueuePair* chosen = p == nullptr ? nullptr : alternate ? p->alternate_qp() : &p->qp();
      if (chosen == nullptr) return;
      found = true;
      const verbs::QueuePair& qp = *chosen;
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
  std::array<verbs::Device*, 2> devices_{};  // [kPrimaryDevice], [kAlternateDevice]: kept alive by h_
  std::shared_ptr<feed::PublisherStats> stats_;
};

// createPublisher(engine, device, {channels: [{id, groupA, groupB?, frameSize?, heartbeatMs?,
//   ring?: {frames?, bytes?}, snapshotSlots?}], sendSlots?, hopLimit?}, alternateDevice?):
//   line B leaves from alternateDevice when given (feed::Publisher::create).
}  // namespace

Napi::Function define_publisher(Napi::Env env) { return PublisherWrap::Define(env); }

Napi::Value create_publisher(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<FeedClasses*>(info.Data());
  const Resolved r = resolve(info, *classes, "feed.createPublisher");
  Napi::Object cfg = info[2].As<Napi::Object>();
  feed::PublisherConfig pc;
  Napi::Array chans = channels_of(env, cfg, "feed.createPublisher");
  for (std::uint32_t i = 0; i < chans.Length(); ++i) {
    const std::string where = "feed.createPublisher: channels[" + std::to_string(i) + "]";
    Napi::Object c = to_object(env, chans.Get(i), where);
    feed::PublisherChannelConfig ch;
    ch.id = static_cast<std::uint16_t>(to_u32(env, c.Get("id"), where + ".id", 0xffff));
    ch.group_a = group_of(env, c.Get("groupA"), where + ".groupA");
    if (has(c, "groupB")) ch.group_b = group_of(env, c.Get("groupB"), where + ".groupB");
    if (has(c, "frameSize")) ch.frame_bytes = to_limit(env, c.Get("frameSize"), where + ".frameSize", feed::limits::frame_bytes);
    if (has(c, "heartbeatMs")) ch.heartbeat_ns = std::uint64_t{to_limit(env, c.Get("heartbeatMs"), where + ".heartbeatMs", feed::limits::heartbeat_ms)} * 1'000'000;
    if (has(c, "ring")) {
      Napi::Object ring = to_object(env, c.Get("ring"), where + ".ring", "an object {frames, bytes}");
      if (has(ring, "frames")) ch.ring.max_frames = to_limit(env, ring.Get("frames"), where + ".ring.frames", feed::limits::ring_frames);
      if (has(ring, "bytes")) ch.ring.max_bytes = to_limit(env, ring.Get("bytes"), where + ".ring.bytes", feed::limits::ring_bytes);
    }
    if (has(c, "snapshotSlots")) ch.snapshot.slot_count = to_limit(env, c.Get("snapshotSlots"), where + ".snapshotSlots", feed::limits::snapshot_slots);
    pc.channels.push_back(ch);
  }
  if (has(cfg, "sendSlots")) pc.send_slots = to_limit(env, cfg.Get("sendSlots"), "feed.createPublisher: sendSlots", feed::limits::send_slots);
  if (has(cfg, "hopLimit")) pc.hop_limit = static_cast<std::uint8_t>(to_u32(env, cfg.Get("hopLimit"), "feed.createPublisher: hopLimit", 255));
  if (std::string e = feed::validate(pc); !e.empty()) throw Napi::TypeError::New(env, "feed.createPublisher: " + e);

  // Allocated and touched here, on the JS thread: the engine thread only takes the pointers.
  auto memory = feed::reserve(pc, r.engine->placement().plan.numa_node);
  if (!memory.ok()) throw reservation_error(env, "feed.createPublisher", memory.error());
  verbs::Result<std::uint32_t> id = verbs::Error{};
  std::shared_ptr<feed::PublisherStats> stats;
  run_on_engine(env, *r.engine, "feed.createPublisher", [&] {
    id = r.agent->add_publisher(*r.device, pc, std::move(memory).value(), r.alternate);
    if (id.ok()) stats = r.agent->publisher(*id)->stats();
  });
  if (!id.ok()) throw verbs_error(env, id.error());
  Napi::Object js = classes->publisher.New({});
  PublisherWrap::Unwrap(js)->init(info, r, *id, std::move(stats));
  return js;
}

}  // namespace qpgate::addon::feed_wrap
