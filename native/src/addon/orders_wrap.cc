#include "orders_wrap.h"

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "common/clock.h"
#include "declared_counters.h"
#include "engine/engine.h"
#include "engine_wrap.h"
#include "js_number.h"
#include "orders/order_agent.h"
#include "orders_wrap_config.h"
#include "verbs_convert.h"

namespace qpgate::addon {
namespace {

using EnginePtr = std::shared_ptr<engine::Engine>;

// Remote rights only ("REMOTE_ATOMIC", "REMOTE_READ"): LOCAL_WRITE is the
// gateway's own business (ibv_reg_mr wants it with REMOTE_ATOMIC).
Napi::Array remote_access_to_js(Napi::Env env, verbs::AccessFlags a) {
  Napi::Array out = Napi::Array::New(env);
  std::uint32_t n = 0;
  if (a.has(verbs::Access::REMOTE_ATOMIC)) out.Set(n++, "REMOTE_ATOMIC");
  if (a.has(verbs::Access::REMOTE_WRITE)) out.Set(n++, "REMOTE_WRITE");
  if (a.has(verbs::Access::REMOTE_READ)) out.Set(n++, "REMOTE_READ");
  return out;
}

std::string_view short_reason(orders::RejectReason r) {
  std::string_view n = orders::name_of(r);
  constexpr std::string_view kPrefix = "REJECT_REASON_";
  return n.substr(0, kPrefix.size()) == kPrefix ? n.substr(kPrefix.size()) : n;
}

Napi::Object risk_layout(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("pageBytes", num(env, orders::kRiskPageBytes));
  Napi::Array remote = Napi::Array::New(env);
  Napi::Array local = Napi::Array::New(env);
  for (const orders::RiskWordInfo& w : orders::kRiskRegionLayout.words) {
    const bool is_remote = w.owner == orders::WordOwner::kRemote;
    Napi::Object e = Napi::Object::New(env);
    e.Set("name", std::string(w.name));
    // Offsets within the word's page: each page is its own region (addr, rkey).
    e.Set("offset", num(env, is_remote ? w.offset : w.offset - orders::kRiskPageBytes));
    e.Set("description", std::string(w.meaning));
    Napi::Array& into = is_remote ? remote : local;
    into.Set(into.Length(), e);
  }
  o.Set("remoteOwned", remote);
  o.Set("localOwned", local);
  return o;
}

class ServiceWrap : public Napi::ObjectWrap<ServiceWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeOrderService",
                       {InstanceAccessor<&ServiceWrap::Id>("id"),
                        InstanceMethod<&ServiceWrap::OpenSession>("openSession"),
                        InstanceMethod<&ServiceWrap::CloseSession>("closeSession"),
                        InstanceMethod<&ServiceWrap::Sessions>("sessions"),
                        InstanceMethod<&ServiceWrap::Stats>("stats"),
                        InstanceMethod<&ServiceWrap::AckLatencyCounts>("ackLatencyCounts"),
                        InstanceMethod<&ServiceWrap::RiskLayout>("riskLayout"),
                        InstanceMethod<&ServiceWrap::ReadRisk>("readRisk"),
                        InstanceMethod<&ServiceWrap::OnAsyncEvent>("onAsyncEvent"),
                        InstanceMethod<&ServiceWrap::DeliverOrderEvents>("deliverOrderEvents"),
                        InstanceMethod<&ServiceWrap::Close>("close")});
  }
  explicit ServiceWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ServiceWrap>(info) {}
  ~ServiceWrap() override { release(); }

  void init(const Napi::CallbackInfo& info, EnginePtr engine, orders::OrderAgent* agent, std::uint32_t id) {
    engine_ = std::move(engine);
    agent_ = agent;
    id_ = id;
    engine_js_ = Napi::Persistent(info[0].As<Napi::Object>());
    device_js_ = Napi::Persistent(info[1].As<Napi::Object>());
    if (info.Length() > 3 && info[3].IsObject()) alternate_js_ = Napi::Persistent(info[3].As<Napi::Object>());
  }

 private:
  // Runs fn(service) on the engine thread; throws if the service is gone.
  template <typename Fn>
  void with_service(Napi::Env env, const char* what, Fn&& fn) {
    if (id_ == 0) throw Napi::Error::New(env, std::string(what) + ": this order service was closed");
    bool found = false;
    orders::OrderAgent* agent = agent_;
    const std::uint32_t id = id_;
    engine_->run_on_engine([&] {
      if (orders::OrderService* s = agent->service(id)) {
        found = true;
        fn(*s);
      }
    });
    if (!found) throw Napi::Error::New(env, std::string(what) + ": this order service is gone (its engine stopped)");
  }

  void release() {
    if (id_ == 0) return;
    const std::uint32_t was = id_;
    id_ = 0;
    orders::OrderAgent* agent = agent_;
    engine_->run_on_engine([&] { (void)agent->remove_service(was); });
  }

  Napi::Value Id(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), id_); }

  Napi::Value OpenSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const orders::SessionRequest req = to_session_request(env, info[0]);
    verbs::Result<orders::SessionAnswer> r = verbs::Error{};
    with_service(env, "service.openSession", [&](orders::OrderService& s) { r = s.open_session(req, qpgate::monotonic_ns()); });
    if (!r.ok()) throw verbs_error(env, r.error());
    Napi::Object o = Napi::Object::New(env);
    o.Set("qpn", num(env, r->qpn));
    o.Set("psn", num(env, r->psn));
    o.Set("gid", r->gid.to_string());
    o.Set("mtu", num(env, verbs::mtu_to_bytes(r->mtu)));
    o.Set("alternateGid", gid_or_null(env, r->alt_gid));
    o.Set("ackHoldUs", num(env, r->ack_hold_ns / 1000));
    Napi::Array regions = Napi::Array::New(env, r->regions.size());
    for (std::size_t i = 0; i < r->regions.size(); ++i) {
      const orders::RegionGrant& g = r->regions[i];
      Napi::Object e = Napi::Object::New(env);
      e.Set("name", g.name);
      e.Set("account", Napi::BigInt::New(env, g.account));
      e.Set("addr", Napi::BigInt::New(env, g.addr));
      e.Set("length", num(env, g.length));
      e.Set("rkey", num(env, g.rkey));
      e.Set("access", remote_access_to_js(env, g.access));
      regions.Set(static_cast<std::uint32_t>(i), e);
    }
    o.Set("regions", regions);
    return o;
  }

  Napi::Value CloseSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t session = to_u32(env, info[0], "service.closeSession: session");
    bool closed = false;
    with_service(env, "service.closeSession", [&](orders::OrderService& s) { closed = s.close_session(session, qpgate::monotonic_ns()); });
    return Napi::Boolean::New(env, closed);
  }

  Napi::Value Sessions(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::vector<orders::SessionInfo> list;
    with_service(env, "service.sessions", [&](orders::OrderService& s) { list = s.sessions(); });
    Napi::Array out = Napi::Array::New(env, list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      const orders::SessionInfo& s = list[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("session", num(env, s.session));
      o.Set("role", s.role == orders::SessionRole::kRisk ? "risk" : "trading");
      o.Set("device", device_choice_to_js(env, s.device));
      o.Set("qpn", num(env, s.qpn));
      o.Set("state", std::string(verbs::qp_state_name(s.state)));
      o.Set("lastAppSeq", num(env, s.last_app_seq));
      o.Set("received", num(env, s.received));
      o.Set("sent", num(env, s.sent));
      o.Set("rnrHeld", num(env, s.rnr_held));
      o.Set("queued", num(env, s.queued));
      o.Set("backPressured", Napi::Boolean::New(env, s.back_pressured));
      o.Set("disconnected", Napi::Boolean::New(env, s.disconnected));
      o.Set("endedBy", s.disconnected ? Napi::Value(Napi::String::New(env, s.ended_by)) : env.Null());
      set_rc_path(env, o, s.path);
      out.Set(static_cast<std::uint32_t>(i), o);
    }
    return out;
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    struct Declared {
      std::string_view name;
      engine::CounterKind kind;
      std::uint64_t value;
    };
    std::vector<Declared> declared;
    std::vector<std::pair<std::string, std::uint64_t>> flat;
    std::vector<std::pair<std::string, std::uint64_t>> by_reason;
    std::vector<std::pair<std::string, std::uint64_t>> by_kind;
    std::string journal_failure;
    std::string rebuild_failure;
    with_service(env, "service.stats", [&](orders::OrderService& s) {
      journal_failure = s.handler().journal().failure();
      rebuild_failure = s.last_rebuild_failure();
      const orders::HandlerCounters& h = s.handler().counters();
      const orders::ServiceCounters& c = s.counters();
      const orders::JournalStats& j = s.handler().journal().stats();
      std::uint64_t rejects = 0, decode_errors = 0;
      for (std::size_t i = 1; i < orders::kRejectReasons; ++i) {
        const std::uint64_t n = h.rejects[i].get();
        rejects += n;
        by_reason.emplace_back(short_reason(static_cast<orders::RejectReason>(i)), n);
      }
      for (std::size_t i = 1; i < orders::kDecodeErrors; ++i) {
        const std::uint64_t n = h.decode_errors[i].get();
        decode_errors += n;
        by_kind.emplace_back(orders::name_of(static_cast<orders::DecodeError>(i)), n);
      }
      // The declared counters (order_counters.def) under their own names, then what stats() derives.
      auto keep = [&](std::string_view name, engine::CounterKind kind, std::uint64_t v) { declared.push_back({name, kind, v}); };
      h.for_each(keep);
      c.for_each(keep);
      s.market_data().counters().for_each(keep);
      flat = {{"rejects", rejects},
              {"decodeErrors", decode_errors},
              {"journalRecords", j.records_appended},
              {"journalSyncs", j.syncs},
              {"journalReplayed", j.records_replayed},
              {"journalTornTailBytes", j.torn_tail_bytes},
              {"durablePosition", s.handler().durable_position()},
              {"clientOrderIds", s.handler().dedupe().size()},
              {"ackLatencyCount", s.ack_latency().total()},
              {"resendBytes", s.resend_bytes()},
              {"openOrders", s.handler().pool().in_use()}};
    });
    Napi::Object o = Napi::Object::New(env);
    set_counters(env, o, [&](auto&& fn) {
      for (const Declared& d : declared) fn(d.name, d.kind, d.value);
    });
    for (const auto& [k, v] : flat) o.Set(k, num(env, v));
    Napi::Object reasons = Napi::Object::New(env);
    for (const auto& [k, v] : by_reason) reasons.Set(k, num(env, v));
    o.Set("rejectsByReason", reasons);
    Napi::Object kinds = Napi::Object::New(env);
    for (const auto& [k, v] : by_kind) kinds.Set(k, num(env, v));
    o.Set("decodeErrorsByKind", kinds);
    o.Set("journalFailure", journal_failure);  // "" while journalFailed is 0
    o.Set("lastRebuildFailure", rebuild_failure);  // "" until a rebuild fails
    return o;
  }

  Napi::Value AckLatencyCounts(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    constexpr std::size_t n = metrics::LatencyHistogram::kCountsLength;
    std::vector<std::uint64_t> counts(n);
    with_service(env, "service.ackLatencyCounts", [&](orders::OrderService& s) {
      for (std::size_t i = 0; i < n; ++i) counts[i] = s.ack_latency().count_at_index(i);
    });
    Napi::Float64Array out = Napi::Float64Array::New(env, n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(counts[i]);
    return out;
  }

  Napi::Value RiskLayout(const Napi::CallbackInfo& info) { return risk_layout(info.Env()); }

  Napi::Value ReadRisk(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint64_t account = to_u64(env, info[0], "service.readRisk: account");
    bool known = false;
    std::uint64_t credit = 0, kill = 0, notional = 0, open = 0, traded = 0;
    std::int64_t position = 0;
    with_service(env, "service.readRisk", [&](orders::OrderService& s) {
      orders::RiskRegion* r = s.handler().risk().find(account);
      if (r == nullptr) return;
      known = true;
      credit = r->credit_limit();
      // Remote-owned: loaded, never read-modify-written (risk_region.h).
      kill = std::atomic_ref<std::uint64_t>(*r->remote_word(orders::RemoteOwnedWords::kKillSwitch)).load(std::memory_order_acquire);
      position = r->position();
      notional = r->open_notional();
      open = r->open_orders();
      traded = r->traded_notional();
    });
    if (!known) throw Napi::RangeError::New(env, "service.readRisk: account " + std::to_string(account) + " is not configured");
    Napi::Object o = Napi::Object::New(env);
    o.Set("creditLimit", Napi::BigInt::New(env, credit));
    o.Set("killSwitch", Napi::BigInt::New(env, kill));
    o.Set("position", Napi::BigInt::New(env, position));
    o.Set("openNotional", Napi::BigInt::New(env, notional));
    o.Set("openOrders", Napi::BigInt::New(env, open));
    o.Set("tradedNotional", Napi::BigInt::New(env, traded));
    return o;
  }

  // onAsyncEvent(event, device = 'primary'): an event from device.getAsyncEvent() ({type:
  // 'IBV_EVENT_QP_ACCESS_ERR', element: 'QP', elementId: qpn, ...}) of the service's primary or
  // alternate device (QPNs are per device); true if it lost one of this service's sessions.
  Napi::Value OnAsyncEvent(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string where = "service.onAsyncEvent: event";
    Napi::Object o = to_object(env, info[0], where, "an object from device.getAsyncEvent()");
    constexpr const char* kType = "an event type name like 'IBV_EVENT_QP_FATAL'";
    const std::string type = to_str(env, o.Get("type"), where + ".type", kType);
    verbs::AsyncEvent e;
    bool known = false;
    for (int i = 0; i < verbs::kEventTypeCount && !known; ++i) {
      const auto t = static_cast<verbs::EventType>(i);
      if (verbs::event_type_enum_name(t) == type) {
        e.event_type = t;
        known = true;
      }
    }
    if (!known) type_error(env, where + ".type", kType, o.Get("type"));
    e.element = verbs::event_element_of(e.event_type);
    e.element_id = to_u32(env, o.Get("elementId"), where + ".elementId");
    const std::uint8_t device =
        info.Length() > 1 && !info[1].IsUndefined() ? to_device_choice(env, info[1], "service.onAsyncEvent: device") : orders::kPrimaryDevice;
    bool lost = false;
    with_service(env, "service.onAsyncEvent", [&](orders::OrderService& s) { lost = s.on_async_event(e, qpgate::monotonic_ns(), device); });
    return Napi::Boolean::New(env, lost);
  }

  // deliverOrderEvents(on): start/stop the kOrderEvents fromEngine records
  // (docs/protocol.md 3.7) of this service. While off, no events are made.
  Napi::Value DeliverOrderEvents(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const bool on = to_bool(env, info[0], "service.deliverOrderEvents: on");
    orders::OrderAgent* agent = agent_;
    const std::uint32_t id = id_;
    bool done = false;
    with_service(env, "service.deliverOrderEvents", [&](orders::OrderService&) { done = agent->deliver_order_events(id, on); });
    if (!done) throw Napi::Error::New(env, "service.deliverOrderEvents: the engine has no fromEngine ring");
    return env.Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  EnginePtr engine_;
  orders::OrderAgent* agent_ = nullptr;
  std::uint32_t id_ = 0;
  Napi::ObjectReference engine_js_;
  Napi::ObjectReference device_js_;
  Napi::ObjectReference alternate_js_;  // keeps the alternate device alive as long as the service
};

Napi::Value CreateService(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<OrdersClasses*>(info.Data());
  constexpr const char* what = "orders.createService";
  EngineWrap* ew = &EngineWrap::FromArg(env, info[0], std::string(what) + ": engine");
  verbs::Device* device = &device_arg(env, info[1], *classes->verbs, std::string(what) + ": device");
  orders::ServiceConfig config = to_service_config(env, info[2]);
  // createService(engine, device, config, alternateDevice?): a second device sessions may be opened on.
  verbs::Device* alternate = info.Length() > 3 && !info[3].IsUndefined()
                                 ? &device_arg(env, info[3], *classes->verbs, std::string(what) + ": alternateDevice")
                                 : nullptr;
  EnginePtr engine = ew->engine();
  if (!engine->running()) throw Napi::Error::New(env, std::string(what) + ": start the engine first");
  orders::OrderAgent* agent = ew->agents().orders;
  bool publisher_found = true;
  verbs::Result<std::uint32_t> id = verbs::Error{};
  const std::uint32_t publisher = config.feed_publisher_id;
  engine->run_on_engine([&] {
    publisher_found = publisher == 0 || agent->has_feed_publisher(publisher);
    if (publisher_found) id = agent->add_service(*device, std::move(config), alternate);
  });
  if (!publisher_found) {
    throw Napi::RangeError::New(env, std::string(what) + ": config.feedPublisherId " + std::to_string(publisher) +
                                         " is not a feed publisher of this engine");
  }
  if (!id.ok()) throw verbs_error(env, id.error());
  Napi::Object js = classes->service.New({});
  ServiceWrap::Unwrap(js)->init(info, engine, agent, *id);
  return js;
}

}  // namespace

void init_orders(Napi::Env env, Napi::Object exports, OrdersClasses* classes) {
  Napi::Function service = ServiceWrap::Define(env);
  classes->service = Napi::Persistent(service);
  Napi::Object o = Napi::Object::New(env);
  o.Set("createService", Napi::Function::New(env, CreateService, "createService", classes));
  o.Set("riskLayout", risk_layout(env));
  o.Set("NativeOrderService", service);
  exports.Set("orders", o);
}

}  // namespace qpgate::addon
