// Per-QP counters of the soft transport, with rxe's names where rxe has one
// (rxe_hw_counters.c: sent_pkts, rcvd_pkts, duplicate_request,
// out_of_seq_request, rcvd_seq_err, rcvd_rnr_err, retry_exceeded,
// rnr_retry_exceeded, completer_retry) and rxe's meaning:
//   out_of_seq_request  responder: a PSN ahead of the expected one was seen
//                       and the PSN sequence error NAK was sent (once per gap)
//   rcvd_seq_err        requester: a PSN sequence error NAK was received
//   rcvd_rnr_err        requester: an RNR NAK was received
//   completer_retry     requester: a go-back-N retransmission was started
// Every unusual branch of req/resp/comp bumps one of these (style.md). They
// are read by /v1/qps and /metrics from other threads: single writer (the
// engine thread owning the QP), relaxed loads for readers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace qpgate::verbs::soft {

class QpCounter {
 public:
  void inc(std::uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

// X(name): one line per counter; the name is the metric label.
#define QPGATE_SOFT_QP_COUNTERS(X)                                                          \
  /* both directions */                                                                     \
  X(sent_pkts)              /* packets handed to PacketTx (requests and responses) */       \
  X(rcvd_pkts)              /* packets given to on_packet */                                \
  X(tx_backpressure)        /* PacketTx::transmit said "full": work kept for later */      \
  /* requester */                                                                           \
  X(sent_requests)          /* request packets sent, retransmissions included */            \
  X(retransmitted_pkts)     /* request packets sent again by go-back-N */                   \
  X(completer_retry)        /* go-back-N retransmissions started */                         \
  X(timeouts)               /* local ACK timeouts that fired */                             \
  X(retry_exceeded)         /* retry_cnt exhausted: IBV_WC_RETRY_EXC_ERR */                 \
  X(rnr_retry_exceeded)     /* rnr_retry exhausted: IBV_WC_RNR_RETRY_EXC_ERR */             \
  X(path_migrations)        /* moves to the alternate path (IBV_EVENT_PATH_MIG) */          \
  X(rcvd_seq_err)           /* NAK PSN sequence error received */                           \
  X(rcvd_rnr_err)           /* RNR NAK received */                                          \
  X(rcvd_nak_inv_req)       /* NAK 0x61 received */                                         \
  X(rcvd_nak_rem_access)    /* NAK 0x62 received */                                         \
  X(rcvd_nak_rem_op)        /* NAK 0x63 received */                                         \
  X(rcvd_nak_other)         /* a NAK code we do not know: treated as 0x61 */                \
  X(rcvd_acks)              /* ACKNOWLEDGE packets received */                              \
  X(stale_responses)        /* responses for PSNs already completed: dropped */             \
  X(unexpected_responses)   /* responses with nothing outstanding or of the wrong kind */  \
  X(read_resp_gap)          /* a READ response ahead of the expected PSN: re-read */        \
  X(rd_atomic_waits)        /* a READ/atomic waited for max_rd_atomic */                    \
  X(window_waits)           /* the requester waited for the unacked-PSN window */           \
  X(local_prot_err)         /* a local SGE failed its lkey/bounds check */                  \
  /* responder */                                                                           \
  X(duplicate_request)      /* PSN before the expected one */                               \
  X(out_of_seq_request)     /* PSN after the expected one: NAK 0x60 sent (once) */          \
  X(out_of_seq_dropped)     /* further out-of-sequence packets dropped silently */          \
  X(acks_sent)              /* ACKNOWLEDGE packets sent (coalesced) */                      \
  X(acks_coalesced)         /* ACKs left out: a later ACK, NAK or response covered them */  \
  X(rnr_naks_sent)          /* RNR NAKs sent: no receive WQE */                             \
  X(naks_sent_inv_req)      /* NAK 0x61 sent */                                             \
  X(naks_sent_rem_access)   /* NAK 0x62 sent */                                             \
  X(naks_sent_rem_op)       /* NAK 0x63 sent */                                             \
  X(opcode_seq_err)         /* a MIDDLE/LAST without a FIRST, or a FIRST inside a message */\
  X(reads_executed)         /* RDMA READ requests served */                                 \
  X(reads_replayed)         /* duplicate READ requests served again from memory */          \
  X(atomics_executed)       /* atomics executed on registered memory */                     \
  X(atomics_replayed)       /* duplicate atomics answered from the cache */                 \
  X(atomic_replay_miss)     /* a duplicate atomic too old for the cache: dropped */         \
  X(uc_msgs_dropped)        /* UC: a message abandoned after a lost packet */               \
  X(uc_pkts_dropped)        /* UC: packets dropped until the next FIRST/ONLY */             \
  X(ud_no_recv_drops)       /* UD: no receive WQE posted, datagram dropped */               \
  X(ud_len_err)             /* UD: datagram larger than the receive buffer */               \
  X(drops_bad_state)        /* packets for a QP in a state that does not receive them */    \
  /* completions */                                                                         \
  X(send_wc)                /* send-queue completions written */                            \
  X(recv_wc)                /* receive completions written */                               \
  X(flushed_wqes)           /* WQEs completed with IBV_WC_WR_FLUSH_ERR */                   \
  X(cq_overflow)            /* a completion did not fit its CQ: QP_FATAL */

struct QpCounters {
#define QPGATE_X(name) QpCounter name;
  QPGATE_SOFT_QP_COUNTERS(QPGATE_X)
#undef QPGATE_X

  // fn(std::string_view name, std::uint64_t value) for every counter, in declaration order.
  template <class Fn>
  void for_each(Fn&& fn) const {
#define QPGATE_X(name) fn(std::string_view(#name), name.get());
    QPGATE_SOFT_QP_COUNTERS(QPGATE_X)
#undef QPGATE_X
  }
};

}  // namespace qpgate::verbs::soft
