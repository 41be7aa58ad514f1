// Per-QP counters of the soft transport, with rxe's names where rxe has one
// (rxe_hw_counters.c: sent_pkts, rcvd_pkts, duplicate_request,
// out_of_seq_request, rcvd_seq_err, rcvd_rnr_err, retry_exceeded,
// rnr_retry_exceeded, completer_retry) and rxe's meaning:
//   out_of_seq_request  responder: a PSN ahead of the expected one was seen
//                       and the PSN sequence error NAK was sent (once per gap)
//   rcvd_seq_err        requester: a PSN sequence error NAK was received
//   rcvd_rnr_err        requester: an RNR NAK was received
//   completer_retry     requester: a go-back-N retransmission was started
// The list is qp_counters.def. Every unusual branch of req/resp/comp bumps
// one of these (style.md). They are read by /v1/qps and /metrics from other
// threads: single writer (the engine thread owning the QP), relaxed loads for
// readers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "verbs/soft/qp_counters.def"

namespace qpgate::verbs::soft {

class QpCounter {
 public:
  void inc(std::uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

struct QpCounters {
#define QPGATE_X(name, help, family, label) QpCounter name;
  QPGATE_SOFT_QP_COUNTERS(QPGATE_X)
#undef QPGATE_X

  // fn(std::string_view name, std::uint64_t value) for every counter, in declaration order.
  template <class Fn>
  void for_each(Fn&& fn) const {
#define QPGATE_X(name, help, family, label) fn(std::string_view(#name), name.get());
    QPGATE_SOFT_QP_COUNTERS(QPGATE_X)
#undef QPGATE_X
  }
};

}  // namespace qpgate::verbs::soft
