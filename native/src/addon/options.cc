#include "options.h"

#include <string>

#include "args.h"

namespace qpgate::addon {
namespace {

const std::string kWhere = "qpgate Engine: ";

std::string get_string(Napi::Env env, Napi::Object o, const char* key, const std::string& fallback) {
  return has(o, key) ? to_str(env, o.Get(key), kWhere + key) : fallback;
}

// A non-negative integer (JS number, exact below 2^53).
std::int64_t get_integer(Napi::Env env, Napi::Object o, const std::string& name, const char* key,
                         std::int64_t fallback, std::int64_t min) {
  return has(o, key) ? to_safe_int(env, o.Get(key), kWhere + name, min) : fallback;
}

void read_backoff(Napi::Env env, Napi::Value backoff, engine::EngineConfig& c) {
  const Napi::Object b = to_object(env, backoff, kWhere + "backoff", "an object { maxSpins, maxYields, minParkNs, maxParkNs }");
  reject_unknown_keys(env, b, kWhere + "backoff", {"maxSpins", "maxYields", "minParkNs", "maxParkNs"});
  c.backoff.max_spins = static_cast<std::uint64_t>(
      get_integer(env, b, "backoff.maxSpins", "maxSpins", static_cast<std::int64_t>(c.backoff.max_spins), 0));
  c.backoff.max_yields = static_cast<std::uint64_t>(
      get_integer(env, b, "backoff.maxYields", "maxYields", static_cast<std::int64_t>(c.backoff.max_yields), 0));
  c.backoff.min_park_ns = get_integer(env, b, "backoff.minParkNs", "minParkNs", c.backoff.min_park_ns, 1);
  c.backoff.max_park_ns = get_integer(env, b, "backoff.maxParkNs", "maxParkNs", c.backoff.max_park_ns, 1);
  if (c.backoff.max_park_ns < c.backoff.min_park_ns) {
    range_error(env, kWhere + "backoff.maxParkNs", ">= backoff.minParkNs (" + std::to_string(c.backoff.min_park_ns) + ")",
                b.Get("maxParkNs"));
  }
}

}  // namespace

EngineOptions parse_engine_options(Napi::Env env, Napi::Value value) {
  EngineOptions out;
  engine::EngineConfig& c = out.config;
  if (value.IsUndefined()) return out;
  const Napi::Object o = to_object(env, value, "qpgate Engine: options");
  reject_unknown_keys(env, o, "qpgate Engine",
                      {"device", "cpus", "idle", "backoff", "toEngineCapacity", "fromEngineCapacity", "hugePages",
                       "sysfsRoot", "cycleThresholdNs", "lendWhenParked", "onWake"});

  c.device = get_string(env, o, "device", "");
  c.cpus = get_string(env, o, "cpus", "");
  if (!c.cpus.empty()) {
    const engine::CpuListParse parsed = engine::parse_cpu_list(c.cpus);
    if (!parsed.ok() || parsed.cpus.empty()) type_error(env, kWhere + "cpus", "a CPU list like '3' or '2-3,6'", o.Get("cpus"));
  }
  c.sysfs_root = get_string(env, o, "sysfsRoot", c.sysfs_root);

  if (has(o, "idle")) {
    const Napi::Value idle = o.Get("idle");
    engine::IdleKind kind{};
    if (!idle.IsString() || !engine::parse_idle_kind(idle.As<Napi::String>().Utf8Value(), kind)) {
      type_error(env, kWhere + "idle", choice_list({"spin", "yield", "backoff"}), idle);
    }
    c.idle = kind;
  }
  if (has(o, "backoff")) read_backoff(env, o.Get("backoff"), c);

  for (const auto& [key, field] : {std::pair<const char*, std::int64_t*>{"toEngineCapacity", &c.to_engine_capacity},
                                   std::pair<const char*, std::int64_t*>{"fromEngineCapacity", &c.from_engine_capacity}}) {
    *field = get_integer(env, o, key, key, *field, 0);
    if (!engine::valid_ring_capacity(*field)) {
      range_error(env, kWhere + key,
                  "a power of two from " + std::to_string(engine::ring_layout::kMinCapacity) + " to " +
                      std::to_string(engine::ring_layout::kMaxCapacity),
                  o.Get(key));
    }
  }

  if (has(o, "hugePages")) c.huge_pages = to_bool(env, o.Get("hugePages"), kWhere + "hugePages");
  if (has(o, "lendWhenParked")) c.lend_when_parked = to_bool(env, o.Get("lendWhenParked"), kWhere + "lendWhenParked");
  c.cycle_threshold_ns = get_integer(env, o, "cycleThresholdNs", "cycleThresholdNs", c.cycle_threshold_ns, 1);
  if (has(o, "onWake")) out.on_wake = to_function(env, o.Get("onWake"), kWhere + "onWake");

  const std::string error = engine::validate(c);  // belt and braces: the core's own rules
  if (!error.empty()) throw Napi::RangeError::New(env, "qpgate Engine: " + error);
  return out;
}

}  // namespace qpgate::addon
