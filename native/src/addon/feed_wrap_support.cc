#include "feed_wrap_support.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "args.h"
#include "declared_counters.h"
#include "engine/engine.h"
#include "engine_wrap.h"
#include "feed/feed_agent.h"
#include "feed/feed_records.h"
#include "js_number.h"
#include "verbs/gid.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"
#include "verbs_convert.h"

namespace qpgate::addon::feed_wrap {

std::uint32_t group_of(Napi::Env env, Napi::Value v, const std::string& where) {
  constexpr const char* kExpected = "an IPv4 multicast address (224.0.0.0/4) like '239.77.0.1'";
  const auto ip = verbs::ipv4_parse(to_str(env, v, where, kExpected));
  if (!ip || !verbs::ipv4_is_multicast(*ip)) type_error(env, where, kExpected, v);
  return *ip;
}

Napi::Value histogram_counts(Napi::Env env, const metrics::LatencyHistogram& h) {
  constexpr std::size_t n = metrics::LatencyHistogram::kCountsLength;
  Napi::Float64Array out = Napi::Float64Array::New(env, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(h.count_at_index(i));
  return out;
}

verbs::RcPeer rc_peer_of(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = to_object(env, v, where, "an object {qpn, psn, gid, mtu}");
  verbs::RcPeer p;
  p.qpn = to_u32(env, o.Get("qpn"), where + ".qpn", 0xffffff);
  p.psn = to_u32(env, o.Get("psn"), where + ".psn", 0xffffff);
  p.gid = to_gid(env, o.Get("gid"), where + ".gid");
  p.mtu = to_path_mtu(env, o.Get("mtu"), where + ".mtu");
  p.alt_gid = to_alternate_gid(env, o, where + ".alternateGid");
  return p;
}

Napi::Object rc_peer_to_js(Napi::Env env, const verbs::RcPeer& p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("qpn", Napi::Number::New(env, p.qpn));
  o.Set("psn", Napi::Number::New(env, p.psn));
  o.Set("gid", Napi::String::New(env, p.gid.to_string()));
  o.Set("mtu", Napi::Number::New(env, verbs::mtu_to_bytes(p.mtu)));
  o.Set("alternateGid", gid_or_null(env, p.alt_gid));
  return o;
}

std::uint32_t to_limit(Napi::Env env, Napi::Value v, const std::string& where, const feed::FeedLimit& limit) {
  return to_u32(env, v, where, static_cast<std::uint32_t>(limit.minimum), static_cast<std::uint32_t>(limit.maximum));
}

Napi::Object recovery_session_to_js(Napi::Env env, const feed::RecoverySessionInfo& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("session", Napi::Number::New(env, s.session));
  o.Set("publisher", Napi::Number::New(env, s.publisher));
  o.Set("device", device_choice_to_js(env, s.device));
  o.Set("qpn", Napi::Number::New(env, s.qpn));
  o.Set("state", Napi::String::New(env, std::string(verbs::qp_state_name(s.state))));
  Napi::Array chans = Napi::Array::New(env, s.channels.size());
  for (std::size_t i = 0; i < s.channels.size(); ++i) chans.Set(static_cast<std::uint32_t>(i), Napi::Number::New(env, s.channels[i]));
  o.Set("channels", chans);
  set_rc_path(env, o, s.path);
  const feed::RecoverySessionCounters& c = *s.counters;
  set_counters(env, o, [&](auto&& fn) { c.for_each(fn); });
  Napi::Object by = Napi::Object::New(env);
  for (std::size_t i = 1; i < feed::recovery::kStatusCount; ++i) {
    by.Set(std::string(feed::recovery::status_name(static_cast<feed::recovery::Status>(i))), num(env, c.by_status[i].get()));
  }
  o.Set("byStatus", by);
  o.Set("throttled", num(env, c.by_status[static_cast<std::size_t>(feed::recovery::Status::kThrottled)].get()));
  o.Set("rangeGone", num(env, c.by_status[static_cast<std::size_t>(feed::recovery::Status::kRangeGone)].get()));
  Napi::Object rep = Napi::Object::New(env);
  set_counters(env, rep, [&](auto&& fn) { c.report.for_each(fn); });
  o.Set("subscriber", rep);
  return o;
}

feed::RecoveryLimits limits_of(Napi::Env env, Napi::Value v, const std::string& where) {
  feed::RecoveryLimits l;
  if (v.IsUndefined()) return l;
  Napi::Object o = to_object(env, v, where);
  auto opt = [&](const char* key, auto& dst, std::uint32_t max) {
    if (has(o, key)) dst = to_u32(env, o.Get(key), where + "." + key, max);
  };
  opt("maxMessages", l.max_messages, 1u << 20);
  opt("messagesPerSecond", l.messages_per_second, 0xffffffffu);
  opt("burstMessages", l.burst_messages, 0xffffffffu);
  opt("replyBytes", l.reply_bytes, 1u << 24);
  opt("sendSlots", l.send_slots, 1024);
  opt("recvSlots", l.recv_slots, 1024);
  if (has(o, "silenceTimeoutMs")) {
    l.silence_timeout_ns = std::uint64_t{to_u32(env, o.Get("silenceTimeoutMs"), where + ".silenceTimeoutMs", 3'600'000)} * 1'000'000;
  }
  if (std::string e = feed::validate(l); !e.empty()) throw Napi::RangeError::New(env, where + ": " + e);
  return l;
}

Resolved resolve(const Napi::CallbackInfo& info, const FeedClasses& classes, const char* what) {
  Napi::Env env = info.Env();
  EngineWrap* ew = &EngineWrap::FromArg(env, info[0], std::string(what) + ": engine");
  Resolved r;
  r.engine = ew->engine();
  r.device = &device_arg(env, info[1], *classes.verbs, std::string(what) + ": device");
  if (info.Length() > 3 && !info[3].IsUndefined()) {
    r.alternate = &device_arg(env, info[3], *classes.verbs, std::string(what) + ": alternateDevice");
    if (r.alternate == r.device) throw Napi::TypeError::New(env, std::string(what) + ": alternateDevice: expected a device other than device, got the same one");
  }
  (void)to_object(env, info[2], std::string(what) + ": config", "an object {channels: [...]}");
  if (!r.engine->running()) throw Napi::Error::New(env, std::string(what) + ": start the engine first");
  r.agent = ew->agents().feed;
  return r;
}

Napi::Array channels_of(Napi::Env env, const Napi::Object& config, const char* what) {
  const std::string where = std::string(what) + ": config.channels";
  Napi::Array channels = to_array(env, config.Get("channels"), where, "a non-empty array");
  if (channels.Length() == 0) type_error(env, where, "a non-empty array", channels);
  return channels;
}

Napi::Error reservation_error(Napi::Env env, const std::string& what, const verbs::Error& e) {
  if (e.code != ENOMEM) return Napi::TypeError::New(env, what + ": " + e.message);
  Napi::Error err = Napi::Error::New(env, e.message);  // "feed publisher: ..." says what
  err.Set("code", Napi::String::New(env, "ENOMEM"));
  return err;
}

}  // namespace qpgate::addon::feed_wrap
