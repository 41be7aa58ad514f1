#include "options.h"

#include <cmath>
#include <set>
#include <string>

namespace qpgate::addon {
namespace {

std::string describe(Napi::Value v) {
  if (v.IsUndefined()) return "undefined";
  if (v.IsNull()) return "null";
  if (v.IsString()) return "\"" + v.As<Napi::String>().Utf8Value() + "\"";
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15 ? std::to_string(static_cast<long long>(d))
                                                                          : std::to_string(d);
  }
  if (v.IsBoolean()) return v.As<Napi::Boolean>().Value() ? "true" : "false";
  if (v.IsFunction()) return "a function";
  if (v.IsArray()) return "an array";
  if (v.IsObject()) return "an object";
  return "a value of another type";
}

[[noreturn]] void fail(Napi::Env env, const std::string& option, const std::string& expected, Napi::Value got) {
  throw Napi::TypeError::New(env, "qpgate Engine: option '" + option + "' must be " + expected + ", got " +
                                      describe(got));
}

std::string get_string(Napi::Env env, Napi::Object o, const char* key, const std::string& fallback) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsString()) fail(env, key, "a string", v);
  return v.As<Napi::String>().Utf8Value();
}

// A non-negative integer (JS number, exact below 2^53).
std::int64_t get_integer(Napi::Env env, Napi::Object o, const std::string& name, const char* key,
                         std::int64_t fallback, std::int64_t min) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  const std::string expected = "an integer >= " + std::to_string(min);
  if (!v.IsNumber()) fail(env, name, expected, v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(min) || d > 9007199254740991.0) {
    fail(env, name, expected, v);
  }
  return static_cast<std::int64_t>(d);
}

void reject_unknown_keys(Napi::Env env, Napi::Object o, const std::set<std::string>& known, const std::string& where) {
  const Napi::Array keys = o.GetPropertyNames();
  for (std::uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    if (known.count(key) == 0) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Napi::TypeError::New(env, "qpgate Engine: unknown option '" + where + key + "' (known: " + list + ")");
    }
  }
}

}  // namespace

EngineOptions parse_engine_options(Napi::Env env, Napi::Value value) {
  EngineOptions out;
  engine::EngineConfig& c = out.config;
  if (value.IsUndefined()) return out;
  if (!value.IsObject() || value.IsArray() || value.IsFunction()) {
    throw Napi::TypeError::New(env, "qpgate Engine: options must be an object, got " + describe(value));
  }
  const Napi::Object o = value.As<Napi::Object>();
  reject_unknown_keys(env, o,
                      {"device", "cpus", "idle", "backoff", "toEngineCapacity", "fromEngineCapacity", "hugePages",
                       "sysfsRoot", "cycleThresholdNs", "onWake"},
                      "");

  c.device = get_string(env, o, "device", "");
  c.cpus = get_string(env, o, "cpus", "");
  if (!c.cpus.empty()) {
    const engine::CpuListParse parsed = engine::parse_cpu_list(c.cpus);
    if (!parsed.ok() || parsed.cpus.empty()) {
      fail(env, "cpus", "a CPU list like \"3\" or \"2-3,6\"", o.Get("cpus"));
    }
  }
  c.sysfs_root = get_string(env, o, "sysfsRoot", c.sysfs_root);

  const Napi::Value idle = o.Get("idle");
  if (!idle.IsUndefined()) {
    engine::IdleKind kind{};
    if (!idle.IsString() || !engine::parse_idle_kind(idle.As<Napi::String>().Utf8Value(), kind)) {
      fail(env, "idle", "one of \"spin\", \"yield\", \"backoff\"", idle);
    }
    c.idle = kind;
  }

  const Napi::Value backoff = o.Get("backoff");
  if (!backoff.IsUndefined()) {
    if (!backoff.IsObject() || backoff.IsArray() || backoff.IsFunction()) {
      fail(env, "backoff", "an object { maxSpins, maxYields, minParkNs, maxParkNs }", backoff);
    }
    const Napi::Object b = backoff.As<Napi::Object>();
    reject_unknown_keys(env, b, {"maxSpins", "maxYields", "minParkNs", "maxParkNs"}, "backoff.");
    c.backoff.max_spins = static_cast<std::uint64_t>(
        get_integer(env, b, "backoff.maxSpins", "maxSpins", static_cast<std::int64_t>(c.backoff.max_spins), 0));
    c.backoff.max_yields = static_cast<std::uint64_t>(
        get_integer(env, b, "backoff.maxYields", "maxYields", static_cast<std::int64_t>(c.backoff.max_yields), 0));
    c.backoff.min_park_ns = get_integer(env, b, "backoff.minParkNs", "minParkNs", c.backoff.min_park_ns, 1);
    c.backoff.max_park_ns = get_integer(env, b, "backoff.maxParkNs", "maxParkNs", c.backoff.max_park_ns, 1);
    if (c.backoff.max_park_ns < c.backoff.min_park_ns) {
      fail(env, "backoff.maxParkNs", ">= backoff.minParkNs (" + std::to_string(c.backoff.min_park_ns) + ")",
           b.Get("maxParkNs"));
    }
  }

  for (const auto& [key, field] : {std::pair<const char*, std::int64_t*>{"toEngineCapacity", &c.to_engine_capacity},
                                   std::pair<const char*, std::int64_t*>{"fromEngineCapacity", &c.from_engine_capacity}}) {
    *field = get_integer(env, o, key, key, *field, 0);
    if (!engine::valid_ring_capacity(*field)) {
      fail(env, key,
           "a power of two from " + std::to_string(engine::ring_layout::kMinCapacity) + " to " +
               std::to_string(engine::ring_layout::kMaxCapacity),
           o.Get(key));
    }
  }

  const Napi::Value huge = o.Get("hugePages");
  if (!huge.IsUndefined()) {
    if (!huge.IsBoolean()) fail(env, "hugePages", "a boolean", huge);
    c.huge_pages = huge.As<Napi::Boolean>().Value();
  }
  c.cycle_threshold_ns = get_integer(env, o, "cycleThresholdNs", "cycleThresholdNs", c.cycle_threshold_ns, 1);

  const Napi::Value on_wake = o.Get("onWake");
  if (!on_wake.IsUndefined()) {
    if (!on_wake.IsFunction()) fail(env, "onWake", "a function", on_wake);
    out.on_wake = on_wake.As<Napi::Function>();
  }

  const std::string error = engine::validate(c);  // belt and braces: the core's own rules
  if (!error.empty()) throw Napi::TypeError::New(env, "qpgate Engine: " + error);
  return out;
}

}  // namespace qpgate::addon
