#include "orders_wrap_config.h"

#include <algorithm>
#include <string>

#include "args.h"
#include "verbs_convert.h"

namespace qpgate::addon {
namespace {

constexpr const char* kCreate = "orders.createService: config";
constexpr const char* kOpen = "service.openSession: options";

orders::JournalConfig journal_of(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = to_object(env, v, where);
  orders::JournalConfig j;
  j.path = to_str(env, o.Get("path"), where + ".path", "a non-empty string");
  if (j.path.empty()) type_error(env, where + ".path", "a non-empty string", o.Get("path"));
  // Default 'none': records are written (write(2)) before any answer goes out, so a process crash
  // (SIGKILL) loses nothing acknowledged, without an fdatasync on the ack path (≈ 3.5 ms per
  // group on this project's VMs, against ≈ 3 µs receive → post); 'group'/'every' add fdatasync
  // for machine crashes.
  constexpr orders::SyncPolicy kSyncs[] = {orders::SyncPolicy::kEveryRecord, orders::SyncPolicy::kGroupCommit,
                                           orders::SyncPolicy::kNoSync};
  j.sync = has(o, "sync") ? kSyncs[to_choice(env, o.Get("sync"), where + ".sync", {"every", "group", "none"})]
                          : orders::SyncPolicy::kNoSync;
  if (has(o, "groupMaxRecords")) j.group_max_records = to_u32(env, o.Get("groupMaxRecords"), where + ".groupMaxRecords", 1, 1u << 20);
  if (has(o, "groupMaxDelayUs")) j.group_max_delay_us = to_u32(env, o.Get("groupMaxDelayUs"), where + ".groupMaxDelayUs", 0, 1'000'000);
  return j;
}

orders::CollarConfig collar_of(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = to_object(env, v, where);
  orders::CollarConfig c;
  constexpr orders::CollarMode kModes[] = {orders::CollarMode::kNone, orders::CollarMode::kTicks, orders::CollarMode::kBps};
  c.mode = kModes[to_choice(env, o.Get("mode"), where + ".mode", {"none", "ticks", "bps"})];
  if (c.mode != orders::CollarMode::kNone) {
    c.width = to_i64(env, o.Get("width"), where + ".width", 1);
    if (has(o, "referencePrice")) c.reference_price = to_i64(env, o.Get("referencePrice"), where + ".referencePrice", 0);
  }
  return c;
}

void instrument_of(Napi::Env env, Napi::Value v, const std::string& where, bool needs_channel, orders::ServiceConfig& out) {
  Napi::Object o = to_object(env, v, where);
  orders::InstrumentConfig ic;
  ic.book.instrument_id = to_u32(env, o.Get("id"), where + ".id", 1, 0xffffffffu);
  ic.book.tick_size = to_i64(env, o.Get("tickSize"), where + ".tickSize", 1);
  ic.book.min_price = to_i64(env, o.Get("minPrice"), where + ".minPrice", 1);
  ic.book.max_price = to_i64(env, o.Get("maxPrice"), where + ".maxPrice", 1);
  if (ic.book.max_price < ic.book.min_price) range_error(env, where + ".maxPrice", ">= minPrice", o.Get("maxPrice"));
  if (ic.book.min_price % ic.book.tick_size != 0 || ic.book.max_price % ic.book.tick_size != 0) {
    range_error(env, where + ".minPrice/maxPrice", "multiples of tickSize " + std::to_string(ic.book.tick_size), o.Get("minPrice"));
  }
  // The book holds one level per tick of the band: keep it to a sane size.
  if ((ic.book.max_price - ic.book.min_price) / ic.book.tick_size >= (1 << 24)) {
    range_error(env, where + ".maxPrice", "at most 2^24 ticks above minPrice", o.Get("maxPrice"));
  }
  ic.max_quantity = to_i64(env, o.Get("maxQuantity"), where + ".maxQuantity", 1);
  if (has(o, "selfMatch")) {
    constexpr orders::SelfMatchPolicy kPolicies[] = {orders::SelfMatchPolicy::kCancelNewest, orders::SelfMatchPolicy::kCancelOldest,
                                                     orders::SelfMatchPolicy::kCancelBoth};
    ic.book.self_match = kPolicies[to_choice(env, o.Get("selfMatch"), where + ".selfMatch", {"cancel-newest", "cancel-oldest", "cancel-both"})];
  }
  if (has(o, "collar")) ic.collar = collar_of(env, o.Get("collar"), where + ".collar");
  orders::InstrumentFeed feed;
  feed.instrument_id = ic.book.instrument_id;
  if (has(o, "channel")) {
    feed.channel = static_cast<std::uint16_t>(to_u32(env, o.Get("channel"), where + ".channel", 0, 0xffff));
  } else if (needs_channel) {
    type_error(env, where + ".channel", "a feed channel id (feedPublisherId is set)", o.Get("channel"));
  }
  if (has(o, "bookDepth")) feed.depth = static_cast<std::uint8_t>(to_u32(env, o.Get("bookDepth"), where + ".bookDepth", 1, 255));
  out.handler.instruments.push_back(ic);
  out.feeds.push_back(feed);
}

// The integer settings of config_limits.def, each where it is given; the
// derived defaults when backPressureMessages or maxQueuedMessages is not.
void read_limits(Napi::Env env, const Napi::Object& o, const std::string& w, orders::ServiceConfig& c) {
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (has(o, #js)) c.member = to_u32(env, o.Get(#js), w + "." #js, lo, hi);
  QPGATE_ORDERS_SESSION_LIMITS(QPGATE_X)
#undef QPGATE_X
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (has(o, #js)) c.handler.member = to_u32(env, o.Get(#js), w + "." #js, lo, hi);
  QPGATE_ORDERS_HANDLER_LIMITS(QPGATE_X)
#undef QPGATE_X
  if (!has(o, "backPressureMessages")) c.back_pressure_messages = 4 * c.recv_depth;
  if (!has(o, "maxQueuedMessages")) c.max_queued_messages = std::min(c.resend_capacity, std::max(c.back_pressure_messages, 4096u));
}

}  // namespace

orders::ServiceConfig to_service_config(Napi::Env env, Napi::Value v) {
  const std::string w = kCreate;
  Napi::Object o = to_object(env, v, w);
  orders::ServiceConfig c;
  c.handler.journal = journal_of(env, o.Get("journal"), w + ".journal");
  if (has(o, "feedPublisherId")) c.feed_publisher_id = to_u32(env, o.Get("feedPublisherId"), w + ".feedPublisherId", 1, 0xffffffffu);
  Napi::Array ins = to_array(env, o.Get("instruments"), w + ".instruments");
  if (ins.Length() == 0) range_error(env, w + ".instruments", "a non-empty array", ins);
  for (std::uint32_t i = 0; i < ins.Length(); ++i) {
    instrument_of(env, ins.Get(i), w + ".instruments[" + std::to_string(i) + "]", c.feed_publisher_id != 0, c);
  }
  Napi::Array acc = to_array(env, o.Get("accounts"), w + ".accounts");
  for (std::uint32_t i = 0; i < acc.Length(); ++i) {
    const std::string where = w + ".accounts[" + std::to_string(i) + "]";
    Napi::Object a = to_object(env, acc.Get(i), where);
    c.handler.accounts.push_back(orders::AccountConfig{to_u64_or_decimal(env, a.Get("account"), where + ".account"),
                                                       to_u64_or_decimal(env, a.Get("creditLimit"), where + ".creditLimit")});
  }
  read_limits(env, o, w, c);
  // Duplicates and the rest: the same checks the C++ API makes.
  if (std::string e = orders::validate(c); !e.empty()) throw Napi::RangeError::New(env, w + "." + e);
  return c;
}

orders::SessionRequest to_session_request(Napi::Env env, Napi::Value v) {
  const std::string w = kOpen;
  Napi::Object o = to_object(env, v, w);
  orders::SessionRequest r;
  r.session = to_u32(env, o.Get("session"), w + ".session", 1, 0xffffffffu);
  r.role = to_choice(env, o.Get("role"), w + ".role", {"trading", "risk"}) == 1 ? orders::SessionRole::kRisk
                                                                               : orders::SessionRole::kTrading;
  if (has(o, "device")) r.device = to_device_choice(env, o.Get("device"), w + ".device");
  Napi::Array acc = to_array(env, o.Get("accounts"), w + ".accounts");
  for (std::uint32_t i = 0; i < acc.Length(); ++i) r.accounts.push_back(to_u64_or_decimal(env, acc.Get(i), w + ".accounts[" + std::to_string(i) + "]"));
  if (has(o, "throttle")) {
    Napi::Object t = to_object(env, o.Get("throttle"), w + ".throttle");
    r.throttle.orders_per_second = to_u32(env, t.Get("ordersPerSecond"), w + ".throttle.ordersPerSecond", 0, 100'000'000);
    r.throttle.burst = to_u32(env, t.Get("burst"), w + ".throttle.burst", 1, 100'000'000);
  }
  if (has(o, "cancelOnDisconnect")) {
    r.cancel_on_disconnect = to_bool(env, o.Get("cancelOnDisconnect"), w + ".cancelOnDisconnect");
  }
  Napi::Object remote = to_object(env, o.Get("remote"), w + ".remote");
  r.remote.qpn = to_u32(env, remote.Get("qpn"), w + ".remote.qpn", 1, 0xFFFFFF);
  r.remote.psn = to_u32(env, remote.Get("psn"), w + ".remote.psn", 0, 0xFFFFFF);
  r.remote.gid = to_gid(env, remote.Get("gid"), w + ".remote.gid");
  r.remote.mtu = to_path_mtu(env, remote.Get("mtu"), w + ".remote.mtu");
  r.remote.alt_gid = to_alternate_gid(env, remote, w + ".remote.alternateGid");
  if (has(remote, "ackHoldUs")) {
    r.remote.ack_hold_ns = std::int64_t{to_u32(env, remote.Get("ackHoldUs"), w + ".remote.ackHoldUs", 0, 1'000'000)} * 1000;
  }
  return r;
}

}  // namespace qpgate::addon
