// The order handler's counters: every reject by reason, every decode error
// by kind, and the flow (the list order_counters.def declares). Engine-thread writers, anyone reads (/metrics).
#pragma once

#include <array>

#include "engine/counters.h"
#include "orders/codec.h"
#include "orders/order_counters.def"
#include "orders/types.h"

namespace qpgate::orders {

using engine::SingleWriterCounter;

struct alignas(64) HandlerCounters {
  std::array<SingleWriterCounter, kRejectReasons> rejects;      // by RejectReason
  std::array<SingleWriterCounter, kDecodeErrors> decode_errors; // by DecodeError (each also a MALFORMED reject)
  QPGATE_ORDER_HANDLER_COUNTERS(QPGATE_COUNTER_MEMBER)  // order_counters.def

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_ORDER_HANDLER_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

}  // namespace qpgate::orders
