#include "verbs_convert.h"

#include <cmath>
#include <string_view>

#include "args.h"
#include "js_number.h"
#include "verbs/soft/net.h"
#include "verbs/types.h"

namespace qpgate::addon {

namespace {

using verbs::Access;
using verbs::QpAttrMask;

std::uint8_t to_u8(Napi::Env env, Napi::Value v, const std::string& where) {
  return static_cast<std::uint8_t>(to_u32(env, v, where, 0xff));
}

verbs::QpState to_state(Napi::Env env, Napi::Value v, const std::string& where) {
  if (v.IsString()) {
    std::string s = v.As<Napi::String>().Utf8Value();
    if (s.rfind("IBV_QPS_", 0) == 0) s = s.substr(8);
    for (int i = 0; i < verbs::kQpStateCount; ++i) {
      const auto st = static_cast<verbs::QpState>(i);
      if (verbs::qp_state_name(st) == s) return st;
    }
  }
  type_error(env, where, choice_list({"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}), v);
}

verbs::MigState to_mig_state(Napi::Env env, Napi::Value v, const std::string& where) {
  const std::string m = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  for (verbs::MigState st : {verbs::MigState::MIGRATED, verbs::MigState::REARM, verbs::MigState::ARMED}) {
    if (m == verbs::mig_state_name(st)) return st;
  }
  type_error(env, where, choice_list({"MIGRATED", "REARM", "ARMED"}), v);
}

// altPath: {ahAttr, pkeyIndex?, port?, timeout?} (IBV_QP_ALT_PATH's alt_* fields).
void to_alt_path(Napi::Env env, Napi::Value v, const std::string& where, verbs::QpAttr& a) {
  Napi::Object o = to_object(env, v, where);
  a.alt_ah_attr = to_ah_attr(env, o.Get("ahAttr"), where + ".ahAttr");
  if (!o.Get("pkeyIndex").IsUndefined()) a.alt_pkey_index = static_cast<std::uint16_t>(to_u32(env, o.Get("pkeyIndex"), where + ".pkeyIndex", 0xffff));
  if (!o.Get("port").IsUndefined()) a.alt_port_num = to_u8(env, o.Get("port"), where + ".port");
  if (!o.Get("timeout").IsUndefined()) a.alt_timeout = to_u8(env, o.Get("timeout"), where + ".timeout");
}

std::uint32_t mtu_bytes(verbs::Mtu m) { return verbs::mtu_to_bytes(m); }

const std::vector<verbs::Sge> to_sges(Napi::Env env, Napi::Value v, const std::string& where, bool allow_inline_buffers) {
  std::vector<verbs::Sge> out;
  if (v.IsUndefined()) return out;
  if (!v.IsArray()) type_error(env, where, "an array of {addr, length, lkey}", v);
  Napi::Array a = v.As<Napi::Array>();
  for (std::uint32_t i = 0; i < a.Length(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    Napi::Value e = a.Get(i);
    if (e.IsTypedArray() || e.IsArrayBuffer()) {
      if (!allow_inline_buffers) {
        type_error(env, w, "{addr, length, lkey} (a Buffer is accepted only in an inline send; use mr.sge())", e);
      }
      verbs::Sge s;
      if (e.IsArrayBuffer()) {
        auto ab = e.As<Napi::ArrayBuffer>();
        s.addr = reinterpret_cast<std::uint64_t>(ab.Data());
        s.length = static_cast<std::uint32_t>(ab.ByteLength());
      } else {
        auto ta = e.As<Napi::TypedArray>();
        s.addr = reinterpret_cast<std::uint64_t>(static_cast<std::uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset());
        s.length = static_cast<std::uint32_t>(ta.ByteLength());
      }
      out.push_back(s);
      continue;
    }
    Napi::Object o = to_object(env, e, w);
    verbs::Sge s;
    s.addr = to_u64(env, o.Get("addr"), w + ".addr");
    s.length = to_u32(env, o.Get("length"), w + ".length");
    s.lkey = has(o, "lkey") ? to_u32(env, o.Get("lkey"), w + ".lkey") : 0;
    out.push_back(s);
  }
  return out;
}

verbs::WrOpcode to_wr_opcode(Napi::Env env, Napi::Value v, const std::string& where) {
  if (v.IsUndefined()) return verbs::WrOpcode::SEND;
  if (v.IsString()) {
    std::string s = v.As<Napi::String>().Utf8Value();
    if (s.rfind("IBV_WR_", 0) == 0) s = s.substr(7);
    static const std::pair<const char*, verbs::WrOpcode> kNames[] = {
        {"SEND", verbs::WrOpcode::SEND},
        {"SEND_WITH_IMM", verbs::WrOpcode::SEND_WITH_IMM},
        {"RDMA_WRITE", verbs::WrOpcode::RDMA_WRITE},
        {"RDMA_WRITE_WITH_IMM", verbs::WrOpcode::RDMA_WRITE_WITH_IMM},
        {"RDMA_READ", verbs::WrOpcode::RDMA_READ},
        {"ATOMIC_CMP_AND_SWP", verbs::WrOpcode::ATOMIC_CMP_AND_SWP},
        {"ATOMIC_FETCH_AND_ADD", verbs::WrOpcode::ATOMIC_FETCH_AND_ADD},
    };
    for (const auto& [name, op] : kNames) {
      if (s == name) return op;
    }
  }
  type_error(env, where,
             choice_list({"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ", "ATOMIC_CMP_AND_SWP",
                          "ATOMIC_FETCH_AND_ADD"}),
             v);
}

}  // namespace

Napi::Error verbs_error(Napi::Env env, const verbs::Error& e, long bad_wr_index) {
  Napi::Error err = Napi::Error::New(env, e.message);
  err.Set("code", Napi::String::New(env, std::string(verbs::soft::errno_symbol(e.code))));
  err.Set("errno", Napi::Number::New(env, e.code));
  if (bad_wr_index >= 0) err.Set("badWrIndex", Napi::Number::New(env, static_cast<double>(bad_wr_index)));
  return err;
}

verbs::Mtu to_path_mtu(Napi::Env env, Napi::Value v, const std::string& where) {
  constexpr const char* kExpected = "256, 512, 1024, 2048 or 4096";
  if (!v.IsNumber()) type_error(env, where, kExpected, v);
  const double d = v.As<Napi::Number>().DoubleValue();
  verbs::Mtu m{};
  if (!(d >= 0 && d <= 65536 && std::floor(d) == d && verbs::mtu_from_bytes(static_cast<std::uint32_t>(d), &m))) {
    range_error(env, where, kExpected, v);
  }
  return m;
}

verbs::AccessFlags to_access(Napi::Env env, Napi::Value v, const std::string& where) {
  verbs::AccessFlags out;
  if (!v.IsArray()) type_error(env, where, "an array of 'LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC'", v);
  Napi::Array a = v.As<Napi::Array>();
  for (std::uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value e = a.Get(i);
    std::string s = e.IsString() ? e.As<Napi::String>().Utf8Value() : "";
    if (s.rfind("IBV_ACCESS_", 0) == 0) s = s.substr(11);
    if (s == "LOCAL_WRITE") out |= Access::LOCAL_WRITE;
    else if (s == "REMOTE_WRITE") out |= Access::REMOTE_WRITE;
    else if (s == "REMOTE_READ") out |= Access::REMOTE_READ;
    else if (s == "REMOTE_ATOMIC") out |= Access::REMOTE_ATOMIC;
    else type_error(env, where + "[" + std::to_string(i) + "]", choice_list({"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC"}), e);
  }
  return out;
}

std::uint8_t to_device_choice(Napi::Env env, Napi::Value v, const std::string& where) {
  return to_choice(env, v, where, {"primary", "alternate"}) == 1 ? verbs::kAlternateDevice : verbs::kPrimaryDevice;
}

Napi::String device_choice_to_js(Napi::Env env, std::uint8_t device) {
  return Napi::String::New(env, device == verbs::kAlternateDevice ? "alternate" : "primary");
}

verbs::Gid to_gid(Napi::Env env, Napi::Value v, const std::string& where) {
  if (v.IsString()) {
    if (auto g = verbs::Gid::parse(v.As<Napi::String>().Utf8Value())) return *g;
  }
  type_error(env, where, "a GID ('::ffff:10.0.0.1', 'fe80::1') or an IPv4 address ('10.0.0.1')", v);
}

verbs::AhAttr to_ah_attr(Napi::Env env, Napi::Value v, const std::string& where) {
  Napi::Object o = to_object(env, v, where);
  verbs::AhAttr a;
  a.dgid = to_gid(env, o.Get("dgid"), where + ".dgid");
  Napi::Array keys = o.GetPropertyNames();
  for (std::uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string k = keys.Get(i).ToString().Utf8Value();
    const std::string w = where + "." + k;
    Napi::Value x = o.Get(k);
    if (k == "dgid") continue;
    if (k == "sgidIndex") a.sgid_index = to_u8(env, x, w);
    else if (k == "trafficClass") a.traffic_class = to_u8(env, x, w);
    else if (k == "hopLimit") a.hop_limit = to_u8(env, x, w);
    else if (k == "sl") a.sl = to_u8(env, x, w);
    else if (k == "flowLabel") a.flow_label = to_u32(env, x, w, 0xfffff);
    else if (k == "portNum") a.port_num = to_u8(env, x, w);
    else if (k == "udpSport") a.udp_sport = static_cast<std::uint16_t>(to_u32(env, x, w, 0xffff));
    else {
      unknown_key(env, where, "attribute", k,
                  {"dgid", "sgidIndex", "trafficClass", "hopLimit", "sl", "flowLabel", "portNum", "udpSport"});
    }
  }
  return a;
}

verbs::QpCap to_cap(Napi::Env env, Napi::Value v, const std::string& where) {
  verbs::QpCap c;
  if (v.IsUndefined()) return c;
  Napi::Object o = to_object(env, v, where);
  Napi::Array keys = o.GetPropertyNames();
  for (std::uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string k = keys.Get(i).ToString().Utf8Value();
    const std::string w = where + "." + k;
    Napi::Value x = o.Get(k);
    if (k == "maxSendWr") c.max_send_wr = to_u32(env, x, w);
    else if (k == "maxRecvWr") c.max_recv_wr = to_u32(env, x, w);
    else if (k == "maxSendSge") c.max_send_sge = to_u32(env, x, w);
    else if (k == "maxRecvSge") c.max_recv_sge = to_u32(env, x, w);
    else if (k == "maxInlineData") c.max_inline_data = to_u32(env, x, w);
    else {
      unknown_key(env, where, "capability", k, {"maxSendWr", "maxRecvWr", "maxSendSge", "maxRecvSge", "maxInlineData"});
    }
  }
  return c;
}

verbs::QpType to_qp_type(Napi::Env env, Napi::Value v, const std::string& where) {
  if (v.IsString()) {
    std::string s = v.As<Napi::String>().Utf8Value();
    if (s.rfind("IBV_QPT_", 0) == 0) s = s.substr(8);
    if (s == "RC") return verbs::QpType::RC;
    if (s == "UC") return verbs::QpType::UC;
    if (s == "UD") return verbs::QpType::UD;
  }
  type_error(env, where, choice_list({"RC", "UC", "UD"}), v);
}

void to_qp_attr(Napi::Env env, Napi::Value v, verbs::QpAttr& a, verbs::QpAttrMaskFlags& mask) {
  const std::string where = "qp.modify";
  Napi::Object o = to_object(env, v, where + " attributes");
  Napi::Array keys = o.GetPropertyNames();
  for (std::uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string k = keys.Get(i).ToString().Utf8Value();
    const std::string w = where + ": " + k;
    Napi::Value x = o.Get(k);
    if (x.IsUndefined()) continue;
    if (k == "state") { a.qp_state = to_state(env, x, w); mask |= QpAttrMask::STATE; }
    else if (k == "curState") { a.cur_qp_state = to_state(env, x, w); mask |= QpAttrMask::CUR_STATE; }
    else if (k == "enSqdAsyncNotify") { a.en_sqd_async_notify = to_bool(env, x, w) ? 1 : 0; mask |= QpAttrMask::EN_SQD_ASYNC_NOTIFY; }
    else if (k == "qpAccessFlags") { a.qp_access_flags = to_access(env, x, w); mask |= QpAttrMask::ACCESS_FLAGS; }
    else if (k == "pkeyIndex") { a.pkey_index = static_cast<std::uint16_t>(to_u32(env, x, w, 0xffff)); mask |= QpAttrMask::PKEY_INDEX; }
    else if (k == "port") { a.port_num = to_u8(env, x, w); mask |= QpAttrMask::PORT; }
    else if (k == "qkey") { a.qkey = to_u32(env, x, w); mask |= QpAttrMask::QKEY; }
    else if (k == "ahAttr") { a.ah_attr = to_ah_attr(env, x, w); mask |= QpAttrMask::AV; }
    else if (k == "pathMtu") { a.path_mtu = to_path_mtu(env, x, w); mask |= QpAttrMask::PATH_MTU; }
    else if (k == "timeout") { a.timeout = to_u8(env, x, w); mask |= QpAttrMask::TIMEOUT; }
    else if (k == "retryCnt") { a.retry_cnt = to_u8(env, x, w); mask |= QpAttrMask::RETRY_CNT; }
    else if (k == "rnrRetry") { a.rnr_retry = to_u8(env, x, w); mask |= QpAttrMask::RNR_RETRY; }
    else if (k == "rqPsn") { a.rq_psn = to_u32(env, x, w); mask |= QpAttrMask::RQ_PSN; }
    else if (k == "maxRdAtomic") { a.max_rd_atomic = to_u8(env, x, w); mask |= QpAttrMask::MAX_QP_RD_ATOMIC; }
    else if (k == "minRnrTimer") { a.min_rnr_timer = to_u8(env, x, w); mask |= QpAttrMask::MIN_RNR_TIMER; }
    else if (k == "sqPsn") { a.sq_psn = to_u32(env, x, w); mask |= QpAttrMask::SQ_PSN; }
    else if (k == "maxDestRdAtomic") { a.max_dest_rd_atomic = to_u8(env, x, w); mask |= QpAttrMask::MAX_DEST_RD_ATOMIC; }
    else if (k == "cap") { a.cap = to_cap(env, x, w); mask |= QpAttrMask::CAP; }
    else if (k == "destQpNum") { a.dest_qp_num = to_u32(env, x, w); mask |= QpAttrMask::DEST_QPN; }
    else if (k == "altPath") { to_alt_path(env, x, w, a); mask |= QpAttrMask::ALT_PATH; }
    else if (k == "pathMigState") { a.path_mig_state = to_mig_state(env, x, w); mask |= QpAttrMask::PATH_MIG_STATE; }
    else {
      unknown_key(env, where, "attribute", k,
                  {"state", "curState", "enSqdAsyncNotify", "qpAccessFlags", "pkeyIndex", "port", "qkey", "ahAttr", "pathMtu",
                   "timeout", "retryCnt", "rnrRetry", "rqPsn", "maxRdAtomic", "minRnrTimer", "sqPsn", "maxDestRdAtomic", "cap",
                   "destQpNum", "altPath", "pathMigState"});
    }
  }
}

SendBatch to_send_wrs(Napi::Env env, Napi::Value v, AhResolver resolve_ah) {
  if (!v.IsArray()) type_error(env, "qp.postSend", "an array of send work requests", v);
  Napi::Array a = v.As<Napi::Array>();
  SendBatch b;
  b.wrs.resize(a.Length());
  b.sges.resize(a.Length());
  for (std::uint32_t i = 0; i < a.Length(); ++i) {
    const std::string where = "qp.postSend: wrs[" + std::to_string(i) + "]";
    Napi::Object o = to_object(env, a.Get(i), where);
    verbs::SendWr& wr = b.wrs[i];
    wr.wr_id = has(o, "wrId") ? to_u64(env, o.Get("wrId"), where + ".wrId") : 0;
    wr.opcode = to_wr_opcode(env, o.Get("opcode"), where + ".opcode");
    const bool inl = has(o, "inline") && to_bool(env, o.Get("inline"), where + ".inline");
    if (inl) wr.send_flags |= verbs::SendFlag::INLINE;
    // Signaled unless said otherwise: the simple case should complete.
    if (!has(o, "signaled") || to_bool(env, o.Get("signaled"), where + ".signaled")) wr.send_flags |= verbs::SendFlag::SIGNALED;
    if (has(o, "solicited") && to_bool(env, o.Get("solicited"), where + ".solicited")) wr.send_flags |= verbs::SendFlag::SOLICITED;
    if (has(o, "fence") && to_bool(env, o.Get("fence"), where + ".fence")) wr.send_flags |= verbs::SendFlag::FENCE;
    b.sges[i] = to_sges(env, o.Get("sgList"), where + ".sgList", inl);
    wr.sg_list = std::span<const verbs::Sge>(b.sges[i]);
    if (has(o, "immData")) wr.imm_data = to_u32(env, o.Get("immData"), where + ".immData");
    const bool atomic = verbs::wr_opcode_info(wr.opcode).is(wire::kWrAtomic);
    if (has(o, "remoteAddr")) {
      const std::uint64_t ra = to_u64(env, o.Get("remoteAddr"), where + ".remoteAddr");
      (atomic ? wr.atomic.remote_addr : wr.rdma.remote_addr) = ra;
    }
    if (has(o, "rkey")) {
      const std::uint32_t rk = to_u32(env, o.Get("rkey"), where + ".rkey");
      (atomic ? wr.atomic.rkey : wr.rdma.rkey) = rk;
    }
    if (has(o, "compareAdd")) wr.atomic.compare_add = to_u64(env, o.Get("compareAdd"), where + ".compareAdd");
    if (has(o, "swap")) wr.atomic.swap = to_u64(env, o.Get("swap"), where + ".swap");
    if (has(o, "ah")) {
      wr.ud.ah = resolve_ah(env, o.Get("ah"), where + ".ah");
      b.ahs.push_back(o.Get("ah").As<Napi::Object>());
    }
    if (has(o, "remoteQpn")) wr.ud.remote_qpn = to_u32(env, o.Get("remoteQpn"), where + ".remoteQpn", 0xffffff);
    if (has(o, "remoteQkey")) wr.ud.remote_qkey = to_u32(env, o.Get("remoteQkey"), where + ".remoteQkey");
  }
  return b;
}

RecvBatch to_recv_wrs(Napi::Env env, Napi::Value v, const std::string& where_prefix) {
  if (!v.IsArray()) type_error(env, where_prefix, "an array of receive work requests", v);
  Napi::Array a = v.As<Napi::Array>();
  RecvBatch b;
  b.wrs.resize(a.Length());
  b.sges.resize(a.Length());
  for (std::uint32_t i = 0; i < a.Length(); ++i) {
    const std::string where = where_prefix + ": wrs[" + std::to_string(i) + "]";
    Napi::Object o = to_object(env, a.Get(i), where);
    b.wrs[i].wr_id = has(o, "wrId") ? to_u64(env, o.Get("wrId"), where + ".wrId") : 0;
    b.sges[i] = to_sges(env, o.Get("sgList"), where + ".sgList", false);
    b.wrs[i].sg_list = std::span<const verbs::Sge>(b.sges[i]);
  }
  return b;
}

Napi::Value u64_to_js(Napi::Env env, std::uint64_t v) { return Napi::BigInt::New(env, v); }

Napi::Object wc_to_js(Napi::Env env, const verbs::Wc& wc) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("wrId", u64_to_js(env, wc.wr_id));
  o.Set("status", std::string(verbs::wc_status_enum_name(wc.status)));
  o.Set("opcode", std::string(verbs::wc_opcode_name(wc.opcode)));
  o.Set("byteLen", num(env, wc.byte_len));
  o.Set("qpNum", num(env, wc.qp_num));
  o.Set("vendorErr", num(env, wc.vendor_err));
  if (wc.wc_flags.has(verbs::WcFlag::WITH_IMM)) o.Set("immData", num(env, wc.imm_data));
  if (verbs::wc_opcode_is_recv(wc.opcode) && wc.status == verbs::WcStatus::IBV_WC_SUCCESS) {
    o.Set("srcQp", num(env, wc.src_qp));
    o.Set("grh", Napi::Boolean::New(env, wc.wc_flags.has(verbs::WcFlag::GRH)));
  }
  return o;
}

void wc_to_words(const verbs::Wc& wc, std::uint32_t* out) {
  out[0] = static_cast<std::uint32_t>(wc.wr_id);
  out[1] = static_cast<std::uint32_t>(wc.wr_id >> 32);
  out[2] = static_cast<std::uint32_t>(wc.status);
  out[3] = static_cast<std::uint32_t>(wc.opcode);
  out[4] = wc.byte_len;
  out[5] = wc.qp_num;
}

Napi::Uint32Array to_u32_array(Napi::Env env, Napi::Value v, const std::string& where) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    type_error(env, where, "a Uint32Array", v);
  }
  return v.As<Napi::Uint32Array>();
}

Napi::Array access_to_js(Napi::Env env, verbs::AccessFlags a) {
  Napi::Array out = Napi::Array::New(env);
  std::uint32_t n = 0;
  for (Access x : {Access::LOCAL_WRITE, Access::REMOTE_WRITE, Access::REMOTE_READ, Access::REMOTE_ATOMIC}) {
    if (a.has(x)) out.Set(n++, std::string(verbs::access_name(x)).substr(11));
  }
  return out;
}

Napi::Object ah_attr_to_js(Napi::Env env, const verbs::AhAttr& a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("dgid", a.dgid.to_string());
  o.Set("sgidIndex", num(env, a.sgid_index));
  o.Set("trafficClass", num(env, a.traffic_class));
  o.Set("hopLimit", num(env, a.hop_limit));
  o.Set("sl", num(env, a.sl));
  o.Set("flowLabel", num(env, a.flow_label));
  o.Set("portNum", num(env, a.port_num));
  o.Set("udpSport", num(env, a.udp_sport));
  return o;
}

Napi::Object qp_attr_to_js(Napi::Env env, const verbs::QpAttr& a, const verbs::QpInitAttr& init) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("state", std::string(verbs::qp_state_name(a.qp_state)));
  o.Set("type", std::string(verbs::qp_type_name(init.qp_type)));
  o.Set("pathMtu", num(env, mtu_bytes(a.path_mtu)));
  o.Set("qkey", num(env, a.qkey));
  o.Set("rqPsn", num(env, a.rq_psn));
  o.Set("sqPsn", num(env, a.sq_psn));
  o.Set("destQpNum", num(env, a.dest_qp_num));
  o.Set("qpAccessFlags", access_to_js(env, a.qp_access_flags));
  Napi::Object cap = Napi::Object::New(env);
  cap.Set("maxSendWr", num(env, a.cap.max_send_wr));
  cap.Set("maxRecvWr", num(env, a.cap.max_recv_wr));
  cap.Set("maxSendSge", num(env, a.cap.max_send_sge));
  cap.Set("maxRecvSge", num(env, a.cap.max_recv_sge));
  cap.Set("maxInlineData", num(env, a.cap.max_inline_data));
  o.Set("cap", cap);
  o.Set("ahAttr", ah_attr_to_js(env, a.ah_attr));
  o.Set("pkeyIndex", num(env, a.pkey_index));
  o.Set("port", num(env, a.port_num));
  o.Set("timeout", num(env, a.timeout));
  o.Set("retryCnt", num(env, a.retry_cnt));
  o.Set("rnrRetry", num(env, a.rnr_retry));
  o.Set("minRnrTimer", num(env, a.min_rnr_timer));
  o.Set("maxRdAtomic", num(env, a.max_rd_atomic));
  o.Set("maxDestRdAtomic", num(env, a.max_dest_rd_atomic));
  o.Set("sqDraining", Napi::Boolean::New(env, a.sq_draining != 0));
  o.Set("sqSigAll", Napi::Boolean::New(env, init.sq_sig_all));
  o.Set("pathMigState", std::string(verbs::mig_state_name(a.path_mig_state)));
  Napi::Object alt = Napi::Object::New(env);
  alt.Set("ahAttr", ah_attr_to_js(env, a.alt_ah_attr));
  alt.Set("pkeyIndex", num(env, a.alt_pkey_index));
  alt.Set("port", num(env, a.alt_port_num));
  alt.Set("timeout", num(env, a.alt_timeout));
  o.Set("altPath", alt);
  return o;
}

std::optional<verbs::Gid> to_alternate_gid(Napi::Env env, Napi::Object o, const std::string& where) {
  if (!has(o, "alternateGid") || o.Get("alternateGid").IsNull()) return std::nullopt;
  return to_gid(env, o.Get("alternateGid"), where);
}

Napi::Value gid_or_null(Napi::Env env, const std::optional<verbs::Gid>& gid) {
  return gid ? Napi::Value(Napi::String::New(env, gid->to_string())) : env.Null();
}

void set_rc_path(Napi::Env env, Napi::Object o, const verbs::RcPathInfo& p) {
  o.Set("activePath", p.has_alternate ? Napi::Value(Napi::String::New(env, std::string(verbs::active_path_name(p.active)))) : env.Null());
  o.Set("pathMigState", p.has_alternate ? Napi::Value(Napi::String::New(env, std::string(verbs::mig_state_name(p.mig_state)))) : env.Null());
  o.Set("pathMigrations", num(env, p.migrations));
}

Napi::Object device_attr_to_js(Napi::Env env, const verbs::DeviceAttr& a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("fwVer", a.fw_ver);
  o.Set("nodeGuid", u64_to_js(env, a.node_guid));
  o.Set("maxMrSize", u64_to_js(env, a.max_mr_size));
  o.Set("vendorId", num(env, a.vendor_id));
  o.Set("vendorPartId", num(env, a.vendor_part_id));
  o.Set("maxQp", num(env, a.max_qp));
  o.Set("maxQpWr", num(env, a.max_qp_wr));
  o.Set("maxSge", num(env, a.max_sge));
  o.Set("maxCq", num(env, a.max_cq));
  o.Set("maxCqe", num(env, a.max_cqe));
  o.Set("maxMr", num(env, a.max_mr));
  o.Set("maxPd", num(env, a.max_pd));
  o.Set("maxQpRdAtom", num(env, a.max_qp_rd_atom));
  o.Set("maxQpInitRdAtom", num(env, a.max_qp_init_rd_atom));
  o.Set("maxSrq", num(env, a.max_srq));
  o.Set("maxSrqWr", num(env, a.max_srq_wr));
  o.Set("maxSrqSge", num(env, a.max_srq_sge));
  o.Set("maxMcastGrp", num(env, a.max_mcast_grp));
  o.Set("maxMcastQpAttach", num(env, a.max_mcast_qp_attach));
  o.Set("maxAh", num(env, a.max_ah));
  o.Set("maxInlineData", num(env, a.max_inline_data));
  o.Set("maxPkeys", num(env, a.max_pkeys));
  o.Set("localCaAckDelay", num(env, a.local_ca_ack_delay));
  o.Set("physPortCnt", num(env, a.phys_port_cnt));
  return o;
}

Napi::Object port_attr_to_js(Napi::Env env, const verbs::PortAttr& p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("state", std::string(verbs::port_state_name(p.state)));
  o.Set("maxMtu", num(env, mtu_bytes(p.max_mtu)));
  o.Set("activeMtu", num(env, mtu_bytes(p.active_mtu)));
  o.Set("gidTblLen", num(env, p.gid_tbl_len));
  o.Set("maxMsgSz", num(env, p.max_msg_sz));
  o.Set("badPkeyCntr", num(env, p.bad_pkey_cntr));
  o.Set("qkeyViolCntr", num(env, p.qkey_viol_cntr));
  o.Set("pkeyTblLen", num(env, p.pkey_tbl_len));
  return o;
}

Napi::Object async_event_to_js(Napi::Env env, const verbs::AsyncEvent& e) {
  static const char* const kElements[] = {"DEVICE", "PORT", "QP", "CQ", "SRQ"};
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", std::string(verbs::event_type_enum_name(e.event_type)));
  o.Set("description", std::string(verbs::event_type_name(e.event_type)));
  o.Set("element", kElements[static_cast<int>(e.element)]);
  o.Set("elementId", num(env, e.element_id));
  o.Set("context", u64_to_js(env, e.context));
  return o;
}

}  // namespace qpgate::addon
