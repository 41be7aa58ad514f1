// JS options -> EngineConfig, with a TypeError that names the option, says
// what was expected and shows what was given.
#pragma once

#include <napi.h>

#include "engine/engine.h"

namespace qpgate::addon {

struct EngineOptions {
  engine::EngineConfig config;
  Napi::Function on_wake;  // empty when not given
};

// Throws Napi::TypeError (as a C++ exception, NAPI_CPP_EXCEPTIONS) on bad input.
EngineOptions parse_engine_options(Napi::Env env, Napi::Value options);

}  // namespace qpgate::addon
