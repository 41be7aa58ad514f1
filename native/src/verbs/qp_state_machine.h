// The QP state machine (IBA chapter 10, ibv_modify_qp(3)), independent of any
// backend: given a QP type, its current state, and the attributes and mask
// of a modify, is it legal, and if not, exactly why.
//
//   RESET → INIT → RTR → RTS ⇄ SQD          any → RESET, any → ERR
//                        ↑                   INIT → INIT, RTS → RTS, SQD → SQD
//                        SQE (UC/UD only)    SQE → RTS
//
// The required and allowed attributes of each transition are the kernel's
// ib_modify_qp_is_ok() table for RC, UC and UD (facts only; not its code).
// An attribute that is neither required nor allowed is an error, as there.
// Where this differs from the kernel (each a choice, see the .cc):
//  - RESET → ERR is legal (IBA: "any state → Error"); the kernel refuses it.
//  - SQE → RTS is illegal for RC: an RC QP never enters SQE (send errors
//    take it to ERR), the kernel's table accepts it with no attributes.
//  - IBV_QP_CUR_STATE must equal the QP's real state (the kernel uses it in
//    place of the real state).
//  - A Q_Key with the high bit set (a controlled Q_Key) is EPERM.
// Values are range-checked: timeout, min_rnr_timer 0..31; retry_cnt,
// rnr_retry 0..7; PSNs and QPNs 24 bits; path MTU a valid code no larger
// than the port's; rd_atomic depths within the device's; port and P_Key/GID
// indices within the tables.
#pragma once

#include <cstdint>
#include <string>

#include "verbs/attr.h"
#include "verbs/error.h"
#include "verbs/types.h"

namespace qpgate::verbs {

// What one transition requires and allows, for one QP type.
struct TransitionRule {
  bool legal = false;
  QpAttrMaskFlags required;  // beyond IBV_QP_STATE
  QpAttrMaskFlags optional;
};
TransitionRule transition_rule(QpType type, QpState from, QpState to);

// Device and port bounds the values are checked against. The defaults are
// the soft device's (rxe_param.h values).
struct ModifyLimits {
  std::uint8_t phys_port_cnt = 1;
  std::uint16_t pkey_tbl_len = 1;
  std::uint32_t gid_tbl_len = 1024;
  Mtu max_mtu = Mtu::MTU_4096;
  std::uint32_t max_qp_rd_atom = 128;       // bound on max_dest_rd_atomic
  std::uint32_t max_qp_init_rd_atom = 128;  // bound on max_rd_atomic
  // Attributes the backend does not implement (soft: ALT_PATH,
  // PATH_MIG_STATE, RATE_LIMIT): EOPNOTSUPP when present in a legal modify.
  QpAttrMaskFlags unsupported;
  std::string_view backend_name = "this backend";
};

// The state a modify moves to: attr.qp_state with IBV_QP_STATE, else the current state.
QpState target_state(QpState current, const QpAttr& attr, QpAttrMaskFlags mask);

// Ok, or EINVAL (EPERM, EOPNOTSUPP) with a message such as
//   "INIT→RTR for RC requires IBV_QP_DEST_QPN"
//   "RESET→RTS is not a legal transition"
//   "IBV_QP_TIMEOUT is not allowed on INIT→RTR for UD"
//   "IBV_QP_RETRY_CNT: retry_cnt 8 is out of range 0..7"
Status check_modify_qp(QpType type, QpState current, const QpAttr& attr, QpAttrMaskFlags mask,
                       const ModifyLimits& limits = {});

// Copies the fields named by mask from attr into qp (the QP's stored
// attributes) and sets qp.qp_state to the target state. Call only after
// check_modify_qp() accepted the same arguments.
void apply_modify_qp(QpAttr& qp, const QpAttr& attr, QpAttrMaskFlags mask);

// "INIT→RTR" (for messages and logs).
std::string transition_name(QpState from, QpState to);
// "IBV_QP_AV, IBV_QP_DEST_QPN" for a set of mask bits.
std::string qp_attr_mask_names(QpAttrMaskFlags mask);

}  // namespace qpgate::verbs
