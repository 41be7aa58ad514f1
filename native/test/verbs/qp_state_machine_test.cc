// The QP state machine: every legal transition per QP type, the attributes
// each requires and allows, every illegal transition, and value ranges.
#include "verbs/qp_state_machine.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <tuple>

namespace qpgate::verbs {
namespace {

using M = QpAttrMask;
using S = QpState;

constexpr std::array<QpType, 3> kTypes = {QpType::RC, QpType::UC, QpType::UD};
constexpr std::array<S, 7> kStates = {S::RESET, S::INIT, S::RTR, S::RTS, S::SQD, S::SQE, S::ERR};

// Attributes with valid values for every field, as rc_pingpong sets them.
QpAttr valid_attr(S from, S to) {
  QpAttr a;
  a.qp_state = to;
  a.cur_qp_state = from;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = 0x11111111;
  a.qp_access_flags = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
  a.ah_attr.dgid = Gid::from_ipv4(0x0a000002);
  a.ah_attr.port_num = 1;
  a.path_mtu = Mtu::MTU_1024;
  a.dest_qp_num = 0x12;
  a.rq_psn = 0x123456;
  a.sq_psn = 0x654321;
  a.max_dest_rd_atomic = 1;
  a.max_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.alt_ah_attr.dgid = Gid::from_ipv4(0x0b000002);
  a.alt_ah_attr.port_num = 1;
  a.alt_port_num = 1;
  a.alt_timeout = 14;
  a.path_mig_state = MigState::REARM;
  return a;
}

// The legal transitions, written out from IBA 10.3.1 / ibv_modify_qp(3)
// independently of the implementation's table.
bool expected_legal(QpType t, S from, S to) {
  if (to == S::RESET || to == S::ERR) return true;
  static const std::set<std::pair<S, S>> common = {
      {S::RESET, S::INIT}, {S::INIT, S::INIT}, {S::INIT, S::RTR}, {S::RTR, S::RTS},
      {S::RTS, S::RTS},    {S::RTS, S::SQD},   {S::SQD, S::RTS},  {S::SQD, S::SQD},
  };
  if (common.count({from, to}) != 0) return true;
  return from == S::SQE && to == S::RTS && t != QpType::RC;
}

// Every bit libibverbs defines, to probe "not allowed".
constexpr std::array<M, 22> kAllBits = {
    M::STATE,        M::CUR_STATE, M::EN_SQD_ASYNC_NOTIFY, M::ACCESS_FLAGS,       M::PKEY_INDEX,     M::PORT,
    M::QKEY,         M::AV,        M::PATH_MTU,            M::TIMEOUT,            M::RETRY_CNT,      M::RNR_RETRY,
    M::RQ_PSN,       M::MAX_QP_RD_ATOMIC, M::ALT_PATH,     M::MIN_RNR_TIMER,      M::SQ_PSN,         M::MAX_DEST_RD_ATOMIC,
    M::PATH_MIG_STATE, M::CAP,     M::DEST_QPN,            M::RATE_LIMIT,
};

std::string label(QpType t, S from, S to) { return std::string(qp_type_name(t)) + " " + transition_name(from, to); }

TEST(QpStateMachine, EveryLegalTransitionIsAcceptedWithExactlyItsRequiredAttributes) {
  int legal = 0;
  for (QpType t : kTypes) {
    for (S from : kStates) {
      for (S to : kStates) {
        const TransitionRule r = transition_rule(t, from, to);
        ASSERT_EQ(r.legal, expected_legal(t, from, to)) << label(t, from, to);
        if (!r.legal) continue;
        ++legal;
        const Status s = check_modify_qp(t, from, valid_attr(from, to), r.required | M::STATE);
        EXPECT_TRUE(s.ok()) << label(t, from, to) << ": " << s.message();
      }
    }
  }
  EXPECT_EQ(legal, 3 * (7 + 7 + 8) + 2) << "per type: any→RESET, any→ERR, 8 common; SQE→RTS for UC and UD";
}

TEST(QpStateMachine, EveryLegalTransitionAcceptsAllItsOptionalAttributes) {
  for (QpType t : kTypes) {
    for (S from : kStates) {
      for (S to : kStates) {
        const TransitionRule r = transition_rule(t, from, to);
        if (!r.legal) continue;
        const Status s = check_modify_qp(t, from, valid_attr(from, to), r.required | r.optional | M::STATE);
        EXPECT_TRUE(s.ok()) << label(t, from, to) << ": " << s.message();
      }
    }
  }
}

TEST(QpStateMachine, LeavingOutAnyRequiredAttributeIsRejectedAndNamesIt) {
  for (QpType t : kTypes) {
    for (S from : kStates) {
      for (S to : kStates) {
        const TransitionRule r = transition_rule(t, from, to);
        if (!r.legal) continue;
        for (M bit : kAllBits) {
          if (!r.required.has(bit)) continue;
          const Status s = check_modify_qp(t, from, valid_attr(from, to), r.required.without(bit) | M::STATE);
          ASSERT_FALSE(s.ok()) << label(t, from, to) << " without " << qp_attr_mask_name(bit);
          EXPECT_EQ(s.code(), EINVAL);
          EXPECT_EQ(std::string(s.message()), transition_name(from, to) + " for " + std::string(qp_type_name(t)) +
                                                  " requires " + std::string(qp_attr_mask_name(bit)));
        }
      }
    }
  }
}

TEST(QpStateMachine, AnyAttributeNeitherRequiredNorAllowedIsRejectedAndNamed) {
  int probes = 0;
  for (QpType t : kTypes) {
    for (S from : kStates) {
      for (S to : kStates) {
        const TransitionRule r = transition_rule(t, from, to);
        if (!r.legal) continue;
        for (M bit : kAllBits) {
          if (bit == M::STATE || r.required.has(bit) || r.optional.has(bit)) continue;
          ++probes;
          const Status s = check_modify_qp(t, from, valid_attr(from, to), r.required | bit | M::STATE);
          ASSERT_FALSE(s.ok()) << label(t, from, to) << " with " << qp_attr_mask_name(bit);
          EXPECT_EQ(s.code(), EINVAL);
          EXPECT_EQ(std::string(s.message()), std::string(qp_attr_mask_name(bit)) + " is not allowed on " +
                                                  transition_name(from, to) + " for " + std::string(qp_type_name(t)));
        }
      }
    }
  }
  EXPECT_GT(probes, 300);
}

TEST(QpStateMachine, EveryIllegalTransitionIsRejectedWhateverTheAttributes) {
  int illegal = 0;
  for (QpType t : kTypes) {
    for (S from : kStates) {
      for (S to : kStates) {
        if (expected_legal(t, from, to)) continue;
        ++illegal;
        QpAttrMaskFlags everything;
        for (M bit : kAllBits) everything |= bit;
        const Status s = check_modify_qp(t, from, valid_attr(from, to), everything);
        ASSERT_FALSE(s.ok()) << label(t, from, to);
        EXPECT_NE(std::string(s.message()).find(transition_name(from, to) + " is not a legal transition"),
                  std::string::npos)
            << s.message();
      }
    }
  }
  EXPECT_EQ(illegal, 3 * 49 - (3 * 22 + 2));
}

TEST(QpStateMachine, RcInitToRtrWithoutDestQpnIsRejectedAndNamesTheAttribute) {
  const QpAttr a = valid_attr(S::INIT, S::RTR);
  const Status s = check_modify_qp(QpType::RC, S::INIT, a,
                                   M::STATE | M::AV | M::PATH_MTU | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_EQ(s.message(), "INIT→RTR for RC requires IBV_QP_DEST_QPN");
}

TEST(QpStateMachine, SeveralMissingAttributesAreAllNamed) {
  const Status s = check_modify_qp(QpType::RC, S::RTR, valid_attr(S::RTR, S::RTS), M::STATE | M::SQ_PSN);
  EXPECT_EQ(s.message(),
            "RTR→RTS for RC requires IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC");
}

TEST(QpStateMachine, ResetToRtsIsNotALegalTransition) {
  const Status s = check_modify_qp(QpType::RC, S::RESET, valid_attr(S::RESET, S::RTS), M::STATE);
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_EQ(s.message(), "RESET→RTS is not a legal transition");
}

TEST(QpStateMachine, TimeoutIsNotAllowedOnUdInitToRtr) {
  const Status s = check_modify_qp(QpType::UD, S::INIT, valid_attr(S::INIT, S::RTR), M::STATE | M::TIMEOUT);
  EXPECT_EQ(s.message(), "IBV_QP_TIMEOUT is not allowed on INIT→RTR for UD");
}

TEST(QpStateMachine, UdResetToInitNeedsQkeyAndRefusesAccessFlags) {
  const QpAttr a = valid_attr(S::RESET, S::INIT);
  EXPECT_TRUE(check_modify_qp(QpType::UD, S::RESET, a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY).ok());
  EXPECT_EQ(check_modify_qp(QpType::UD, S::RESET, a, M::STATE | M::PKEY_INDEX | M::PORT).message(),
            "RESET→INIT for UD requires IBV_QP_QKEY");
  EXPECT_EQ(check_modify_qp(QpType::UD, S::RESET, a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY | M::ACCESS_FLAGS)
                .message(),
            "IBV_QP_ACCESS_FLAGS is not allowed on RESET→INIT for UD");
  EXPECT_EQ(check_modify_qp(QpType::RC, S::RESET, a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY).message(),
            "RESET→INIT for RC requires IBV_QP_ACCESS_FLAGS");
}

TEST(QpStateMachine, UcNeedsOnlyTheConnectionAttributesAndSqPsn) {
  EXPECT_TRUE(check_modify_qp(QpType::UC, S::INIT, valid_attr(S::INIT, S::RTR),
                              M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN)
                  .ok());
  EXPECT_EQ(check_modify_qp(QpType::UC, S::INIT, valid_attr(S::INIT, S::RTR),
                            M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MIN_RNR_TIMER)
                .message(),
            "IBV_QP_MIN_RNR_TIMER is not allowed on INIT→RTR for UC");
  EXPECT_TRUE(check_modify_qp(QpType::UC, S::RTR, valid_attr(S::RTR, S::RTS), M::STATE | M::SQ_PSN).ok());
  EXPECT_EQ(check_modify_qp(QpType::UC, S::RTR, valid_attr(S::RTR, S::RTS), M::STATE | M::SQ_PSN | M::TIMEOUT)
                .message(),
            "IBV_QP_TIMEOUT is not allowed on RTR→RTS for UC");
}

TEST(QpStateMachine, UdInitToRtrNeedsNothingBeyondState) {
  EXPECT_TRUE(check_modify_qp(QpType::UD, S::INIT, valid_attr(S::INIT, S::RTR), M::STATE).ok());
  EXPECT_EQ(check_modify_qp(QpType::UD, S::INIT, valid_attr(S::INIT, S::RTR), M::STATE | M::AV).message(),
            "IBV_QP_AV is not allowed on INIT→RTR for UD");
}

TEST(QpStateMachine, RcNeverLeavesSqeBecauseItNeverEntersIt) {
  const Status s = check_modify_qp(QpType::RC, S::SQE, valid_attr(S::SQE, S::RTS), M::STATE);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("an RC QP never enters SQE"), std::string::npos) << s.message();
  EXPECT_TRUE(check_modify_qp(QpType::UD, S::SQE, valid_attr(S::SQE, S::RTS), M::STATE).ok());
  EXPECT_TRUE(check_modify_qp(QpType::UC, S::SQE, valid_attr(S::SQE, S::RTS), M::STATE | M::ACCESS_FLAGS).ok());
}

TEST(QpStateMachine, NoModifyMovesAQpIntoSqe) {
  for (QpType t : kTypes) {
    for (S from : kStates) EXPECT_FALSE(transition_rule(t, from, S::SQE).legal) << label(t, from, S::SQE);
  }
}

TEST(QpStateMachine, ResetToErrIsLegalAsTheIbaSaysAnyStateToError) {
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::RESET, valid_attr(S::RESET, S::ERR), M::STATE).ok());
}

TEST(QpStateMachine, WithoutIbvQpStateTheQpStaysInItsState) {
  QpAttr a = valid_attr(S::RTS, S::RESET);  // qp_state ignored without the STATE bit
  EXPECT_EQ(target_state(S::RTS, a, QpAttrMaskFlags(M::MIN_RNR_TIMER)), S::RTS);
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::RTS, a, QpAttrMaskFlags(M::MIN_RNR_TIMER)).ok());
  EXPECT_EQ(check_modify_qp(QpType::UD, S::RTS, a, QpAttrMaskFlags(M::MIN_RNR_TIMER)).message(),
            "IBV_QP_MIN_RNR_TIMER is not allowed on RTS→RTS for UD");
}

TEST(QpStateMachine, CurStateMustMatchTheQpsRealState) {
  QpAttr a = valid_attr(S::RTS, S::RTS);
  a.cur_qp_state = S::SQD;
  const Status s = check_modify_qp(QpType::RC, S::RTS, a, M::STATE | M::CUR_STATE);
  EXPECT_EQ(s.message(), "IBV_QP_CUR_STATE: cur_qp_state says SQD but the QP is in RTS");
  EXPECT_EQ(check_modify_qp(QpType::RC, S::INIT, valid_attr(S::INIT, S::INIT), M::STATE | M::CUR_STATE).message(),
            "IBV_QP_CUR_STATE is not allowed on INIT→INIT for RC");
}

TEST(QpStateMachine, UnknownMaskBitsAndStatesAreRejected) {
  const QpAttr a = valid_attr(S::RESET, S::INIT);
  EXPECT_NE(std::string(check_modify_qp(QpType::RC, S::RESET, a, QpAttrMaskFlags::from_bits(1u << 21)).message())
                .find("unknown bits 0x200000"),
            std::string::npos);
  QpAttr bad = a;
  bad.qp_state = static_cast<S>(9);
  EXPECT_NE(std::string(check_modify_qp(QpType::RC, S::RESET, bad, M::STATE).message()).find("qp_state 9"),
            std::string::npos);
  EXPECT_FALSE(check_modify_qp(static_cast<QpType>(8), S::RESET, a, M::STATE).ok());
}

TEST(QpStateMachine, UnsupportedAttributesOfABackendAreEopnotsupp) {
  ModifyLimits lim;
  lim.unsupported = M::ALT_PATH | M::PATH_MIG_STATE;
  lim.backend_name = "the soft backend";
  const Status s = check_modify_qp(QpType::RC, S::RTS, valid_attr(S::RTS, S::RTS), M::STATE | M::ALT_PATH, lim);
  EXPECT_EQ(s.code(), EOPNOTSUPP);
  EXPECT_EQ(s.message(), "IBV_QP_ALT_PATH not supported by the soft backend");
}

TEST(QpStateMachine, AlternatePathValuesAreCheckedAsThePrimaryPathsAre) {
  const QpAttr ok = valid_attr(S::RTS, S::RTS);
  const auto check = [](const QpAttr& a, QpAttrMaskFlags extra) {
    return check_modify_qp(QpType::RC, S::RTS, a, extra | M::STATE);
  };
  EXPECT_TRUE(check(ok, M::ALT_PATH | M::PATH_MIG_STATE).ok());
  QpAttr a = ok;
  a.alt_timeout = 32;
  EXPECT_EQ(check(a, M::ALT_PATH).message(), "IBV_QP_ALT_PATH: alt_timeout 32 is out of range 0..31");
  a = ok;
  a.alt_ah_attr.dgid = Gid{};
  EXPECT_EQ(check(a, M::ALT_PATH).message(), "IBV_QP_ALT_PATH: alt_ah_attr.dgid is the zero GID");
  a = ok;
  a.alt_port_num = 0;
  EXPECT_EQ(check(a, M::ALT_PATH).message(), "IBV_QP_ALT_PATH: alt_port_num 0 is out of range 1..1");
  a = ok;
  a.path_mig_state = static_cast<MigState>(3);
  EXPECT_EQ(check(a, M::PATH_MIG_STATE).message(), "IBV_QP_PATH_MIG_STATE: path_mig_state 3 is out of range 0..2");
  // Not checked when the mask does not name them.
  a.alt_timeout = 40;
  EXPECT_TRUE(check(a, M::MIN_RNR_TIMER).ok());
}

// ---------------------------------------------------------------- values

struct RangeCase {
  const char* name;
  QpType type;
  S from;
  S to;
  QpAttrMaskFlags mask;
  void (*set)(QpAttr&);
  int code;
  const char* message;
};

const QpAttrMaskFlags kRcRtr = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC |
                               M::MIN_RNR_TIMER;
const QpAttrMaskFlags kRcRts = M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC;
const QpAttrMaskFlags kUdInit = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
const QpAttrMaskFlags kRcInit = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;

class QpAttrRanges : public ::testing::TestWithParam<RangeCase> {};

TEST_P(QpAttrRanges, AnOutOfRangeValueIsRejectedWithTheValueAndTheRange) {
  const RangeCase& c = GetParam();
  QpAttr a = valid_attr(c.from, c.to);
  ASSERT_TRUE(check_modify_qp(c.type, c.from, a, c.mask).ok()) << "baseline";
  c.set(a);
  const Status s = check_modify_qp(c.type, c.from, a, c.mask);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), c.code);
  EXPECT_EQ(s.message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Values, QpAttrRanges,
    ::testing::Values(
        RangeCase{"timeout_32", QpType::RC, S::RTR, S::RTS, kRcRts, [](QpAttr& a) { a.timeout = 32; }, EINVAL,
                  "IBV_QP_TIMEOUT: timeout 32 is out of range 0..31"},
        RangeCase{"retry_cnt_8", QpType::RC, S::RTR, S::RTS, kRcRts, [](QpAttr& a) { a.retry_cnt = 8; }, EINVAL,
                  "IBV_QP_RETRY_CNT: retry_cnt 8 is out of range 0..7"},
        RangeCase{"rnr_retry_8", QpType::RC, S::RTR, S::RTS, kRcRts, [](QpAttr& a) { a.rnr_retry = 8; }, EINVAL,
                  "IBV_QP_RNR_RETRY: rnr_retry 8 is out of range 0..7"},
        RangeCase{"min_rnr_timer_32", QpType::RC, S::INIT, S::RTR, kRcRtr, [](QpAttr& a) { a.min_rnr_timer = 32; },
                  EINVAL, "IBV_QP_MIN_RNR_TIMER: min_rnr_timer 32 is out of range 0..31"},
        RangeCase{"sq_psn_25_bits", QpType::RC, S::RTR, S::RTS, kRcRts, [](QpAttr& a) { a.sq_psn = 1u << 24; },
                  EINVAL, "IBV_QP_SQ_PSN: sq_psn 16777216 is out of range 0..16777215"},
        RangeCase{"rq_psn_25_bits", QpType::RC, S::INIT, S::RTR, kRcRtr, [](QpAttr& a) { a.rq_psn = 0xffffffff; },
                  EINVAL, "IBV_QP_RQ_PSN: rq_psn 4294967295 is out of range 0..16777215"},
        RangeCase{"path_mtu_code_0", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.path_mtu = static_cast<Mtu>(0); }, EINVAL,
                  "IBV_QP_PATH_MTU: path_mtu code 0 is not an IB MTU (1=256 .. 5=4096)"},
        RangeCase{"path_mtu_code_6", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.path_mtu = static_cast<Mtu>(6); }, EINVAL,
                  "IBV_QP_PATH_MTU: path_mtu code 6 is not an IB MTU (1=256 .. 5=4096)"},
        RangeCase{"dest_qpn_multicast", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.dest_qp_num = 0xffffff; }, EINVAL,
                  "IBV_QP_DEST_QPN: dest_qp_num 16777215 is out of range 1..16777214"},
        RangeCase{"dest_qpn_0", QpType::UC, S::INIT, S::RTR,
                  M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN, [](QpAttr& a) { a.dest_qp_num = 0; },
                  EINVAL, "IBV_QP_DEST_QPN: dest_qp_num 0 is out of range 1..16777214"},
        RangeCase{"max_rd_atomic_over_device", QpType::RC, S::RTR, S::RTS, kRcRts,
                  [](QpAttr& a) { a.max_rd_atomic = 129; }, EINVAL,
                  "IBV_QP_MAX_QP_RD_ATOMIC: max_rd_atomic 129 is out of range 0..128"},
        RangeCase{"max_dest_rd_atomic_over_device", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.max_dest_rd_atomic = 200; }, EINVAL,
                  "IBV_QP_MAX_DEST_RD_ATOMIC: max_dest_rd_atomic 200 is out of range 0..128"},
        RangeCase{"port_0", QpType::UD, S::RESET, S::INIT, kUdInit, [](QpAttr& a) { a.port_num = 0; }, EINVAL,
                  "IBV_QP_PORT: port_num 0 is out of range 1..1"},
        RangeCase{"pkey_index_1", QpType::UD, S::RESET, S::INIT, kUdInit, [](QpAttr& a) { a.pkey_index = 1; },
                  EINVAL, "IBV_QP_PKEY_INDEX: pkey_index 1 is out of range 0..0"},
        RangeCase{"controlled_qkey", QpType::UD, S::RESET, S::INIT, kUdInit, [](QpAttr& a) { a.qkey = 0x80010000; },
                  EPERM,
                  "IBV_QP_QKEY: qkey 0x80010000 has the high bit set; controlled Q_Keys (such as the GSI's "
                  "0x80010000) are reserved to privileged consumers"},
        RangeCase{"access_unknown_bit", QpType::RC, S::RESET, S::INIT, kRcInit,
                  [](QpAttr& a) { a.qp_access_flags = AccessFlags::from_bits(0x20); }, EINVAL,
                  "IBV_QP_ACCESS_FLAGS: unknown bits 0x20 (expected LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, "
                  "REMOTE_ATOMIC)"},
        RangeCase{"av_zero_dgid", QpType::RC, S::INIT, S::RTR, kRcRtr, [](QpAttr& a) { a.ah_attr.dgid = Gid{}; },
                  EINVAL, "IBV_QP_AV: ah_attr.dgid is the zero GID"},
        RangeCase{"av_multicast_dgid_on_rc", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.ah_attr.dgid = Gid::from_ipv4(0xef010203); }, EINVAL,
                  "IBV_QP_AV: ah_attr.dgid ::ffff:239.1.2.3 is a multicast GID; RC QPs connect to one unicast peer"},
        RangeCase{"av_flow_label", QpType::RC, S::INIT, S::RTR, kRcRtr,
                  [](QpAttr& a) { a.ah_attr.flow_label = 0x100000; }, EINVAL,
                  "IBV_QP_AV: ah_attr.flow_label 1048576 is out of range 0..1048575"}),
    [](const ::testing::TestParamInfo<RangeCase>& p) { return std::string(p.param.name); });

TEST(QpAttrLimits, AnSgidIndexBeyondTheGidTableIsRejected) {
  ModifyLimits lim;
  lim.gid_tbl_len = 16;
  QpAttr a = valid_attr(S::INIT, S::RTR);
  a.ah_attr.sgid_index = 16;
  EXPECT_EQ(check_modify_qp(QpType::RC, S::INIT, a, kRcRtr, lim).message(),
            "IBV_QP_AV: ah_attr.sgid_index 16 is out of range 0..15");
  a.ah_attr.sgid_index = 15;
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::INIT, a, kRcRtr, lim).ok());
}

TEST(QpAttrLimits, PathMtuAboveThePortsMaxIsRejected) {
  ModifyLimits lim;
  lim.max_mtu = Mtu::MTU_1024;
  QpAttr a = valid_attr(S::INIT, S::RTR);
  a.path_mtu = Mtu::MTU_4096;
  EXPECT_EQ(check_modify_qp(QpType::RC, S::INIT, a, kRcRtr, lim).message(),
            "IBV_QP_PATH_MTU: path_mtu 4096 exceeds the port's max_mtu 1024");
  a.path_mtu = Mtu::MTU_1024;
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::INIT, a, kRcRtr, lim).ok());
}

TEST(QpAttrLimits, BoundaryValuesAreAccepted) {
  QpAttr a = valid_attr(S::RTR, S::RTS);
  a.timeout = 31;
  a.retry_cnt = 7;
  a.rnr_retry = 0;
  a.sq_psn = 0xffffff;
  a.max_rd_atomic = 128;
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::RTR, a, kRcRts).ok());
  a.timeout = 0;  // infinite
  EXPECT_TRUE(check_modify_qp(QpType::RC, S::RTR, a, kRcRts).ok());
}

TEST(QpStateMachine, ApplyCopiesOnlyTheMaskedAttributesAndMovesTheState) {
  QpAttr qp;  // RESET, zeros
  QpAttr a = valid_attr(S::RESET, S::INIT);
  apply_modify_qp(qp, a, kRcInit);
  EXPECT_EQ(qp.qp_state, S::INIT);
  EXPECT_EQ(qp.qp_access_flags, a.qp_access_flags);
  EXPECT_EQ(qp.qkey, 0u) << "QKEY was not in the mask";
  EXPECT_EQ(qp.dest_qp_num, 0u);
}

// rc_pingpong's walk, then drain and recover, then error and reset.
TEST(QpStateMachine, AnRcQpWalksTheWholeLifecycle) {
  QpAttr qp;
  const auto step = [&](S to, QpAttrMaskFlags mask) {
    QpAttr a = valid_attr(qp.qp_state, to);
    const Status s = check_modify_qp(QpType::RC, qp.qp_state, a, mask);
    ASSERT_TRUE(s.ok()) << transition_name(qp.qp_state, to) << ": " << s.message();
    apply_modify_qp(qp, a, mask);
    EXPECT_EQ(qp.qp_state, to);
  };
  step(S::INIT, kRcInit);
  step(S::RTR, kRcRtr);
  step(S::RTS, kRcRts);
  step(S::SQD, M::STATE | M::EN_SQD_ASYNC_NOTIFY);
  step(S::SQD, M::STATE | M::TIMEOUT | M::RETRY_CNT);
  step(S::RTS, QpAttrMaskFlags(M::STATE));
  step(S::ERR, QpAttrMaskFlags(M::STATE));
  step(S::RESET, QpAttrMaskFlags(M::STATE));
  EXPECT_EQ(qp.dest_qp_num, 0x12u);
  EXPECT_EQ(qp.sq_psn, 0x654321u);
}

}  // namespace
}  // namespace qpgate::verbs
