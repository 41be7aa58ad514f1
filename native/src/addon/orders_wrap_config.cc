#include "orders_wrap_config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "verbs_convert.h"

namespace qpgate::addon {
namespace {

constexpr const char* kCreate = "orders.createService: config";
constexpr const char* kOpen = "service.openSession: options";

bool has(const Napi::Object& o, const char* key) { return o.Has(key) && !o.Get(key).IsUndefined(); }

[[noreturn]] void range_error(Napi::Env env, const std::string& where, const std::string& expected, Napi::Value got) {
  throw Napi::RangeError::New(env, where + " must be " + expected + ", got " + describe(got));
}

Napi::Object object(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsObject() || v.IsArray()) type_error(env, where, "an object", v);
  return v.As<Napi::Object>();
}

Napi::Array array(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsArray()) type_error(env, where, "an array", v);
  return v.As<Napi::Array>();
}

// An integer Number in [lo, hi]: TypeError if not an integer Number, RangeError if outside.
std::uint32_t u32(Napi::Env env, Napi::Value v, const std::string& where, std::uint32_t lo, std::uint32_t hi) {
  if (!v.IsNumber() || std::floor(v.As<Napi::Number>().DoubleValue()) != v.As<Napi::Number>().DoubleValue()) {
    type_error(env, where, "an integer", v);
  }
  const double d = v.As<Napi::Number>().DoubleValue();
  if (d < lo || d > hi) range_error(env, where, "in " + std::to_string(lo) + ".." + std::to_string(hi), v);
  return static_cast<std::uint32_t>(d);
}

// A u64 as a BigInt, a safe integer Number or a decimal string (as account ids travel in JSON).
std::uint64_t u64(Napi::Env env, Napi::Value v, const std::string& where) {
  if (v.IsString()) {
    const std::string s = v.As<Napi::String>().Utf8Value();
    std::size_t used = 0;
    if (!s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string::npos) {
      try {
        const unsigned long long x = std::stoull(s, &used, 10);
        if (used == s.size()) return x;
      } catch (const std::exception&) {
      }
    }
    range_error(env, where, "a decimal u64", v);
  }
  if (v.IsBigInt() || v.IsNumber()) {
    if (v.IsNumber()) {
      const double d = v.As<Napi::Number>().DoubleValue();
      if (std::floor(d) != d) type_error(env, where, "an integer", v);
      if (d < 0 || d > 9007199254740991.0) range_error(env, where, "a safe non-negative integer (or a BigInt)", v);
      return static_cast<std::uint64_t>(d);
    }
    bool lossless = false;
    const std::uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) range_error(env, where, "a BigInt in 0..2^64-1", v);
    return x;
  }
  type_error(env, where, "a BigInt, an integer or a decimal string", v);
}

// A positive price/quantity mantissa (int64) as a safe integer Number or a BigInt.
std::int64_t i64(Napi::Env env, Napi::Value v, const std::string& where, std::int64_t lo) {
  std::int64_t x = 0;
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (std::floor(d) != d) type_error(env, where, "an integer", v);
    if (std::fabs(d) > 9007199254740991.0) range_error(env, where, "a safe integer (or a BigInt)", v);
    x = static_cast<std::int64_t>(d);
  } else if (v.IsBigInt()) {
    bool lossless = false;
    x = v.As<Napi::BigInt>().Int64Value(&lossless);
    if (!lossless) range_error(env, where, "a BigInt in the int64 range", v);
  } else {
    type_error(env, where, "an integer Number or a BigInt", v);
  }
  if (x < lo) range_error(env, where, ">= " + std::to_string(lo), v);
  return x;
}

std::string one_of(Napi::Env env, Napi::Value v, const std::string& where, std::initializer_list<const char*> names) {
  std::string list;
  for (const char* n : names) list += (list.empty() ? "'" : ", '") + std::string(n) + "'";
  if (!v.IsString()) type_error(env, where, "one of " + list, v);
  const std::string s = v.As<Napi::String>().Utf8Value();
  for (const char* n : names) {
    if (s == n) return s;
  }
  range_error(env, where, "one of " + list, v);
}

orders::JournalConfig journal_of(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = object(env, v, where);
  orders::JournalConfig j;
  if (!o.Get("path").IsString() || o.Get("path").As<Napi::String>().Utf8Value().empty()) {
    type_error(env, where + ".path", "a non-empty string", o.Get("path"));
  }
  j.path = o.Get("path").As<Napi::String>().Utf8Value();
  // Default 'none': records are written (write(2)) before any answer goes out, so a process crash
  // (SIGKILL) loses nothing acknowledged, without an fdatasync on the ack path (≈ 3.5 ms per
  // group on this project's VMs, against ≈ 3 µs receive → post); 'group'/'every' add fdatasync
  // for machine crashes.
  const std::string sync = has(o, "sync") ? one_of(env, o.Get("sync"), where + ".sync", {"every", "group", "none"}) : "none";
  j.sync = sync == "every" ? orders::SyncPolicy::kEveryRecord
           : sync == "none" ? orders::SyncPolicy::kNoSync
                            : orders::SyncPolicy::kGroupCommit;
  if (has(o, "groupMaxRecords")) j.group_max_records = u32(env, o.Get("groupMaxRecords"), where + ".groupMaxRecords", 1, 1u << 20);
  if (has(o, "groupMaxDelayUs")) j.group_max_delay_us = u32(env, o.Get("groupMaxDelayUs"), where + ".groupMaxDelayUs", 0, 1'000'000);
  return j;
}

orders::CollarConfig collar_of(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = object(env, v, where);
  orders::CollarConfig c;
  const std::string mode = one_of(env, o.Get("mode"), where + ".mode", {"none", "ticks", "bps"});
  c.mode = mode == "ticks" ? orders::CollarMode::kTicks : mode == "bps" ? orders::CollarMode::kBps : orders::CollarMode::kNone;
  if (c.mode != orders::CollarMode::kNone) {
    c.width = i64(env, o.Get("width"), where + ".width", 1);
    if (has(o, "referencePrice")) c.reference_price = i64(env, o.Get("referencePrice"), where + ".referencePrice", 0);
  }
  return c;
}

void instrument_of(Napi::Env env, Napi::Value v, const std::string& where, bool needs_channel, orders::ServiceConfig& out) {
  Napi::Object o = object(env, v, where);
  orders::InstrumentConfig ic;
  ic.book.instrument_id = u32(env, o.Get("id"), where + ".id", 1, 0xffffffffu);
  ic.book.tick_size = i64(env, o.Get("tickSize"), where + ".tickSize", 1);
  ic.book.min_price = i64(env, o.Get("minPrice"), where + ".minPrice", 1);
  ic.book.max_price = i64(env, o.Get("maxPrice"), where + ".maxPrice", 1);
  if (ic.book.max_price < ic.book.min_price) range_error(env, where + ".maxPrice", ">= minPrice", o.Get("maxPrice"));
  if (ic.book.min_price % ic.book.tick_size != 0 || ic.book.max_price % ic.book.tick_size != 0) {
    range_error(env, where + ".minPrice/maxPrice", "multiples of tickSize " + std::to_string(ic.book.tick_size), o.Get("minPrice"));
  }
  // The book holds one level per tick of the band: keep it to a sane size.
  if ((ic.book.max_price - ic.book.min_price) / ic.book.tick_size >= (1 << 24)) {
    range_error(env, where + ".maxPrice", "at most 2^24 ticks above minPrice", o.Get("maxPrice"));
  }
  ic.max_quantity = i64(env, o.Get("maxQuantity"), where + ".maxQuantity", 1);
  if (has(o, "selfMatch")) {
    const std::string p = one_of(env, o.Get("selfMatch"), where + ".selfMatch", {"cancel-newest", "cancel-oldest", "cancel-both"});
    ic.book.self_match = p == "cancel-oldest" ? orders::SelfMatchPolicy::kCancelOldest
                         : p == "cancel-both" ? orders::SelfMatchPolicy::kCancelBoth
                                              : orders::SelfMatchPolicy::kCancelNewest;
  }
  if (has(o, "collar")) ic.collar = collar_of(env, o.Get("collar"), where + ".collar");
  orders::InstrumentFeed feed;
  feed.instrument_id = ic.book.instrument_id;
  if (has(o, "channel")) {
    feed.channel = static_cast<std::uint16_t>(u32(env, o.Get("channel"), where + ".channel", 0, 0xffff));
  } else if (needs_channel) {
    type_error(env, where + ".channel", "a feed channel id (feedPublisherId is set)", o.Get("channel"));
  }
  if (has(o, "bookDepth")) feed.depth = static_cast<std::uint8_t>(u32(env, o.Get("bookDepth"), where + ".bookDepth", 1, 255));
  out.handler.instruments.push_back(ic);
  out.feeds.push_back(feed);
}

// The integer settings of config_limits.def, each where it is given; the
// derived defaults when backPressureMessages or maxQueuedMessages is not.
void read_limits(Napi::Env env, const Napi::Object& o, const std::string& w, orders::ServiceConfig& c) {
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (has(o, #js)) c.member = u32(env, o.Get(#js), w + "." #js, lo, hi);
  QPGATE_ORDERS_SESSION_LIMITS(QPGATE_X)
#undef QPGATE_X
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (has(o, #js)) c.handler.member = u32(env, o.Get(#js), w + "." #js, lo, hi);
  QPGATE_ORDERS_HANDLER_LIMITS(QPGATE_X)
#undef QPGATE_X
  if (!has(o, "backPressureMessages")) c.back_pressure_messages = 4 * c.recv_depth;
  if (!has(o, "maxQueuedMessages")) c.max_queued_messages = std::min(c.resend_capacity, std::max(c.back_pressure_messages, 4096u));
}

}  // namespace

orders::ServiceConfig to_service_config(Napi::Env env, Napi::Value v) {
  const std::string w = kCreate;
  Napi::Object o = object(env, v, w);
  orders::ServiceConfig c;
  c.handler.journal = journal_of(env, o.Get("journal"), w + ".journal");
  if (has(o, "feedPublisherId")) c.feed_publisher_id = u32(env, o.Get("feedPublisherId"), w + ".feedPublisherId", 1, 0xffffffffu);
  Napi::Array ins = array(env, o.Get("instruments"), w + ".instruments");
  if (ins.Length() == 0) range_error(env, w + ".instruments", "a non-empty array", ins);
  for (std::uint32_t i = 0; i < ins.Length(); ++i) {
    instrument_of(env, ins.Get(i), w + ".instruments[" + std::to_string(i) + "]", c.feed_publisher_id != 0, c);
  }
  Napi::Array acc = array(env, o.Get("accounts"), w + ".accounts");
  for (std::uint32_t i = 0; i < acc.Length(); ++i) {
    const std::string where = w + ".accounts[" + std::to_string(i) + "]";
    Napi::Object a = object(env, acc.Get(i), where);
    c.handler.accounts.push_back(orders::AccountConfig{u64(env, a.Get("account"), where + ".account"),
                                                       u64(env, a.Get("creditLimit"), where + ".creditLimit")});
  }
  read_limits(env, o, w, c);
  // Duplicates and the rest: the same checks the C++ API makes.
  if (std::string e = orders::validate(c); !e.empty()) throw Napi::RangeError::New(env, w + "." + e);
  return c;
}

orders::SessionRequest to_session_request(Napi::Env env, Napi::Value v) {
  const std::string w = kOpen;
  Napi::Object o = object(env, v, w);
  orders::SessionRequest r;
  r.session = u32(env, o.Get("session"), w + ".session", 1, 0xffffffffu);
  r.role = one_of(env, o.Get("role"), w + ".role", {"trading", "risk"}) == "risk" ? orders::SessionRole::kRisk
                                                                                   : orders::SessionRole::kTrading;
  Napi::Array acc = array(env, o.Get("accounts"), w + ".accounts");
  for (std::uint32_t i = 0; i < acc.Length(); ++i) r.accounts.push_back(u64(env, acc.Get(i), w + ".accounts[" + std::to_string(i) + "]"));
  if (has(o, "throttle")) {
    Napi::Object t = object(env, o.Get("throttle"), w + ".throttle");
    r.throttle.orders_per_second = u32(env, t.Get("ordersPerSecond"), w + ".throttle.ordersPerSecond", 0, 100'000'000);
    r.throttle.burst = u32(env, t.Get("burst"), w + ".throttle.burst", 1, 100'000'000);
  }
  if (has(o, "cancelOnDisconnect")) {
    if (!o.Get("cancelOnDisconnect").IsBoolean()) type_error(env, w + ".cancelOnDisconnect", "a boolean", o.Get("cancelOnDisconnect"));
    r.cancel_on_disconnect = o.Get("cancelOnDisconnect").As<Napi::Boolean>().Value();
  }
  Napi::Object remote = object(env, o.Get("remote"), w + ".remote");
  r.remote.qpn = u32(env, remote.Get("qpn"), w + ".remote.qpn", 1, 0xFFFFFF);
  r.remote.psn = u32(env, remote.Get("psn"), w + ".remote.psn", 0, 0xFFFFFF);
  r.remote.gid = to_gid(env, remote.Get("gid"), w + ".remote.gid");
  const std::uint32_t mtu = u32(env, remote.Get("mtu"), w + ".remote.mtu", 256, 4096);
  if (!verbs::mtu_from_bytes(mtu, &r.remote.mtu)) range_error(env, w + ".remote.mtu", "256, 512, 1024, 2048 or 4096", remote.Get("mtu"));
  r.remote.alt_gid = to_alternate_gid(env, remote, w + ".remote.alternateGid");
  if (has(remote, "ackHoldUs")) {
    r.remote.ack_hold_ns = std::int64_t{u32(env, remote.Get("ackHoldUs"), w + ".remote.ackHoldUs", 0, 1'000'000)} * 1000;
  }
  return r;
}

}  // namespace qpgate::addon
