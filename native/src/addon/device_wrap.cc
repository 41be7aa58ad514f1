// The JS Device over a verbs::Device of either backend (device_open.h opens
// it), and the soft device's test-only fault injector doors.
#include <memory>
#include <utility>

#include "args.h"
#include "device_open.h"
#include "engine/device_events_agent.h"
#include "engine_wrap.h"
#include "verbs/soft/soft_device.h"
#include "verbs_wrap_base.h"

namespace qpgate::addon {
namespace {

namespace soft = verbs::soft;

// ---------------------------------------------------------------- device
// Either backend (device_open.h); what only the soft device has (its
// socket counters, net report and fault injector) is asked of soft().
class DeviceWrap : public VerbsWrap<DeviceWrap, verbs::Device> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Device",
        {InstanceAccessor<&DeviceWrap::Name>("name"), InstanceAccessor<&DeviceWrap::Backend>("backend"),
         InstanceAccessor<&DeviceWrap::Index>("index"), InstanceAccessor<&DeviceWrap::MaxRetryCnt>("maxRetryCnt"),
         InstanceAccessor<&DeviceWrap::Gid>("gid"), InstanceAccessor<&DeviceWrap::GidIndex>("gidIndex"),
         InstanceAccessor<&DeviceWrap::GidReport>("gidReport"), InstanceAccessor<&DeviceWrap::Port>("port"),
         InstanceAccessor<&DeviceWrap::Address>("address"), InstanceAccessor<&DeviceWrap::AlternateGid>("alternateGid"),
         InstanceAccessor<&DeviceWrap::AckHoldUs>("ackHoldUs"),
         InstanceAccessor<&DeviceWrap::Interface>("interface"), InstanceMethod<&DeviceWrap::Query>("query"),
         InstanceMethod<&DeviceWrap::QueryPort>("queryPort"), InstanceMethod<&DeviceWrap::QueryGidTable>("queryGidTable"),
         InstanceMethod<&DeviceWrap::GidLinkUp>("gidLinkUp"),
         InstanceMethod<&DeviceWrap::AllocPd>("allocPd"), InstanceMethod<&DeviceWrap::CreateCq>("createCq"),
         InstanceMethod<&DeviceWrap::GetAsyncEvent>("getAsyncEvent"), InstanceMethod<&DeviceWrap::Counters>("counters"),
         InstanceMethod<&DeviceWrap::NetReport>("netReport"), InstanceMethod<&DeviceWrap::Close>("close")});
  }
  using VerbsWrap::VerbsWrap;
  ~DeviceWrap() override { close_device(); }

  void opened(DeviceFacts facts, engine::DeviceEventsAgent* events) {
    facts_ = std::move(facts);
    events_ = events;
    if (events_ != nullptr) {
      verbs::Device& d = *obj_;
      run([&] { event_counts_ = events_->counts(d); });
    }
  }
  // For __testing_setFaults / __testing_faultCounters (tests only).
  void set_faults(Napi::Env env, const soft::FaultPlan& plan) {
    soft::SoftDevice& d = soft(env, "fault injector");
    run([&] { d.inject_faults(plan); });
  }
  Napi::Value fault_counters(Napi::Env env) { return counters_to_js(env, soft(env, "fault injector").fault_counters()); }

 private:
  verbs::Device& dev(Napi::Env env) const { return obj(env, "device"); }
  soft::SoftDevice* as_soft(Napi::Env env) const {
    verbs::Device& d = dev(env);
    return d.backend() == "soft" ? static_cast<soft::SoftDevice*>(&d) : nullptr;
  }
  soft::SoftDevice& soft(Napi::Env env, const char* what) const {
    soft::SoftDevice* d = as_soft(env);
    if (d == nullptr) throw Napi::TypeError::New(env, std::string(what) + ": only a soft device has one");
    return *d;
  }
  // The events agent forgets the device (and its fd) before it goes.
  void close_device() {
    if (!obj_) return;
    engine::DeviceEventsAgent* events = std::exchange(events_, nullptr);
    run([&] {
      if (events != nullptr) events->detach(*obj_);
      obj_.reset();
    });
  }
  Napi::Value Name(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), std::string(dev(info.Env()).name())); }
  Napi::Value Index(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), dev(info.Env()).index()); }
  Napi::Value MaxRetryCnt(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), dev(info.Env()).max_retry_cnt());
  }
  Napi::Value Backend(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), std::string(dev(info.Env()).backend())); }
  // Its RC responder's ACK hold (verbs::Device::ack_hold_ns), for the handshake's ackHoldUs.
  Napi::Value AckHoldUs(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(dev(info.Env()).ack_hold_ns() / 1000));
  }
  Napi::Value Gid(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), facts_.gid); }
  Napi::Value GidIndex(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), facts_.gid_index); }
  Napi::Value GidReport(const Napi::CallbackInfo& info) {
    return facts_.gid_report.empty() ? info.Env().Null() : Napi::Value(Napi::String::New(info.Env(), facts_.gid_report));
  }
  Napi::Value Port(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), facts_.port); }
  Napi::Value Address(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), facts_.address); }
  // The alternate path's source GID (a soft device opened with alternateAddress), or null.
  Napi::Value AlternateGid(const Napi::CallbackInfo& info) {
    return facts_.alternate_gid.empty() ? info.Env().Null() : Napi::Value(Napi::String::New(info.Env(), facts_.alternate_gid));
  }
  Napi::Value Interface(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", facts_.netdev);
    o.Set("address", facts_.address);
    o.Set("mtu", Napi::Number::New(env, facts_.mtu));
    o.Set("loopback", Napi::Boolean::New(env, facts_.loopback));
    return o;
  }
  Napi::Value Query(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    verbs::Result<verbs::DeviceAttr> r = verbs::Error{};
    run([&] { r = d.query_device(); });
    return device_attr_to_js(env, unwrap_result(env, r));
  }
  Napi::Value QueryPort(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    const std::uint32_t port =
        info.Length() > 0 && !info[0].IsUndefined() ? to_u32(env, info[0], "device.queryPort: port", 255) : facts_.port;
    verbs::Result<verbs::PortAttr> r = verbs::Error{};
    run([&] { r = d.query_port(static_cast<std::uint8_t>(port)); });
    return port_attr_to_js(env, unwrap_result(env, r));
  }
  Napi::Value QueryGidTable(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    verbs::Result<std::vector<GidRow>> r = verbs::Error{};
    run([&] { r = gid_rows(d, facts_.port); });
    const std::vector<GidRow> rows = unwrap_result(env, r);
    Napi::Array out = Napi::Array::New(env, rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", Napi::Number::New(env, rows[i].index));
      o.Set("gid", rows[i].gid);
      o.Set("type", rows[i].type);
      if (!rows[i].netdev.empty()) o.Set("netdev", rows[i].netdev);
      out.Set(static_cast<std::uint32_t>(i), o);
    }
    return out;
  }
  Napi::Value GidLinkUp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    const std::uint32_t index = to_u32(env, info[0], "device.gidLinkUp: gidIndex", 255);
    bool up = false;
    run([&] { up = d.gid_link_up(static_cast<std::uint8_t>(facts_.port), static_cast<std::uint8_t>(index)); });
    return Napi::Boolean::New(env, up);
  }
  Napi::Value AllocPd(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    verbs::Result<std::unique_ptr<verbs::ProtectionDomain>> r = verbs::Error{};
    run([&] { r = d.alloc_pd(); });
    return wrap_pd(classes_, engine_, engine_js(), unwrap_result(env, r));
  }
  Napi::Value CreateCq(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    const std::uint32_t depth = to_u32(env, info[0], "device.createCq: depth");
    const std::uint64_t context = info.Length() > 1 && !info[1].IsUndefined() ? to_u64(env, info[1], "device.createCq: context") : 0;
    verbs::Result<std::unique_ptr<verbs::CompletionQueue>> r = verbs::Error{};
    run([&] { r = d.create_cq(depth, context); });
    return wrap_cq(classes_, engine_, engine_js(), unwrap_result(env, r));
  }
  // ibv: the events the agent took from the device (it must take them: the
  // async fd is in the parker); soft: the device's own queue.
  Napi::Value GetAsyncEvent(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::Device& d = dev(env);
    std::optional<verbs::AsyncEvent> e;
    run([&] { e = events_ != nullptr ? events_->next_event(d) : d.get_async_event(); });
    return e ? Napi::Value(async_event_to_js(env, *e)) : env.Null();
  }
  Napi::Value Counters(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    if (soft::SoftDevice* d = as_soft(env)) {  // relaxed atomics: read here without the engine
      o.Set("net", counters_to_js(env, d->net_counters()));
      o.Set("ingress", counters_to_js(env, d->ingress_counters()));
      o.Set("wire", counters_to_js(env, d->wire_counters()));
    } else {
      o.Set("net", Napi::Object::New(env));
      o.Set("ingress", Napi::Object::New(env));
      o.Set("wire", Napi::Object::New(env));
    }
    o.Set("asyncEvents", async_event_counts(env));
    o.Set("completionEvents", completion_event_counts(env));
    return o;
  }
  // {events, errors}: the CQ events the agent took from the completion channel (ibv), each a CQ re-armed.
  Napi::Object completion_event_counts(Napi::Env env) const {
    Napi::Object o = Napi::Object::New(env);
    const auto load = [&](const std::atomic<std::uint64_t>* a) { return static_cast<double>(a == nullptr ? 0 : a->load(std::memory_order_relaxed)); };
    o.Set("events", load(event_counts_ ? &event_counts_->completion_events : nullptr));
    o.Set("errors", load(event_counts_ ? &event_counts_->completion_errors : nullptr));
    return o;
  }
  // {IBV_EVENT_PORT_ERR: 1, ..., lost: 0}: the events the agent took (ibv).
  // Relaxed atomics, read here: /metrics never waits for the engine.
  Napi::Object async_event_counts(Napi::Env env) const {
    Napi::Object o = Napi::Object::New(env);
    if (!event_counts_) return o;
    const auto& c = *event_counts_;
    for (std::size_t t = 0; t < c.by_type.size(); ++t) {
      const std::uint64_t n = c.by_type[t].load(std::memory_order_relaxed);
      if (n != 0) o.Set(std::string(verbs::event_type_enum_name(static_cast<verbs::EventType>(t))), static_cast<double>(n));
    }
    o.Set("lost", static_cast<double>(c.lost.load(std::memory_order_relaxed)));
    return o;
  }
  Napi::Value NetReport(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    soft::SoftDevice* d = as_soft(env);
    if (d == nullptr) return env.Null();
    const soft::NetReport& r = d->net_report();
    Napi::Object o = Napi::Object::New(env);
    o.Set("receiveMode", std::string(soft::receive_mode_name(r.receive_mode)));
    o.Set("icrcPolicy", std::string(soft::icrc_policy_name(d->icrc_policy())));
    o.Set("rcvbufGranted", Napi::Number::New(env, r.rcvbuf_granted));
    o.Set("sndbufGranted", Napi::Number::New(env, r.sndbuf_granted));
    o.Set("ipv4Id", std::string(soft::ipv4_id_probe_name(r.ipv4_id)));
    o.Set("ipv4IdDetail", r.ipv4_id_detail);
    o.Set("sourcePortMode", r.source_port_mode);
    return o;
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    close_device();
    return info.Env().Undefined();
  }

  DeviceFacts facts_;
  engine::DeviceEventsAgent* events_ = nullptr;  // ibv: the agent that takes its async events
  std::shared_ptr<const engine::DeviceEventsAgent::Counts> event_counts_;
};

// openDevice(engine, {kind: 'soft', address | name, ...} | {kind: 'ibv', name, port?, gidIndex?}): device_open.h.
}  // namespace

Napi::Value open_device_js(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* classes = static_cast<VerbsClasses*>(info.Data());
  EngineWrap* ew = &EngineWrap::FromArg(env, info[0], "openDevice: engine");
  OpenedDevice d = open_device(env, *ew, info[1]);
  Napi::Object js = make_wrap<DeviceWrap>(classes->device, ew->engine(), info[0].As<Napi::Object>(), std::move(d.device), classes);
  DeviceWrap::Unwrap(js)->opened(std::move(d.facts), d.events_agent ? ew->agents().device_events : nullptr);
  return js;
}

namespace {

// ---------------------------------------------------------------- fault injector (tests only)
// __testing_setFaults(device, plan | null) and __testing_faultCounters(device):
// the soft device's fault injector (verbs/soft/fault.h), FOR TESTS. Only
// src/native/testing/faults.ts calls them; no configuration reaches them.
double rate_of(Napi::Env env, Napi::Object o, const char* key, const std::string& where) {
  if (!has(o, key)) return 0;
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) type_error(env, where + "." + key, "a probability in [0, 1]", v);
  const double p = v.As<Napi::Number>().DoubleValue();
  if (!(p >= 0 && p <= 1)) range_error(env, where + "." + key, "a probability in [0, 1]", v);
  return p;
}

soft::FaultRates rates_of(Napi::Env env, Napi::Object plan, const char* dir) {
  soft::FaultRates r;
  if (!has(plan, dir)) return r;
  const std::string where = std::string("setFaults: ") + dir;
  Napi::Object o = to_object(env, plan.Get(dir), where, "an object of rates");
  r.drop = rate_of(env, o, "drop", where);
  r.duplicate = rate_of(env, o, "duplicate", where);
  r.reorder = rate_of(env, o, "reorder", where);
  r.delay = rate_of(env, o, "delay", where);
  r.corrupt = rate_of(env, o, "corrupt", where);
  return r;
}

DeviceWrap* fault_device(const Napi::CallbackInfo& info) {
  auto* classes = static_cast<VerbsClasses*>(info.Data());
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(classes->device.Value())) {
    type_error(info.Env(), "fault injector: device", "a Device made by openDevice", info[0]);
  }
  return DeviceWrap::Unwrap(info[0].As<Napi::Object>());
}

}  // namespace

Napi::Value testing_set_faults(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceWrap* d = fault_device(info);
  soft::FaultPlan plan;  // null/undefined: off
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Object o = info[1].As<Napi::Object>();
    if (has(o, "seed")) plan.seed = to_u64(env, o.Get("seed"), "setFaults: seed");
    plan.tx = rates_of(env, o, "tx");
    plan.rx = rates_of(env, o, "rx");
    if (has(o, "delayUs")) plan.delay_ns = std::int64_t{1000} * to_u32(env, o.Get("delayUs"), "setFaults: delayUs", 60'000'000);
    if (has(o, "reorderDistance")) plan.reorder_distance = to_u32(env, o.Get("reorderDistance"), "setFaults: reorderDistance", 1024);
    if (has(o, "reorderMaxHoldUs")) {
      plan.reorder_max_hold_ns = std::int64_t{1000} * to_u32(env, o.Get("reorderMaxHoldUs"), "setFaults: reorderMaxHoldUs", 60'000'000);
    }
    if (has(o, "maxFaults")) plan.max_faults = to_u32(env, o.Get("maxFaults"), "setFaults: maxFaults");
    if (has(o, "opcodes")) {
      Napi::Array a = to_array(env, o.Get("opcodes"), "setFaults: opcodes", "an array of BTH opcodes");
      for (std::uint32_t i = 0; i < a.Length(); ++i) {
        plan.opcodes.push_back(static_cast<std::uint8_t>(to_u32(env, a.Get(i), "setFaults: opcodes[]", 0xff)));
      }
    }
  } else if (info.Length() > 1 && !info[1].IsNull() && !info[1].IsUndefined()) {
    type_error(env, "setFaults: plan", "an object, or null to turn the injector off", info[1]);
  }
  d->set_faults(env, plan);
  return env.Undefined();
}

Napi::Value testing_fault_counters(const Napi::CallbackInfo& info) { return fault_device(info)->fault_counters(info.Env()); }
verbs::Device& device_arg(Napi::Env env, Napi::Value value, const VerbsClasses& classes, const std::string& where) {
  verbs::Device* d = device_of(value, classes);
  if (d == nullptr) type_error(env, where, "an open Device from verbs.openDevice()", value);
  return *d;
}

verbs::Device* device_of(Napi::Value value, const VerbsClasses& classes) {
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(classes.device.Value())) return nullptr;
  return DeviceWrap::Unwrap(value.As<Napi::Object>())->get();
}

Napi::Function define_device(Napi::Env env) { return DeviceWrap::Define(env); }

}  // namespace qpgate::addon
