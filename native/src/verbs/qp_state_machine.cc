#include "verbs/qp_state_machine.h"

#include <array>
#include <cstdio>

#include "verbs/timers.h"

namespace qpgate::verbs {

namespace {

using M = QpAttrMask;
constexpr QpAttrMaskFlags none() { return {}; }

// Columns of the per-type arrays below.
constexpr int type_index(QpType t) {
  switch (t) {
    case QpType::RC: return 0;
    case QpType::UC: return 1;
    case QpType::UD: return 2;
  }
  return -1;
}

struct Cell {
  bool legal = false;
  std::array<QpAttrMaskFlags, 3> required{};  // RC, UC, UD
  std::array<QpAttrMaskFlags, 3> optional{};
  std::array<bool, 3> legal_for{true, true, true};  // a legal cell can still exclude a type
};

constexpr QpAttrMaskFlags kRcRtr = M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC |
                                   M::MIN_RNR_TIMER;
constexpr QpAttrMaskFlags kUcRtr = M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
constexpr QpAttrMaskFlags kRcRts = M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC;

constexpr QpAttrMaskFlags kUdInitOpt = M::PKEY_INDEX | M::PORT | M::QKEY;
constexpr QpAttrMaskFlags kConnInitOpt = M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
// RTR→RTS, RTS→RTS, SQD→RTS share these optional sets.
constexpr QpAttrMaskFlags kUdToRtsOpt = M::CUR_STATE | M::QKEY;
constexpr QpAttrMaskFlags kUcToRtsOpt = M::CUR_STATE | M::ALT_PATH | M::ACCESS_FLAGS | M::PATH_MIG_STATE;
constexpr QpAttrMaskFlags kRcToRtsOpt = kUcToRtsOpt | M::MIN_RNR_TIMER;

using Table = std::array<std::array<Cell, kQpStateCount>, kQpStateCount>;

constexpr Table make_table() {
  Table t{};
  const auto s = [](QpState x) { return static_cast<std::size_t>(x); };
  // Any state → RESET and → ERR. RESET → ERR included: the
  // kernel's table refuses it, the IBA allows it, and it is harmless.
  for (int from = 0; from < kQpStateCount; ++from) {
    t[static_cast<std::size_t>(from)][s(QpState::RESET)].legal = true;
    t[static_cast<std::size_t>(from)][s(QpState::ERR)].legal = true;
  }
  {
    Cell& c = t[s(QpState::RESET)][s(QpState::INIT)];
    c.legal = true;
    c.required = {kConnInitOpt, kConnInitOpt, kUdInitOpt};
  }
  {
    Cell& c = t[s(QpState::INIT)][s(QpState::INIT)];
    c.legal = true;
    c.optional = {kConnInitOpt, kConnInitOpt, kUdInitOpt};
  }
  {
    Cell& c = t[s(QpState::INIT)][s(QpState::RTR)];
    c.legal = true;
    c.required = {kRcRtr, kUcRtr, none()};
    const QpAttrMaskFlags conn = M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX;
    c.optional = {conn, conn, M::PKEY_INDEX | M::QKEY};
  }
  {
    Cell& c = t[s(QpState::RTR)][s(QpState::RTS)];
    c.legal = true;
    c.required = {kRcRts, QpAttrMaskFlags(M::SQ_PSN), QpAttrMaskFlags(M::SQ_PSN)};
    c.optional = {kRcToRtsOpt, kUcToRtsOpt, kUdToRtsOpt};
  }
  {
    Cell& c = t[s(QpState::RTS)][s(QpState::RTS)];
    c.legal = true;
    c.optional = {kRcToRtsOpt, kUcToRtsOpt, kUdToRtsOpt};
  }
  {
    Cell& c = t[s(QpState::RTS)][s(QpState::SQD)];
    c.legal = true;
    const QpAttrMaskFlags n(M::EN_SQD_ASYNC_NOTIFY);
    c.optional = {n, n, n};
  }
  {
    Cell& c = t[s(QpState::SQD)][s(QpState::RTS)];
    c.legal = true;
    c.optional = {kRcToRtsOpt, kUcToRtsOpt, kUdToRtsOpt};
  }
  {
    Cell& c = t[s(QpState::SQD)][s(QpState::SQD)];
    c.legal = true;
    c.optional = {M::PORT | M::AV | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC |
                      M::MAX_DEST_RD_ATOMIC | M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX | M::MIN_RNR_TIMER |
                      M::PATH_MIG_STATE,
                  M::AV | M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX | M::PATH_MIG_STATE,
                  M::PKEY_INDEX | M::QKEY};
  }
  {
    // SQE exists for UC and UD only: an RC send error moves the QP to ERR.
    Cell& c = t[s(QpState::SQE)][s(QpState::RTS)];
    c.legal = true;
    c.legal_for = {false, true, true};
    c.optional = {none(), M::CUR_STATE | M::ACCESS_FLAGS, kUdToRtsOpt};
  }
  return t;
}

constexpr Table kTable = make_table();

constexpr bool state_valid(QpState s) { return static_cast<int>(s) < kQpStateCount; }

Error invalid(std::string msg) { return Error{EINVAL, std::move(msg)}; }

std::string fmt_u(const char* format, unsigned long long a, unsigned long long b = 0, unsigned long long c = 0) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof buf, format, a, b, c);
  return std::string(buf, static_cast<std::size_t>(n < 0 ? 0 : (n >= static_cast<int>(sizeof buf) ? sizeof buf - 1 : n)));
}

// "IBV_QP_TIMEOUT: timeout 32 is out of range 0..31"
Status check_range(QpAttrMask bit, const char* field, unsigned long long value, unsigned long long lo,
                   unsigned long long hi) {
  if (value >= lo && value <= hi) return {};
  std::string m(qp_attr_mask_name(bit));
  m += ": ";
  m += field;
  m += fmt_u(" %llu is out of range %llu..%llu", value, lo, hi);
  return invalid(std::move(m));
}

// IBV_QP_ALT_PATH and IBV_QP_PATH_MIG_STATE: the alternate path is checked
// as the primary one is (a unicast peer, indices within the tables).
Status check_alt_path(const QpAttr& a, QpAttrMaskFlags mask, const ModifyLimits& lim) {
  if (mask.has(M::ALT_PATH)) {
    const AhAttr& ah = a.alt_ah_attr;
    if (ah.dgid.is_zero()) return invalid("IBV_QP_ALT_PATH: alt_ah_attr.dgid is the zero GID");
    if (ah.dgid.is_multicast()) {
      return invalid("IBV_QP_ALT_PATH: alt_ah_attr.dgid " + ah.dgid.to_string() + " is a multicast GID");
    }
    if (auto s = check_range(M::ALT_PATH, "alt_ah_attr.sgid_index", ah.sgid_index, 0, lim.gid_tbl_len - 1ull); !s.ok())
      return s;
    if (auto s = check_range(M::ALT_PATH, "alt_ah_attr.flow_label", ah.flow_label, 0, 0xfffff); !s.ok()) return s;
    if (auto s = check_range(M::ALT_PATH, "alt_port_num", a.alt_port_num, 1, lim.phys_port_cnt); !s.ok()) return s;
    if (auto s = check_range(M::ALT_PATH, "alt_pkey_index", a.alt_pkey_index, 0, lim.pkey_tbl_len - 1ull); !s.ok())
      return s;
    if (auto s = check_range(M::ALT_PATH, "alt_timeout", a.alt_timeout, 0, kMaxTimeoutCode); !s.ok()) return s;
  }
  if (mask.has(M::PATH_MIG_STATE)) {
    const auto m = static_cast<unsigned>(a.path_mig_state);
    if (auto s = check_range(M::PATH_MIG_STATE, "path_mig_state", m, 0, 2); !s.ok()) return s;
  }
  return {};
}

Status check_values(QpType type, const QpAttr& a, QpAttrMaskFlags mask, const ModifyLimits& lim) {
  if (mask.has(M::PKEY_INDEX)) {
    if (auto s = check_range(M::PKEY_INDEX, "pkey_index", a.pkey_index, 0, lim.pkey_tbl_len - 1ull); !s.ok()) return s;
  }
  if (mask.has(M::PORT)) {
    if (auto s = check_range(M::PORT, "port_num", a.port_num, 1, lim.phys_port_cnt); !s.ok()) return s;
  }
  if (mask.has(M::QKEY) && (a.qkey & kControlledQkeyBit) != 0) {
    return Error{EPERM, fmt_u("IBV_QP_QKEY: qkey 0x%08llx has the high bit set; controlled Q_Keys "
                              "(such as the GSI's 0x80010000) are reserved to privileged consumers",
                              a.qkey)};
  }
  if (mask.has(M::ACCESS_FLAGS) && a.qp_access_flags.without(kAllAccess).any()) {
    return invalid(fmt_u("IBV_QP_ACCESS_FLAGS: unknown bits 0x%llx (expected LOCAL_WRITE, REMOTE_WRITE, "
                         "REMOTE_READ, REMOTE_ATOMIC)",
                         a.qp_access_flags.without(kAllAccess).bits()));
  }
  if (mask.has(M::AV)) {
    const AhAttr& ah = a.ah_attr;
    if (ah.dgid.is_zero()) return invalid("IBV_QP_AV: ah_attr.dgid is the zero GID");
    if (ah.dgid.is_multicast() && type != QpType::UD) {
      return invalid("IBV_QP_AV: ah_attr.dgid " + ah.dgid.to_string() + " is a multicast GID; " +
                     std::string(qp_type_name(type)) + " QPs connect to one unicast peer");
    }
    if (auto s = check_range(M::AV, "ah_attr.sgid_index", ah.sgid_index, 0, lim.gid_tbl_len - 1ull); !s.ok()) return s;
    if (auto s = check_range(M::AV, "ah_attr.flow_label", ah.flow_label, 0, 0xfffff); !s.ok()) return s;
    if (auto s = check_range(M::AV, "ah_attr.port_num", ah.port_num, 1, lim.phys_port_cnt); !s.ok()) return s;
  }
  if (mask.has(M::PATH_MTU)) {
    const auto code = static_cast<std::uint8_t>(a.path_mtu);
    if (!mtu_valid(code)) {
      return invalid(fmt_u("IBV_QP_PATH_MTU: path_mtu code %llu is not an IB MTU (1=256 .. 5=4096)", code));
    }
    if (code > static_cast<std::uint8_t>(lim.max_mtu)) {
      return invalid(fmt_u("IBV_QP_PATH_MTU: path_mtu %llu exceeds the port's max_mtu %llu", mtu_to_bytes(a.path_mtu),
                           mtu_to_bytes(lim.max_mtu)));
    }
  }
  if (mask.has(M::TIMEOUT)) {
    if (auto s = check_range(M::TIMEOUT, "timeout", a.timeout, 0, kMaxTimeoutCode); !s.ok()) return s;
  }
  if (mask.has(M::RETRY_CNT)) {
    if (auto s = check_range(M::RETRY_CNT, "retry_cnt", a.retry_cnt, 0, 7); !s.ok()) return s;
  }
  if (mask.has(M::RNR_RETRY)) {
    if (auto s = check_range(M::RNR_RETRY, "rnr_retry", a.rnr_retry, 0, 7); !s.ok()) return s;
  }
  if (mask.has(M::MIN_RNR_TIMER)) {
    if (auto s = check_range(M::MIN_RNR_TIMER, "min_rnr_timer", a.min_rnr_timer, 0, kMaxRnrTimerCode); !s.ok()) return s;
  }
  if (mask.has(M::RQ_PSN)) {
    if (auto s = check_range(M::RQ_PSN, "rq_psn", a.rq_psn, 0, kPsnMask); !s.ok()) return s;
  }
  if (mask.has(M::SQ_PSN)) {
    if (auto s = check_range(M::SQ_PSN, "sq_psn", a.sq_psn, 0, kPsnMask); !s.ok()) return s;
  }
  if (mask.has(M::DEST_QPN)) {
    // QPN 0 is the SMI (never on RoCE) and 0xFFFFFF the multicast QPN.
    if (auto s = check_range(M::DEST_QPN, "dest_qp_num", a.dest_qp_num, 1, kQpnMask - 1ull); !s.ok()) return s;
  }
  if (mask.has(M::MAX_QP_RD_ATOMIC)) {
    if (auto s = check_range(M::MAX_QP_RD_ATOMIC, "max_rd_atomic", a.max_rd_atomic, 0, lim.max_qp_init_rd_atom);
        !s.ok())
      return s;
  }
  if (mask.has(M::MAX_DEST_RD_ATOMIC)) {
    if (auto s = check_range(M::MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic", a.max_dest_rd_atomic, 0, lim.max_qp_rd_atom);
        !s.ok())
      return s;
  }
  return {};
}

}  // namespace

std::string transition_name(QpState from, QpState to) {
  std::string s(qp_state_name(from));
  s += "→";
  s += qp_state_name(to);
  return s;
}

std::string qp_attr_mask_names(QpAttrMaskFlags mask) {
  std::string out;
  for (unsigned bit = 0; bit < 32; ++bit) {
    const std::uint32_t b = 1u << bit;
    if ((mask.bits() & b) == 0) continue;
    if (!out.empty()) out += ", ";
    if ((kQpAttrMaskKnownBits & b) != 0) {
      out += qp_attr_mask_name(static_cast<QpAttrMask>(b));
    } else {
      out += fmt_u("unknown bit 0x%llx", b);
    }
  }
  return out;
}

TransitionRule transition_rule(QpType type, QpState from, QpState to) {
  const int ti = type_index(type);
  if (ti < 0 || !state_valid(from) || !state_valid(to)) return {};
  const Cell& c = kTable[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
  const auto i = static_cast<std::size_t>(ti);
  if (!c.legal || !c.legal_for[i]) return {};
  return TransitionRule{true, c.required[i], c.optional[i]};
}

QpState target_state(QpState current, const QpAttr& attr, QpAttrMaskFlags mask) {
  return mask.has(M::STATE) ? attr.qp_state : current;
}

Status check_modify_qp(QpType type, QpState current, const QpAttr& attr, QpAttrMaskFlags mask,
                       const ModifyLimits& limits) {
  if (type_index(type) < 0) {
    return invalid(fmt_u("QP type %llu is not RC (2), UC (3) or UD (4)", static_cast<unsigned>(type)));
  }
  if (!state_valid(current)) return invalid(fmt_u("current QP state %llu is not a QP state", static_cast<unsigned>(current)));
  if ((mask.bits() & ~kQpAttrMaskKnownBits) != 0) {
    return invalid(fmt_u("attribute mask 0x%llx has unknown bits 0x%llx", mask.bits(),
                         mask.bits() & ~kQpAttrMaskKnownBits));
  }
  if (mask.has(M::STATE) && !state_valid(attr.qp_state)) {
    return invalid(fmt_u("IBV_QP_STATE: qp_state %llu is not a QP state (0=RESET .. 6=ERR)",
                         static_cast<unsigned>(attr.qp_state)));
  }
  const QpState next = target_state(current, attr, mask);
  const std::string tname = transition_name(current, next);
  const std::string tname_for = tname + " for " + std::string(qp_type_name(type));

  const TransitionRule rule = transition_rule(type, current, next);
  if (!rule.legal) {
    if (type == QpType::RC && (current == QpState::SQE)) {
      return invalid(tname + " is not a legal transition for RC: an RC QP never enters SQE (a send error takes it to ERR)");
    }
    return invalid(tname + " is not a legal transition");
  }
  if (mask.has(M::CUR_STATE) && rule.optional.has(M::CUR_STATE) && attr.cur_qp_state != current) {
    return invalid("IBV_QP_CUR_STATE: cur_qp_state says " + std::string(qp_state_name(attr.cur_qp_state)) +
                   " but the QP is in " + std::string(qp_state_name(current)));
  }
  const QpAttrMaskFlags missing = rule.required.without(mask);
  if (missing.any()) return invalid(tname_for + " requires " + qp_attr_mask_names(missing));

  const QpAttrMaskFlags extra = mask.without(rule.required | rule.optional | M::STATE);
  if (extra.any()) {
    const bool one = (extra.bits() & (extra.bits() - 1)) == 0;
    return invalid(qp_attr_mask_names(extra) + (one ? " is" : " are") + " not allowed on " + tname_for);
  }
  const QpAttrMaskFlags unsupported = mask & limits.unsupported;
  if (unsupported.any()) {
    return Error{EOPNOTSUPP, qp_attr_mask_names(unsupported) + " not supported by " + std::string(limits.backend_name)};
  }
  if (Status s = check_alt_path(attr, mask, limits); !s.ok()) return s;
  return check_values(type, attr, mask, limits);
}

void apply_modify_qp(QpAttr& qp, const QpAttr& a, QpAttrMaskFlags mask) {
  qp.qp_state = target_state(qp.qp_state, a, mask);
  qp.cur_qp_state = qp.qp_state;
  if (mask.has(M::EN_SQD_ASYNC_NOTIFY)) qp.en_sqd_async_notify = a.en_sqd_async_notify;
  if (mask.has(M::ACCESS_FLAGS)) qp.qp_access_flags = a.qp_access_flags;
  if (mask.has(M::PKEY_INDEX)) qp.pkey_index = a.pkey_index;
  if (mask.has(M::PORT)) qp.port_num = a.port_num;
  if (mask.has(M::QKEY)) qp.qkey = a.qkey;
  if (mask.has(M::AV)) qp.ah_attr = a.ah_attr;
  if (mask.has(M::PATH_MTU)) qp.path_mtu = a.path_mtu;
  if (mask.has(M::TIMEOUT)) qp.timeout = a.timeout;
  if (mask.has(M::RETRY_CNT)) qp.retry_cnt = a.retry_cnt;
  if (mask.has(M::RNR_RETRY)) qp.rnr_retry = a.rnr_retry;
  if (mask.has(M::RQ_PSN)) qp.rq_psn = a.rq_psn;
  if (mask.has(M::MAX_QP_RD_ATOMIC)) qp.max_rd_atomic = a.max_rd_atomic;
  if (mask.has(M::MIN_RNR_TIMER)) qp.min_rnr_timer = a.min_rnr_timer;
  if (mask.has(M::SQ_PSN)) qp.sq_psn = a.sq_psn;
  if (mask.has(M::MAX_DEST_RD_ATOMIC)) qp.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask.has(M::DEST_QPN)) qp.dest_qp_num = a.dest_qp_num;
  if (mask.has(M::ALT_PATH)) {
    qp.alt_ah_attr = a.alt_ah_attr;
    qp.alt_pkey_index = a.alt_pkey_index;
    qp.alt_port_num = a.alt_port_num;
    qp.alt_timeout = a.alt_timeout;
  }
  if (mask.has(M::PATH_MIG_STATE)) qp.path_mig_state = a.path_mig_state;
}

}  // namespace qpgate::verbs
