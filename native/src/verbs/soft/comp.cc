#include "verbs/soft/comp.h"

#include <algorithm>
#include <cstring>

#include "verbs/soft/req.h"
#include "verbs/soft/soft_qp.h"
#include "verbs/timers.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft {

namespace {

constexpr std::array<std::string_view, kCompStateCount> kCompStateNames = {
    "GET_WQE", "CHECK_PSN", "CHECK_ACK", "READ", "ATOMIC", "WRITE_SEND",
    "COMP_ACK", "UPDATE_COMP", "ERROR_RETRY", "RNR_RETRY", "ERROR", "DONE",
};

bool is_read_or_atomic(WrOpcode op) { return wr_opcode_info(op).is_read_or_atomic(); }
bool is_atomic(WrOpcode op) { return wr_opcode_info(op).is(wire::kWrAtomic); }

using wire::Opcode;
bool op_is(const wire::Packet& p, Opcode o) { return p.op->opcode == o; }

}  // namespace

std::string_view comp_state_name(CompState s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kCompStateNames.size() ? kCompStateNames[i] : std::string_view("UNKNOWN");
}

Completer::Completer(SoftQp& qp) : qp_(qp) {}

void Completer::reset() {
  disarm();
  read_retry_latched_ = false;
}

void Completer::disarm() {
  ack_deadline_ns_ = kDisarmed;
  rnr_deadline_ns_ = kDisarmed;
}

void Completer::start(std::uint32_t sq_psn) {
  comp_psn_ = sq_psn & wire::kPsnMask;
  reload_retry();
}

void Completer::reload_retry() {
  retry_left_ = qp_.attr_.retry_cnt;
  rnr_left_ = qp_.attr_.rnr_retry;
}

void Completer::on_request_sent(std::int64_t now_ns) {
  if (ack_deadline_ns_ != kDisarmed) return;
  const std::uint64_t t = local_ack_timeout_ns(qp_.attr_.timeout);
  if (t == kInfiniteNs) return;
  ack_deadline_ns_ = now_ns + static_cast<std::int64_t>(t);
}

std::int64_t Completer::next_deadline_ns() const {
  return std::min(ack_deadline_ns_, rnr_deadline_ns_);
}

void Completer::progress(std::int64_t now_ns) {
  retry_left_ = qp_.attr_.retry_cnt;
  rnr_left_ = qp_.attr_.rnr_retry;
  read_retry_latched_ = false;
  ack_deadline_ns_ = kDisarmed;
  if (!qp_.req_->idle()) on_request_sent(now_ns);
}

bool Completer::complete_front(WcStatus status) {
  const SendWqe* w = qp_.sq_.front();
  if (w == nullptr || qp_.req_->wqes().empty()) return false;
  const WqeTxState& st = qp_.req_->wqes().front();
  if (status != WcStatus::IBV_WC_SUCCESS || w->signaled()) {
    Wc wc;
    wc.wr_id = w->wr_id;
    wc.status = status;
    wc.opcode = wc_opcode_for(w->opcode);
    wc.byte_len = static_cast<std::uint32_t>(w->length);
    wc.qp_num = qp_.qpn_;
    if (!qp_.complete_send(wc)) return false;  // CQ overflow: the QP is in ERR, flushed
  }
  if (st.started && wire::psn_after(wire::psn_add(st.last_psn, 1), comp_psn_)) {
    comp_psn_ = wire::psn_add(st.last_psn, 1);
  }
  qp_.req_->on_front_completed();
  return true;
}

void Completer::fail_front(WcStatus status) {
  if (qp_.attr_.qp_state == QpState::ERR) return;
  complete_front(status);
  qp_.enter_error();
}

void Completer::check_front_error() {
  if (qp_.req_->wqes().empty()) return;
  const WcStatus st = qp_.req_->wqes().front().local_error;
  if (st != WcStatus::IBV_WC_SUCCESS) fail_front(st);
}

void Completer::retry(std::uint32_t psn, std::int64_t now_ns, bool from_timeout) {
  if (retry_left_ == 0) {
    qp_.counters_.retry_exceeded.inc();
    fail_front(WcStatus::IBV_WC_RETRY_EXC_ERR);
    return;
  }
  --retry_left_;  // retry_cnt = 7 is seven retries, not infinite (IBA; rxe differs)
  qp_.counters_.completer_retry.inc();
  if (wire::psn_after(psn, comp_psn_)) comp_psn_ = psn;
  qp_.req_->go_back(from_timeout ? comp_psn_ : psn);
  ack_deadline_ns_ = kDisarmed;
  on_request_sent(now_ns);
}

int Completer::on_timers(std::int64_t now_ns) {
  if (qp_.type_ != QpType::RC || qp_.attr_.qp_state == QpState::ERR) return 0;
  int work = 0;
  if (rnr_deadline_ns_ <= now_ns) {
    rnr_deadline_ns_ = kDisarmed;
    qp_.req_->go_back(rnr_psn_);
    ack_deadline_ns_ = kDisarmed;
    on_request_sent(now_ns);
    ++work;
  }
  if (ack_deadline_ns_ <= now_ns) {
    ack_deadline_ns_ = kDisarmed;
    if (!qp_.req_->idle() && !rnr_waiting()) {
      qp_.counters_.timeouts.inc();
      retry(comp_psn_, now_ns, true);
    }
    ++work;
  }
  return work;
}

void Completer::on_response(const wire::Packet& pkt, std::int64_t now_ns) {
  if (qp_.type_ != QpType::RC) {
    qp_.counters_.unexpected_responses.inc();
    return;
  }
  const std::uint32_t psn = pkt.bth().psn();
  const auto aeth = pkt.aeth();
  const std::uint8_t syndrome = aeth ? aeth->syndrome() : wire::aeth::kAck;
  bool completed_one = false;
  std::uint32_t retry_psn = comp_psn_;
  CompState s = CompState::GET_WQE;
  const SendWqe* w = nullptr;
  WqeTxState* st = nullptr;

  while (s != CompState::DONE) {
    last_state_ = s;
    switch (s) {
      case CompState::GET_WQE: {
        w = qp_.sq_.front();
        st = qp_.req_->wqes().empty() ? nullptr : &qp_.req_->wqes().front();
        if (w == nullptr || st == nullptr || !st->started) {
          if (!completed_one) {
            if (wire::psn_before(psn, comp_psn_)) {
              qp_.counters_.stale_responses.inc();
            } else {
              qp_.counters_.unexpected_responses.inc();
            }
          }
          s = CompState::DONE;
          break;
        }
        s = CompState::CHECK_PSN;
        break;
      }

      case CompState::CHECK_PSN:
        if (wire::psn_after(psn, st->last_psn)) {
          // The response is past the oldest WQE: it acknowledges a SEND/WRITE
          // implicitly; a READ/atomic whose response never came is retried.
          if (is_read_or_atomic(w->opcode)) {
            retry_psn = comp_psn_;
            s = CompState::ERROR_RETRY;
          } else {
            s = CompState::COMP_ACK;
          }
        } else if (wire::psn_before(psn, comp_psn_)) {
          if (!completed_one) qp_.counters_.stale_responses.inc();
          s = CompState::DONE;
        } else if (completed_one && wire::psn_before(psn, st->first_psn)) {
          s = CompState::DONE;
        } else {
          s = CompState::CHECK_ACK;
        }
        break;

      case CompState::CHECK_ACK:
        if (pkt.op->is(wire::kOpRead)) {  // a READ response
          if (w->opcode != WrOpcode::RDMA_READ) {
            qp_.counters_.unexpected_responses.inc();
            s = CompState::DONE;
          } else if (psn != comp_psn_) {
            // Responses before this one were lost: re-request the rest once.
            if (read_retry_latched_) {
              qp_.counters_.stale_responses.inc();
              s = CompState::DONE;
            } else {
              qp_.counters_.read_resp_gap.inc();
              read_retry_latched_ = true;
              retry_psn = comp_psn_;
              s = CompState::ERROR_RETRY;
            }
          } else {
            s = CompState::READ;
          }
          break;
        }
        if (op_is(pkt, Opcode::kRcAtomicAcknowledge)) {
          s = is_atomic(w->opcode) && psn == st->first_psn ? CompState::ATOMIC : CompState::DONE;
          if (s == CompState::DONE) qp_.counters_.unexpected_responses.inc();
          break;
        }
        if (!op_is(pkt, Opcode::kRcAcknowledge)) {
          qp_.counters_.unexpected_responses.inc();
          s = CompState::DONE;
          break;
        }
        switch (syndrome & wire::aeth::kTypeMask) {
          case wire::aeth::kAck:
            qp_.counters_.rcvd_acks.inc();
            if (is_read_or_atomic(w->opcode)) {
              // An ACK inside a READ/atomic's PSNs carries nothing for it.
              qp_.counters_.unexpected_responses.inc();
              s = CompState::DONE;
            } else {
              s = CompState::WRITE_SEND;
            }
            break;
          case wire::aeth::kRnrNak:
            qp_.counters_.rcvd_rnr_err.inc();
            s = CompState::RNR_RETRY;
            break;
          case wire::aeth::kNak:
            switch (syndrome) {
              case wire::aeth::kNakPsnSeqError:
                qp_.counters_.rcvd_seq_err.inc();
                if (rnr_waiting() && psn == rnr_psn_) {  // already going back there after the RNR wait
                  s = CompState::DONE;
                  break;
                }
                // Everything before the NAK's PSN is acknowledged.
                if (wire::psn_after(psn, comp_psn_)) {
                  comp_psn_ = psn;
                  progress(now_ns);
                }
                retry_psn = psn;
                s = CompState::ERROR_RETRY;
                break;
              case wire::aeth::kNakInvalidRequest:
                qp_.counters_.rcvd_nak_inv_req.inc();
                fail_front(WcStatus::IBV_WC_REM_INV_REQ_ERR);
                s = CompState::DONE;
                break;
              case wire::aeth::kNakRemoteAccessError:
                qp_.counters_.rcvd_nak_rem_access.inc();
                fail_front(WcStatus::IBV_WC_REM_ACCESS_ERR);
                s = CompState::DONE;
                break;
              case wire::aeth::kNakRemoteOperationalError:
                qp_.counters_.rcvd_nak_rem_op.inc();
                fail_front(WcStatus::IBV_WC_REM_OP_ERR);
                s = CompState::DONE;
                break;
              default:
                qp_.counters_.rcvd_nak_other.inc();
                fail_front(WcStatus::IBV_WC_REM_INV_REQ_ERR);
                s = CompState::DONE;
                break;
            }
            break;
          default:  // reserved syndrome type
            qp_.counters_.unexpected_responses.inc();
            s = CompState::DONE;
            break;
        }
        break;

      case CompState::READ: {
        const std::uint32_t mtu = qp_.mtu_bytes();
        const std::uint64_t off =
            std::uint64_t{static_cast<std::uint32_t>(wire::psn_distance(psn, st->first_psn))} * mtu;
        const bool first = pkt.op->is_first();
        const bool last = pkt.op->is_last();
        const std::size_t len = pkt.payload.size();
        // A re-requested READ is answered from a FIRST (or ONLY) at the PSN it asked for.
        const bool seq_ok = (first || psn != st->first_psn) && (last == (psn == st->last_psn));
        if (!seq_ok || off + len > w->length || (!last && len != mtu) ||
            (last && off + len != w->length)) {
          qp_.counters_.unexpected_responses.inc();
          fail_front(WcStatus::IBV_WC_BAD_RESP_ERR);
          s = CompState::DONE;
          break;
        }
        // Scatter into the local SGEs (they need LOCAL_WRITE).
        std::uint64_t pos = 0;
        std::size_t done = 0;
        bool ok = true;
        for (const Sge& sge : w->sg_list()) {
          if (done == len) break;
          if (off + done >= pos + sge.length) {
            pos += sge.length;
            continue;
          }
          const std::uint64_t in = off + done - pos;
          const auto take = static_cast<std::uint32_t>(std::min<std::uint64_t>(sge.length - in, len - done));
          const MrAccess a = qp_.mrs_.check_local(qp_.pd_, sge.lkey, sge.addr + in, take, true);
          if (!a.ok()) {
            ok = false;
            break;
          }
          std::memcpy(a.data, pkt.payload.data() + done, take);
          done += take;
          pos += sge.length;
        }
        if (!ok || done != len) {
          qp_.counters_.local_prot_err.inc();
          fail_front(WcStatus::IBV_WC_LOC_PROT_ERR);
          s = CompState::DONE;
          break;
        }
        comp_psn_ = wire::psn_add(psn, 1);
        progress(now_ns);
        s = last ? CompState::COMP_ACK : CompState::DONE;
        break;
      }

      case CompState::ATOMIC: {
        const auto orig = pkt.atomic_ack_eth()->orig_remote_data();  // host order from here on
        const Sge& sge = w->sge[0];
        const MrAccess a = w->num_sge == 1 ? qp_.mrs_.check_local(qp_.pd_, sge.lkey, sge.addr, 8, true) : MrAccess{};
        if (!a.ok()) {
          qp_.counters_.local_prot_err.inc();
          fail_front(WcStatus::IBV_WC_LOC_PROT_ERR);
          s = CompState::DONE;
          break;
        }
        std::memcpy(a.data, &orig, sizeof orig);
        s = CompState::COMP_ACK;
        break;
      }

      case CompState::WRITE_SEND:
        if (wire::psn_distance(wire::psn_add(psn, 1), comp_psn_) > 0) {
          comp_psn_ = wire::psn_add(psn, 1);
          progress(now_ns);
        }
        s = psn == st->last_psn ? CompState::COMP_ACK : CompState::DONE;
        break;

      case CompState::COMP_ACK: {
        const std::uint32_t last_psn = st->last_psn;
        if (!complete_front(WcStatus::IBV_WC_SUCCESS)) {
          s = CompState::DONE;
          break;
        }
        completed_one = true;
        progress(now_ns);
        s = CompState::UPDATE_COMP;
        if (psn == last_psn) s = CompState::DONE;
        break;
      }

      case CompState::UPDATE_COMP:
        qp_.check_sq_drained();
        check_front_error();
        s = qp_.attr_.qp_state == QpState::ERR ? CompState::DONE : CompState::GET_WQE;
        break;

      case CompState::ERROR_RETRY:
        retry(retry_psn, now_ns, false);
        s = CompState::DONE;
        break;

      case CompState::RNR_RETRY: {
        if (wire::psn_after(psn, comp_psn_)) comp_psn_ = psn;  // the RNR NAK acknowledges what precedes it
        if (rnr_left_ == 0) {
          qp_.counters_.rnr_retry_exceeded.inc();
          fail_front(WcStatus::IBV_WC_RNR_RETRY_EXC_ERR);
          s = CompState::DONE;
          break;
        }
        if (qp_.attr_.rnr_retry != 7) --rnr_left_;  // 7 = retry for ever (IBA)
        rnr_psn_ = psn;
        rnr_deadline_ns_ = now_ns + static_cast<std::int64_t>(rnr_timer_ns(syndrome & wire::aeth::kValueMask));
        ack_deadline_ns_ = kDisarmed;  // the local ACK timer does not run while we wait
        s = CompState::DONE;
        break;
      }

      case CompState::ERROR:
      case CompState::DONE:
        s = CompState::DONE;
        break;
    }
  }
  if (completed_one) {
    qp_.check_sq_drained();
    check_front_error();
  }
}

}  // namespace qpgate::verbs::soft
