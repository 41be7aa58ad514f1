// The addon's one argument parser: every wrap reads JS arguments and option
// objects through these, so every refusal has one shape,
//   "<where> must be <expected>, got <value>"
// where `where` names the call and the option ("qp.modify: timeout",
// "orders.createService: config.journal.path"), <expected> the allowed type,
// values or range, and <value> is describe(got). A Number outside its range
// (or not an integer where one is needed) is a RangeError, as Node's own
// ERR_OUT_OF_RANGE is; every other refusal (wrong type, a value not among the
// allowed ones, an unknown key) is a TypeError, as ERR_INVALID_ARG_TYPE and
// ERR_INVALID_ARG_VALUE are.
#pragma once

#include <napi.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace qpgate::addon {

// The largest integer a JS Number holds exactly (Number.MAX_SAFE_INTEGER).
inline constexpr double kMaxSafeInteger = 9007199254740991.0;

// A JS value as error messages show it: 'abc', 42, 5, true, null, undefined,
// an array, a typed array, a function, an object.
std::string describe(Napi::Value v);
[[noreturn]] void type_error(Napi::Env env, const std::string& where, const std::string& expected, Napi::Value got);
[[noreturn]] void range_error(Napi::Env env, const std::string& where, const std::string& expected, Napi::Value got);
// "<where>: unknown <noun> '<key>' (known: a, b, c)", a TypeError.
[[noreturn]] void unknown_key(Napi::Env env, const std::string& where, const char* noun, const std::string& key,
                              std::initializer_list<std::string_view> known);
// Throws unknown_key for the first key of `o` not in `known`.
void reject_unknown_keys(Napi::Env env, const Napi::Object& o, const std::string& where,
                         std::initializer_list<std::string_view> known);

// Given: present and not undefined (an option left out reads as undefined).
bool has(const Napi::Object& o, const char* key);

// Types. `expected` lets a caller show the shape it wants ("an object {qpn, psn, gid, mtu}").
Napi::Object to_object(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected = "an object");
Napi::Array to_array(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected = "an array");
std::string to_str(Napi::Env env, Napi::Value v, const std::string& where, const std::string& expected = "a string");
bool to_bool(Napi::Env env, Napi::Value v, const std::string& where);
Napi::Function to_function(Napi::Env env, Napi::Value v, const std::string& where);

// Integers. A Number that is an integer in [lo, hi] ("an integer in lo..hi").
std::uint32_t to_u32(Napi::Env env, Napi::Value v, const std::string& where, std::uint32_t lo, std::uint32_t hi);
// The same for 0..max.
std::uint32_t to_u32(Napi::Env env, Napi::Value v, const std::string& where, std::uint32_t max = 0xffffffffu);
// A safe integer Number >= lo ("an integer >= lo").
std::int64_t to_safe_int(Napi::Env env, Napi::Value v, const std::string& where, std::int64_t lo);
// A BigInt in 0..2^64-1 or a safe non-negative integer Number.
std::uint64_t to_u64(Napi::Env env, Napi::Value v, const std::string& where);
// As to_u64, or a decimal string (as 64-bit ids travel in JSON).
std::uint64_t to_u64_or_decimal(Napi::Env env, Napi::Value v, const std::string& where);
// A safe integer Number or a BigInt in the int64 range, >= lo.
std::int64_t to_i64(Napi::Env env, Napi::Value v, const std::string& where, std::int64_t lo);

// One of `names` (a string): its index in `names`.
std::size_t to_choice(Napi::Env env, Napi::Value v, const std::string& where, std::initializer_list<std::string_view> names);
// "'a', 'b' or 'c'": how to_choice and the enum parsers list their choices.
std::string choice_list(std::initializer_list<std::string_view> names);

}  // namespace qpgate::addon
