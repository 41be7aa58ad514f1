// The completer (≈ rxe_comp.c): consumes ACKs, NAKs, READ responses and
// atomic ACKs for an RC QP; completes send WQEs strictly in order; owns the
// local ACK timer and the RNR timer and the retry accounting.
//
// State machine, as rxe_comp.c: one function per CompState that returns the
// next state, driven by on_response's loop (names in comp.cc):
//   GET_WQE → CHECK_PSN → CHECK_ACK → {READ, ATOMIC, WRITE_SEND} → COMP_ACK
//   → UPDATE_COMP → DONE, with ERROR_RETRY, RNR_RETRY and ERROR exits.
//
// Retry rules (the IBA's, as rxe 6.1 keeps them: test/fixtures/captures/README.md):
//  - local ACK timeout 4.096 µs × 2^timeout (0 = never): go-back-N from the
//    oldest unacknowledged PSN, retry_cnt decremented. retry_cnt = 7 is 7
//    retries, NOT infinite (the IBA; rxe treats 7 as infinite — we don't).
//  - NAK PSN sequence error: go-back-N from the NAK's PSN; it counts against
//    retry_cnt as in rxe (COMPST_ERROR_RETRY) and as the IBA's "sequence
//    error" retry (9.9.2.1). Both counters are reloaded whenever a response
//    acknowledges forward progress, so only consecutive failures exhaust it.
//  - RNR NAK: wait the RNR timer of its code, then go-back-N from its PSN;
//    rnr_retry decremented unless it is 7 (infinite, IBA and rxe agree).
//  - NAK 0x61/0x62/0x63 → IBV_WC_REM_INV_REQ_ERR / REM_ACCESS_ERR /
//    REM_OP_ERR on the WQE, and the QP to ERR.
//  - a READ response ahead of the expected PSN means responses were lost:
//    the READ is re-requested from the first missing PSN at once (rxe waits
//    for the timeout); latched until progress, so a burst retries once.
//  - an ACK past a READ/atomic's last PSN with the READ/atomic incomplete
//    means its response was lost: go-back-N (rxe: COMPST_ERROR_RETRY).
// Atomic results are written to the local 8-byte SGE in HOST byte order (as
// rxe delivers; mlx5 writes network order — see wr.h).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "verbs/types.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {

class SoftQp;
struct SendWqe;
struct WqeTxState;

enum class CompState : std::uint8_t {
  GET_WQE,
  CHECK_PSN,
  CHECK_ACK,
  READ,
  ATOMIC,
  WRITE_SEND,
  COMP_ACK,
  UPDATE_COMP,
  ERROR_RETRY,
  RNR_RETRY,
  ERROR,
  DONE,
};
inline constexpr int kCompStateCount = 12;
std::string_view comp_state_name(CompState s);

class Completer {
 public:
  explicit Completer(SoftQp& qp);

  void reset();                          // RESET / fresh RTS
  void start(std::uint32_t sq_psn);      // RTR→RTS
  void reload_retry();                   // retry_cnt/rnr_retry changed by modify
  void on_followed_migration(std::int64_t now_ns);  // the peer moved us to the alternate path
  void on_response(const wire::Packet& pkt, std::int64_t now_ns);
  int on_timers(std::int64_t now_ns);    // fires what is due; work done
  std::int64_t next_deadline_ns() const;
  void on_request_sent(std::int64_t now_ns);  // arm the local ACK timer if it is not
  void check_front_error();              // the front WQE failed locally: complete it, QP → ERR
  void disarm();

  std::uint32_t comp_psn() const { return comp_psn_; }
  bool rnr_waiting() const { return rnr_deadline_ns_ != kDisarmed; }
  // The last state each step took (for logs and tests).
  CompState last_state() const { return last_state_; }

 private:
  static constexpr std::int64_t kDisarmed = INT64_MAX;

  // The response packet in hand and the send WQE the walk is at.
  struct Response {
    const wire::Packet& pkt;
    std::uint32_t psn;
    std::uint8_t syndrome;     // AETH (an ACK when there is none)
    std::int64_t now_ns;
    std::uint32_t retry_psn;   // where ERROR_RETRY goes back to
    bool completed_one = false;
    const SendWqe* w = nullptr;
    WqeTxState* st = nullptr;
  };

  // One function per state, each returning the next.
  CompState step(CompState s, Response& r);
  CompState get_wqe(Response& r);
  CompState check_psn(Response& r);
  CompState check_ack(Response& r);
  CompState check_read_response(Response& r);
  CompState check_nak(Response& r);
  CompState read(Response& r);
  CompState atomic(Response& r);
  CompState write_send(Response& r);
  CompState comp_ack(Response& r);
  CompState update_comp();
  CompState error_retry(Response& r);
  CompState rnr_retry(Response& r);
  CompState unexpected();
  CompState fail(WcStatus status);

  bool complete_front(WcStatus status);  // false when the QP went to ERR
  void progress(std::int64_t now_ns);    // forward progress: retries reloaded, timer re-armed
  void retry(std::uint32_t psn, std::int64_t now_ns, bool from_timeout);
  void fail_front(WcStatus status);

  SoftQp& qp_;
  std::uint32_t comp_psn_ = 0;     // oldest PSN not yet acknowledged
  std::uint8_t retry_left_ = 0;
  std::uint8_t rnr_left_ = 0;
  std::int64_t ack_deadline_ns_ = kDisarmed;
  std::int64_t rnr_deadline_ns_ = kDisarmed;
  std::uint32_t rnr_psn_ = 0;
  bool read_retry_latched_ = false;
  CompState last_state_ = CompState::DONE;
};

}  // namespace qpgate::verbs::soft
