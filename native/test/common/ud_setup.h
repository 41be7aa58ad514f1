// Test helper shared by the ibv and conformance suites: a UD QP from RESET
// to RTS as ud_pingpong does it (Q_Key set at INIT, nothing else needed).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "verbs/device.h"

namespace qpgate::verbs::test {

inline void ready_ud(QueuePair& q, std::uint32_t qkey, std::uint32_t sq_psn = 0x123) {
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.port_num = 1;
  a.qkey = qkey;
  ASSERT_TRUE(q.modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());
  a.qp_state = QpState::RTR;
  ASSERT_TRUE(q.modify(a, QpAttrMask::STATE).ok());
  a.qp_state = QpState::RTS;
  a.sq_psn = sq_psn;
  ASSERT_TRUE(q.modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN).ok());
}

}  // namespace qpgate::verbs::test
