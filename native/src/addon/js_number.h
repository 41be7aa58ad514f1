// One conversion of a C++ number to a JS Number for every addon file.
// Counters above 2^53 lose their low bits, as every JS Number does.
#pragma once

#include <napi.h>

#include <type_traits>

namespace qpgate::addon {

template <class T>
  requires std::is_arithmetic_v<T>
Napi::Number num(Napi::Env env, T v) {
  return Napi::Number::New(env, static_cast<double>(v));
}

}  // namespace qpgate::addon
