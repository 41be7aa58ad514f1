// Named counters of the soft device's ingress (recv.cc) — one per reason a
// packet that decoded as RoCEv2 was still not delivered to a QP, like rxe's
// drop paths in rxe_recv.c. Decode and ICRC errors are wire::RxCounters;
// socket-level counts are NetCounters (net.h). /metrics exports all three
// under these names.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace qpgate::verbs::soft {

// Single writer (the engine thread), any number of readers: a relaxed
// load+store, no locked read-modify-write on the data path.
class Counter {
 public:
  void inc() { add(1); }
  void add(std::uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

#define QPGATE_INGRESS_COUNTERS(X)                                                          \
  X(delivered)            /* handed to a QP (a multicast packet counts once per QP copy) */ \
  X(icrc_unverifiable)    /* accepted although the ICRC did not match an ID-0 header */     \
  X(reserved_qpn)         /* DestQP 0 or 1 (SMI/GSI): no QP0/QP1 in the soft device */      \
  X(unknown_qpn)          /* no QP with this number */                                      \
  X(bad_opcode_for_qp)    /* the opcode's transport is not the QP's (a UD packet to RC) */  \
  X(bad_state)            /* the QP is in RESET, INIT or ERR */                             \
  X(bad_pkey)             /* BTH P_Key does not match the QP's partition */                 \
  X(bad_qkey)             /* UD: DETH Q_Key is not the QP's (IBA qkey_viol_cntr) */         \
  X(wrong_peer)           /* RC/UC: not from the address and QPN the QP is connected to */  \
  X(mcast_not_ud)         /* DestQP 0xFFFFFF with a non-UD opcode */                        \
  X(mcast_no_group)       /* multicast to a group with no attached QP */                    \
  X(mcast_to_unicast)     /* DestQP 0xFFFFFF arriving on the unicast address */             \
  X(mcast_bad_qpn)        /* to a group address with a DestQP other than 0xFFFFFF */        \
  X(cnp_ignored)          /* congestion notification packets: no DCQCN in soft (also wire cnp) */

struct IngressCounters {
#define QPGATE_DECLARE_COUNTER(name) Counter name;
  QPGATE_INGRESS_COUNTERS(QPGATE_DECLARE_COUNTER)
#undef QPGATE_DECLARE_COUNTER

  template <class Fn>
  void for_each(Fn&& fn) const {
#define QPGATE_VISIT_COUNTER(name) fn(std::string_view(#name), name.get());
    QPGATE_INGRESS_COUNTERS(QPGATE_VISIT_COUNTER)
#undef QPGATE_VISIT_COUNTER
  }
};

}  // namespace qpgate::verbs::soft
