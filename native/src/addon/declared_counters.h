// Declared counters (the .def lists of native/src: engine_counters.def,
// feed_counters.def) to JS: each under the camelCase of its declared name,
// a kFlag one as a boolean, so no wrap re-spells a counter's name.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/counters.h"
#include "js_number.h"

namespace qpgate::addon {

// "duty_cycles" -> "dutyCycles", "line_a_frames" -> "lineAFrames".
std::string js_name(std::string_view declared);

// Sets every counter `for_each` gives on `o`: for_each(fn) calls
// fn(std::string_view name, engine::CounterKind kind, std::uint64_t value).
template <class ForEach>
void set_counters(Napi::Env env, Napi::Object o, ForEach&& for_each) {
  for_each([&](std::string_view name, engine::CounterKind kind, std::uint64_t v) {
    if (kind == engine::CounterKind::kFlag) {
      o.Set(js_name(name), Napi::Boolean::New(env, v != 0));
    } else {
      o.Set(js_name(name), num(env, v));
    }
  });
}

}  // namespace qpgate::addon
