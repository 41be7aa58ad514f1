// JS <-> verbs conversions for verbs_wrap.cc: attribute objects with
// ibverbs' field names in camelCase (qpAccessFlags, pkeyIndex, destQpNum,
// ahAttr.hopLimit ...), enum names as strings ('RTR', 'IBV_WC_SUCCESS'),
// 64-bit values as BigInt. Every parse refuses in args.h's one shape: the
// field, what was expected, what was given.
#pragma once

#include <napi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "verbs/attr.h"
#include "verbs/async_event.h"
#include "verbs/device.h"
#include "verbs/error.h"
#include "verbs/rc_path.h"
#include "verbs/session_device.h"
#include "verbs/wr.h"

namespace qpgate::addon {

// A JS Error with .code = errno name; .badWrIndex when given (>= 0).
Napi::Error verbs_error(Napi::Env env, const verbs::Error& e, long bad_wr_index = -1);

// Parsers, on args.h's (which this header brings). `where` prefixes messages ("qp.modify").
// A path MTU in bytes: 256, 512, 1024, 2048 or 4096.
verbs::Mtu to_path_mtu(Napi::Env env, Napi::Value v, const std::string& where);
verbs::AccessFlags to_access(Napi::Env env, Napi::Value v, const std::string& where);
verbs::Gid to_gid(Napi::Env env, Napi::Value v, const std::string& where);
verbs::AhAttr to_ah_attr(Napi::Env env, Napi::Value v, const std::string& where);
verbs::QpCap to_cap(Napi::Env env, Napi::Value v, const std::string& where);
verbs::QpType to_qp_type(Napi::Env env, Napi::Value v, const std::string& where);
// 'primary' or 'alternate': which of a gateway's devices (verbs/session_device.h).
std::uint8_t to_device_choice(Napi::Env env, Napi::Value v, const std::string& where);
Napi::String device_choice_to_js(Napi::Env env, std::uint8_t device);
// The attributes present in `v` and the mask they make.
void to_qp_attr(Napi::Env env, Napi::Value v, verbs::QpAttr& attr, verbs::QpAttrMaskFlags& mask);

// Work requests with the storage their spans point into. `resolve_ah`
// turns the JS `ah` value into the AddressHandle it wraps (throws if not one).
struct SendBatch {
  std::vector<verbs::SendWr> wrs;
  std::vector<std::vector<verbs::Sge>> sges;
  std::vector<Napi::Object> ahs;  // the JS AH objects used, in WR order (nullptr-free)
};
using AhResolver = const verbs::AddressHandle* (*)(Napi::Env env, Napi::Value v, const std::string& where);
SendBatch to_send_wrs(Napi::Env env, Napi::Value v, AhResolver resolve_ah);
struct RecvBatch {
  std::vector<verbs::RecvWr> wrs;
  std::vector<std::vector<verbs::Sge>> sges;
};
RecvBatch to_recv_wrs(Napi::Env env, Napi::Value v, const std::string& where);

// Results.
Napi::Value u64_to_js(Napi::Env env, std::uint64_t v);  // BigInt
Napi::Object wc_to_js(Napi::Env env, const verbs::Wc& wc);
// cq.pollInto's layout, kWcWords u32 per completion (src/native/verbs.ts
// WcWord names them): wr_id low and high halves, status (ibv_wc_status),
// opcode (ibv_wc_opcode), byte_len, qp_num.
inline constexpr std::size_t kWcWords = 6;
void wc_to_words(const verbs::Wc& wc, std::uint32_t* out);
// A Uint32Array argument, or a TypeError naming `where`.
Napi::Uint32Array to_u32_array(Napi::Env env, Napi::Value v, const std::string& where);
Napi::Object qp_attr_to_js(Napi::Env env, const verbs::QpAttr& a, const verbs::QpInitAttr& init);
Napi::Object ah_attr_to_js(Napi::Env env, const verbs::AhAttr& a);
Napi::Object device_attr_to_js(Napi::Env env, const verbs::DeviceAttr& a);
Napi::Object port_attr_to_js(Napi::Env env, const verbs::PortAttr& p);
Napi::Object async_event_to_js(Napi::Env env, const verbs::AsyncEvent& e);
Napi::Array access_to_js(Napi::Env env, verbs::AccessFlags a);

// An RC handshake's optional `alternateGid` (absent, undefined or null: none).
std::optional<verbs::Gid> to_alternate_gid(Napi::Env env, Napi::Object o, const std::string& where);
// The GID's text, or null.
Napi::Value gid_or_null(Napi::Env env, const std::optional<verbs::Gid>& gid);
// A session's path (verbs/rc_path.h) as activePath ('primary' | 'alternate',
// null without an alternate path), pathMigState (null likewise) and pathMigrations.
void set_rc_path(Napi::Env env, Napi::Object o, const verbs::RcPathInfo& p);

}  // namespace qpgate::addon
