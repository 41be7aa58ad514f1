#include "convert.h"

#include "engine/node_buffer.h"
#include "declared_counters.h"
#include "js_number.h"
#include "engine/spsc_ring.h"
#include "gateway/engine_agents.h"

#if defined(QPGATE_HAVE_WIRE)
#include "wire/icrc.h"
#endif

namespace qpgate::addon {

Napi::Object placement_to_js(Napi::Env env, const engine::PlacementReport& r) {
  using engine::format_cpu_list;
  Napi::Object o = Napi::Object::New(env);
  o.Set("device", r.plan.device);
  o.Set("numaNode", num(env, r.plan.numa_node));
  o.Set("numaSource", r.plan.numa_source);
  o.Set("nodeCpus", format_cpu_list(r.plan.node_cpus));
  o.Set("allowedCpus", format_cpu_list(r.plan.allowed_cpus));
  o.Set("candidateCpus", format_cpu_list(r.plan.candidates));
  o.Set("cpu", num(env, r.plan.cpu));
  o.Set("cpuReason", r.plan.cpu_reason);
  o.Set("pinned", Napi::Boolean::New(env, r.pin.pinned));
  o.Set("pinError", r.pin.error);
  o.Set("affinity", format_cpu_list(r.pin.affinity));
  o.Set("tid", num(env, r.tid));
  o.Set("memoryPolicy", r.memory_policy);
  o.Set("memoryReason", r.memory_reason);
  o.Set("hugePages", r.huge_pages);
  o.Set("hugePagesReason", r.huge_pages_reason);
  o.Set("idleStrategy", r.idle_strategy);
  o.Set("idleReason", r.idle_reason);
  return o;
}

Napi::Object stats_to_js(Napi::Env env, const engine::EngineStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("running", Napi::Boolean::New(env, s.running));
  set_counters(env, o, [&](auto&& fn) { s.for_each_counter(fn); });
  o.Set("notifies", num(env, s.notifies));
  Napi::Array faults = Napi::Array::New(env, s.faults.size());
  for (std::size_t i = 0; i < s.faults.size(); ++i) {
    Napi::Object f = Napi::Object::New(env);
    f.Set("agent", s.faults[i].agent);
    f.Set("message", s.faults[i].message);
    f.Set("stopped", Napi::Boolean::New(env, s.faults[i].stopped));
    faults.Set(static_cast<std::uint32_t>(i), f);
  }
  o.Set("faults", faults);
  o.Set("toEngineUsed", num(env, s.to_engine_used));
  o.Set("toEngineCapacity", num(env, s.to_engine_capacity));
  o.Set("fromEngineUsed", num(env, s.from_engine_used));
  o.Set("fromEngineCapacity", num(env, s.from_engine_capacity));
  return o;
}

Napi::Object features_to_js(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
#if defined(QPGATE_HAVE_NUMA)
  o.Set("numa", Napi::Boolean::New(env, true));
#else
  o.Set("numa", Napi::Boolean::New(env, false));
#endif
  o.Set("numaAvailable", Napi::Boolean::New(env, engine::libnuma_available()));
#if defined(QPGATE_HAVE_IBVERBS)
  o.Set("ibverbs", Napi::Boolean::New(env, true));
#else
  o.Set("ibverbs", Napi::Boolean::New(env, false));
#endif
  Napi::Object huge = Napi::Object::New(env);
  huge.Set("reserved2MiB", num(env, static_cast<std::int64_t>(engine::reserved_huge_pages())));
  huge.Set("transparent", engine::transparent_huge_pages_mode());
  o.Set("hugePages", huge);
#if defined(QPGATE_HAVE_WIRE)
  o.Set("crc", std::string(wire::crc_impl_name()));
#else
  o.Set("crc", env.Undefined());
#endif
  return o;
}

Napi::Object ring_layout_to_js(Napi::Env env) {
  namespace L = engine::ring_layout;
  Napi::Object o = Napi::Object::New(env);
  o.Set("tailOffset", num(env, L::kTailOffset));
  o.Set("headOffset", num(env, L::kHeadOffset));
  o.Set("waitingOffset", num(env, L::kWaitingOffset));
  o.Set("trailerLength", num(env, L::kTrailerLength));
  o.Set("headerLength", num(env, L::kHeaderLength));
  o.Set("paddingType", num(env, L::kPaddingType));
  o.Set("minCapacity", num(env, L::kMinCapacity));
  o.Set("maxCapacity", num(env, L::kMaxCapacity));
  Napi::Object types = Napi::Object::New(env);
  for (const gateway::NamedRecordType& t : gateway::kRecordTypes) types.Set(t.name, num(env, t.type));
  o.Set("recordTypes", types);
  return o;
}

}  // namespace qpgate::addon
