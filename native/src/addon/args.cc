#include "args.h"

#include <cmath>

namespace qpgate::addon {
namespace {

bool is_integer(double d) { return std::isfinite(d) && std::floor(d) == d; }

std::string interval(std::int64_t lo, std::int64_t hi) {
  return "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
}

}  // namespace

std::string describe(Napi::Value v) {
  if (v.IsUndefined()) return "undefined";
  if (v.IsNull()) return "null";
  if (v.IsString()) {
    // Appended piecewise: GCC 12's -Wrestrict misfires on "'" + s + "'" here.
    std::string out = "'";
    out.append(v.As<Napi::String>().Utf8Value());
    out.push_back('\'');
    return out;
  }
  if (v.IsNumber() || v.IsBigInt() || v.IsBoolean()) return v.ToString().Utf8Value();
  if (v.IsArray()) return "an array";
  if (v.IsBuffer() || v.IsTypedArray() || v.IsArrayBuffer()) return "a typed array";
  if (v.IsFunction()) return "a function";
  return "an object";
}

[[noreturn]] void type_error(Napi::Env env, const std::string& where, const std::string& expected, Napi::Value got) {
  throw Napi::TypeError::New(env, where + " must be " + expected + ", got " + describe(got));
}

[[noreturn]] void range_error(Napi::Env env, const std::string& where, const std::string& expected, Napi::Value got) {
  throw Napi::RangeError::New(env, where + " must be " + expected + ", got " + describe(got));
}

[[noreturn]] void unknown_key(Napi::Env env, const std::string& where, const char* noun, const std::string& key,
                              std::initializer_list<std::string_view> known) {
  std::string list;
  for (std::string_view k : known) (list += list.empty() ? "" : ", ") += k;
  throw Napi::TypeError::New(env, where + ": unknown " + noun + " '" + key + "' (known: " + list + ")");
}

void reject_unknown_keys(Napi::Env env, const Napi::Object& o, const std::string& where,
                         std::initializer_list<std::string_view> known) {
  const Napi::Array keys = o.GetPropertyNames();
  for (std::uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) unknown_key(env, where, "option", key, known);
  }
}

bool has(const Napi::Object& o, const char* key) { return o.Has(key) && !o.Get(key).IsUndefined(); }

Napi::Object to_object(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected) {
  if (!v.IsObject() || v.IsArray() || v.IsFunction()) type_error(env, where, expected, v);
  return v.As<Napi::Object>();
}

Napi::Array to_array(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected) {
  if (!v.IsArray()) type_error(env, where, expected, v);
  return v.As<Napi::Array>();
}

std::string to_str(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected) {
  if (!v.IsString()) type_error(env, where, expected, v);
  return v.As<Napi::String>().Utf8Value();
}

bool to_bool(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsBoolean()) type_error(env, where, "a boolean", v);
  return v.As<Napi::Boolean>().Value();
}

Napi::Function to_function(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsFunction()) type_error(env, where, "a function", v);
  return v.As<Napi::Function>();
}

std::uint32_t to_u32(Napi::Env env, Napi::Value v, const std::string& where, std::uint32_t lo, std::uint32_t hi) {
  const std::string expected = interval(lo, hi);
  if (!v.IsNumber()) type_error(env, where, expected, v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!is_integer(d) || d < lo || d > hi) range_error(env, where, expected, v);
  return static_cast<std::uint32_t>(d);
}

std::uint32_t to_u32(Napi::Env env, Napi::Value v, const std::string& where, std::uint32_t max) {
  return to_u32(env, v, where, 0, max);
}

std::int64_t to_safe_int(Napi::Env env, Napi::Value v, const std::string& where, std::int64_t lo) {
  const std::string expected = "an integer >= " + std::to_string(lo);
  if (!v.IsNumber()) type_error(env, where, expected, v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!is_integer(d) || d < static_cast<double>(lo) || d > kMaxSafeInteger) range_error(env, where, expected, v);
  return static_cast<std::int64_t>(d);
}

std::uint64_t to_u64(Napi::Env env, Napi::Value v, const std::string& where) {
  const char* expected = "a BigInt in 0..2^64-1 or a safe non-negative integer";
  if (v.IsBigInt()) {
    bool lossless = false;
    const std::uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) range_error(env, where, expected, v);
    return x;
  }
  if (!v.IsNumber()) type_error(env, where, expected, v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!is_integer(d) || d < 0 || d > kMaxSafeInteger) range_error(env, where, expected, v);
  return static_cast<std::uint64_t>(d);
}

std::uint64_t to_u64_or_decimal(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsString()) {
    if (!v.IsBigInt() && !v.IsNumber()) type_error(env, where, "a BigInt, an integer or a decimal string", v);
    return to_u64(env, v, where);
  }
  const std::string s = v.As<Napi::String>().Utf8Value();
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) {
    type_error(env, where, "a decimal string of a u64", v);
  }
  std::uint64_t x = 0;
  for (char c : s) {
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (x > (UINT64_MAX - digit) / 10) range_error(env, where, "a decimal u64 (at most 18446744073709551615)", v);
    x = x * 10 + digit;
  }
  return x;
}

std::int64_t to_i64(Napi::Env env, Napi::Value v, const std::string& where, std::int64_t lo) {
  const std::string expected = "an integer >= " + std::to_string(lo) + " (a safe integer Number or a BigInt)";
  std::int64_t x = 0;
  if (v.IsBigInt()) {
    bool lossless = false;
    x = v.As<Napi::BigInt>().Int64Value(&lossless);
    if (!lossless) range_error(env, where, expected, v);
  } else if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!is_integer(d) || std::fabs(d) > kMaxSafeInteger) range_error(env, where, expected, v);
    x = static_cast<std::int64_t>(d);
  } else {
    type_error(env, where, expected, v);
  }
  if (x < lo) range_error(env, where, expected, v);
  return x;
}

std::string choice_list(std::initializer_list<std::string_view> names) {
  std::string out;
  std::size_t i = 0;
  for (std::string_view n : names) {
    out += i == 0 ? "'" : i + 1 == names.size() ? " or '" : ", '";
    (out += n) += '\'';
    ++i;
  }
  return out;
}

std::size_t to_choice(Napi::Env env, Napi::Value v, const std::string& where, std::initializer_list<std::string_view> names) {
  if (v.IsString()) {
    const std::string s = v.As<Napi::String>().Utf8Value();
    std::size_t i = 0;
    for (std::string_view n : names) {
      if (s == n) return i;
      ++i;
    }
  }
  type_error(env, where, choice_list(names), v);
}

}  // namespace qpgate::addon
