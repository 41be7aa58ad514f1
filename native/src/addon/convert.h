// Engine reports and stats as plain JS objects (camelCase keys, CPU lists in
// the kernel's "0-3,8" text form, counters as Numbers).
#pragma once

#include <napi.h>

#include "engine/engine.h"

namespace qpgate::addon {

Napi::Object placement_to_js(Napi::Env env, const engine::PlacementReport& report);
Napi::Object stats_to_js(Napi::Env env, const engine::EngineStats& stats);
Napi::Object features_to_js(Napi::Env env);
Napi::Object ring_layout_to_js(Napi::Env env);

}  // namespace qpgate::addon
