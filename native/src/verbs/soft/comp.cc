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

// What was sent and not acknowledged went out on the path the peer has just
// left, and the retries spent there were spent on that path: the new one
// starts with a whole retry_cnt (as a migration on our own failure does, in
// retry()) and the requests are resent on it now, from the oldest
// unacknowledged PSN, rather than after the old path's timeout has run out
// a second time. A resend the peer already has is a duplicate it answers
// again (resp.cc), so nothing is lost and nothing is done twice.
void Completer::on_followed_migration(std::int64_t now_ns) {
  reload_retry();
  if (qp_.req_->idle()) return;
  qp_.req_->go_back(comp_psn_);
  ack_deadline_ns_ = kDisarmed;
  on_request_sent(now_ns);
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
    if (!qp_.fail_over()) {
      qp_.counters_.retry_exceeded.inc();
      fail_front(WcStatus::IBV_WC_RETRY_EXC_ERR);
      return;
    }
    // On the alternate path now (soft_apm.cc): this resend from the oldest
    // unacknowledged PSN is its first try, under its own timeout; its
    // retry_cnt is whole.
    retry_left_ = qp_.attr_.retry_cnt;
    from_timeout = true;
  } else {
    --retry_left_;  // retry_cnt = 7 is seven retries, not infinite (IBA; rxe differs)
  }
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

// ---------------------------------------------------------------- the state machine

void Completer::on_response(const wire::Packet& pkt, std::int64_t now_ns) {
  if (qp_.type_ != QpType::RC) {
    qp_.counters_.unexpected_responses.inc();
    return;
  }
  const auto aeth = pkt.aeth();
  Response r{pkt, pkt.bth().psn(), aeth ? aeth->syndrome() : wire::aeth::kAck, now_ns, comp_psn_, false, nullptr, nullptr};
  for (CompState s = CompState::GET_WQE; s != CompState::DONE; s = step(s, r)) last_state_ = s;
  if (r.completed_one) {
    qp_.check_sq_drained();
    check_front_error();
  }
}

CompState Completer::step(CompState s, Response& r) {
  switch (s) {
    case CompState::GET_WQE: return get_wqe(r);
    case CompState::CHECK_PSN: return check_psn(r);
    case CompState::CHECK_ACK: return check_ack(r);
    case CompState::READ: return read(r);
    case CompState::ATOMIC: return atomic(r);
    case CompState::WRITE_SEND: return write_send(r);
    case CompState::COMP_ACK: return comp_ack(r);
    case CompState::UPDATE_COMP: return update_comp();
    case CompState::ERROR_RETRY: return error_retry(r);
    case CompState::RNR_RETRY: return rnr_retry(r);
    case CompState::ERROR:
    case CompState::DONE: break;
  }
  return CompState::DONE;
}

// Counts a response that completes nothing and ends the walk.
CompState Completer::unexpected() {
  qp_.counters_.unexpected_responses.inc();
  return CompState::DONE;
}

// Completes the front WQE with `status` (the QP goes to ERR) and ends the walk.
CompState Completer::fail(WcStatus status) {
  fail_front(status);
  return CompState::DONE;
}

CompState Completer::get_wqe(Response& r) {
  r.w = qp_.sq_.front();
  r.st = qp_.req_->wqes().empty() ? nullptr : &qp_.req_->wqes().front();
  if (r.w != nullptr && r.st != nullptr && r.st->started) return CompState::CHECK_PSN;
  if (!r.completed_one) {
    if (wire::psn_before(r.psn, comp_psn_)) {
      qp_.counters_.stale_responses.inc();
    } else {
      qp_.counters_.unexpected_responses.inc();
    }
  }
  return CompState::DONE;
}

CompState Completer::check_psn(Response& r) {
  if (wire::psn_after(r.psn, r.st->last_psn)) {
    // The response is past the oldest WQE: it acknowledges a SEND/WRITE
    // implicitly; a READ/atomic whose response never came is retried.
    if (!wr_opcode_info(r.w->opcode).is_read_or_atomic()) return CompState::COMP_ACK;
    r.retry_psn = comp_psn_;
    return CompState::ERROR_RETRY;
  }
  if (wire::psn_before(r.psn, comp_psn_)) {
    if (!r.completed_one) qp_.counters_.stale_responses.inc();
    return CompState::DONE;
  }
  if (r.completed_one && wire::psn_before(r.psn, r.st->first_psn)) return CompState::DONE;
  return CompState::CHECK_ACK;
}

CompState Completer::check_ack(Response& r) {
  if (r.pkt.op->is(wire::kOpRead)) return check_read_response(r);
  if (r.pkt.op->opcode == wire::Opcode::kRcAtomicAcknowledge) {
    const bool ours = wr_opcode_info(r.w->opcode).is(wire::kWrAtomic) && r.psn == r.st->first_psn;
    return ours ? CompState::ATOMIC : unexpected();
  }
  if (r.pkt.op->opcode != wire::Opcode::kRcAcknowledge) return unexpected();
  switch (r.syndrome & wire::aeth::kTypeMask) {
    case wire::aeth::kAck:
      qp_.counters_.rcvd_acks.inc();
      // An ACK inside a READ/atomic's PSNs carries nothing for it.
      return wr_opcode_info(r.w->opcode).is_read_or_atomic() ? unexpected() : CompState::WRITE_SEND;
    case wire::aeth::kRnrNak:
      qp_.counters_.rcvd_rnr_err.inc();
      return CompState::RNR_RETRY;
    case wire::aeth::kNak: return check_nak(r);
    default: return unexpected();  // reserved syndrome type
  }
}

CompState Completer::check_read_response(Response& r) {
  if (r.w->opcode != WrOpcode::RDMA_READ) return unexpected();
  if (r.psn == comp_psn_) return CompState::READ;
  // Responses before this one were lost: re-request the rest once.
  if (read_retry_latched_) {
    qp_.counters_.stale_responses.inc();
    return CompState::DONE;
  }
  qp_.counters_.read_resp_gap.inc();
  read_retry_latched_ = true;
  r.retry_psn = comp_psn_;
  return CompState::ERROR_RETRY;
}

CompState Completer::check_nak(Response& r) {
  switch (r.syndrome) {
    case wire::aeth::kNakPsnSeqError:
      qp_.counters_.rcvd_seq_err.inc();
      if (rnr_waiting() && r.psn == rnr_psn_) return CompState::DONE;  // already going back there after the RNR wait
      // Everything before the NAK's PSN is acknowledged.
      if (wire::psn_after(r.psn, comp_psn_)) {
        comp_psn_ = r.psn;
        progress(r.now_ns);
      }
      r.retry_psn = r.psn;
      return CompState::ERROR_RETRY;
    case wire::aeth::kNakInvalidRequest:
      qp_.counters_.rcvd_nak_inv_req.inc();
      return fail(WcStatus::IBV_WC_REM_INV_REQ_ERR);
    case wire::aeth::kNakRemoteAccessError:
      qp_.counters_.rcvd_nak_rem_access.inc();
      return fail(WcStatus::IBV_WC_REM_ACCESS_ERR);
    case wire::aeth::kNakRemoteOperationalError:
      qp_.counters_.rcvd_nak_rem_op.inc();
      return fail(WcStatus::IBV_WC_REM_OP_ERR);
    default:
      qp_.counters_.rcvd_nak_other.inc();
      return fail(WcStatus::IBV_WC_REM_INV_REQ_ERR);
  }
}

CompState Completer::read(Response& r) {
  const std::uint32_t mtu = qp_.mtu_bytes();
  const WqeTxState& st = *r.st;
  const std::uint64_t off = std::uint64_t{static_cast<std::uint32_t>(wire::psn_distance(r.psn, st.first_psn))} * mtu;
  const bool last = r.pkt.op->is_last();
  const std::size_t len = r.pkt.payload.size();
  // A re-requested READ is answered from a FIRST (or ONLY) at the PSN it asked for.
  const bool seq_ok = (r.pkt.op->is_first() || r.psn != st.first_psn) && (last == (r.psn == st.last_psn));
  if (!seq_ok || off + len > r.w->length || (!last && len != mtu) || (last && off + len != r.w->length)) {
    qp_.counters_.unexpected_responses.inc();
    return fail(WcStatus::IBV_WC_BAD_RESP_ERR);
  }
  // Into the local SGEs (they need LOCAL_WRITE).
  if (!qp_.mrs_.scatter(qp_.pd_, r.w->sg_list(), off, r.pkt.payload)) {
    qp_.counters_.local_prot_err.inc();
    return fail(WcStatus::IBV_WC_LOC_PROT_ERR);
  }
  comp_psn_ = wire::psn_add(r.psn, 1);
  progress(r.now_ns);
  return last ? CompState::COMP_ACK : CompState::DONE;
}

CompState Completer::atomic(Response& r) {
  const auto orig = r.pkt.atomic_ack_eth()->orig_remote_data();  // host order from here on
  const Sge& sge = r.w->sge[0];
  const MrAccess a = r.w->num_sge == 1 ? qp_.mrs_.check_local(qp_.pd_, sge.lkey, sge.addr, 8, true) : MrAccess{};
  if (!a.ok()) {
    qp_.counters_.local_prot_err.inc();
    return fail(WcStatus::IBV_WC_LOC_PROT_ERR);
  }
  std::memcpy(a.data, &orig, sizeof orig);
  return CompState::COMP_ACK;
}

CompState Completer::write_send(Response& r) {
  if (wire::psn_distance(wire::psn_add(r.psn, 1), comp_psn_) > 0) {
    comp_psn_ = wire::psn_add(r.psn, 1);
    progress(r.now_ns);
  }
  return r.psn == r.st->last_psn ? CompState::COMP_ACK : CompState::DONE;
}

CompState Completer::comp_ack(Response& r) {
  const std::uint32_t last_psn = r.st->last_psn;
  if (!complete_front(WcStatus::IBV_WC_SUCCESS)) return CompState::DONE;
  r.completed_one = true;
  progress(r.now_ns);
  return r.psn == last_psn ? CompState::DONE : CompState::UPDATE_COMP;
}

CompState Completer::update_comp() {
  qp_.check_sq_drained();
  check_front_error();
  return qp_.attr_.qp_state == QpState::ERR ? CompState::DONE : CompState::GET_WQE;
}

CompState Completer::error_retry(Response& r) {
  retry(r.retry_psn, r.now_ns, false);
  return CompState::DONE;
}

CompState Completer::rnr_retry(Response& r) {
  if (wire::psn_after(r.psn, comp_psn_)) comp_psn_ = r.psn;  // the RNR NAK acknowledges what precedes it
  if (rnr_left_ == 0) {
    qp_.counters_.rnr_retry_exceeded.inc();
    return fail(WcStatus::IBV_WC_RNR_RETRY_EXC_ERR);
  }
  if (qp_.attr_.rnr_retry != 7) --rnr_left_;  // 7 = retry for ever (IBA)
  rnr_psn_ = r.psn;
  rnr_deadline_ns_ = r.now_ns + static_cast<std::int64_t>(rnr_timer_ns(r.syndrome & wire::aeth::kValueMask));
  ack_deadline_ns_ = kDisarmed;  // the local ACK timer does not run while we wait
  return CompState::DONE;
}

}  // namespace qpgate::verbs::soft
