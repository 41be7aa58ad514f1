// The responder's answers (resp.h): ACK/NAK, READ responses and atomic
// ACKs, and what back-pressure holds of them until the next pass; and the
// atomic cache that answers a duplicate atomic.
#include <algorithm>

#include "verbs/soft/resp.h"
#include "verbs/soft/soft_qp.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft {

// ---------------------------------------------------------------- AtomicCache

void AtomicCache::put(std::uint32_t psn, std::uint64_t orig) {
  e_[next_] = Entry{psn, orig};
  next_ = (next_ + 1) % kEntries;
  if (n_ < kEntries) ++n_;
}

std::optional<std::uint64_t> AtomicCache::get(std::uint32_t psn) const {
  for (std::size_t i = 0; i < n_; ++i) {
    if (e_[i].psn == psn) return e_[i].orig;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- replies

// The headers every response has: BTH to the requester and an AETH.
wire::PacketFields Responder::response_fields(wire::Opcode op, std::uint32_t psn, std::uint8_t syndrome) const {
  wire::PacketFields f;
  f.bth.opcode = static_cast<std::uint8_t>(op);
  f.bth.pkey = qp_.pkey_;
  f.bth.dest_qpn = qp_.attr_.dest_qp_num;
  f.bth.psn = psn;
  f.aeth = wire::AethFields{syndrome, msn_};
  return f;
}

void Responder::send_ack(std::uint8_t syndrome, std::uint32_t psn) {
  // An ACK acknowledges its PSN, a NAK the PSNs before it (IBA 9.7.5.1).
  const bool ack = (syndrome & wire::aeth::kTypeMask) == wire::aeth::kAck;
  cover_owed_ack(ack ? psn : wire::psn_sub(psn, 1));
  // Responses leave in PSN order: an ACK never overtakes READ responses held by back-pressure.
  if (pending_reads_.empty()) {
    if (qp_.transmit(response_fields(wire::Opcode::kRcAcknowledge, psn, syndrome), {})) {
      if (ack) qp_.counters_.acks_sent.inc();
      pending_ack_.reset();
      return;
    }
  }
  pending_ack_ = PendingAck{syndrome, psn};  // the newest answer supersedes an older one
}

// The ACK a request with AckReq asks for, owed until the receive batch
// ends; a newer one replaces it (resp.h: ACK coalescing).
void Responder::owe_ack(std::uint32_t psn) {
  if (ack_owed_) qp_.counters_.acks_coalesced.inc();
  ack_owed_ = psn;
}

// A request that did not ask: its ACK is held (resp.h: the ACK hold), and
// the first answer that covers it makes that ACK needless.
void Responder::hold_ack(std::uint32_t psn) {
  if (!held_ack_) held_ack_deadline_ns_ = qp_.now_ns_ + kAckHoldNs;
  held_ack_ = psn;
}

// An answer that acknowledges every PSN up to `through` makes the owed and
// the held ACK needless.
void Responder::cover_owed_ack(std::uint32_t through) {
  if (held_ack_ && !wire::psn_before(through, *held_ack_)) {
    held_ack_.reset();
    held_ack_deadline_ns_ = INT64_MAX;
  }
  if (!ack_owed_ || wire::psn_before(through, *ack_owed_)) return;
  ack_owed_.reset();
  qp_.counters_.acks_coalesced.inc();
}

int Responder::on_timers(std::int64_t now_ns) {
  if (!held_ack_ || now_ns < held_ack_deadline_ns_) return 0;
  const std::uint32_t psn = *held_ack_;
  held_ack_.reset();
  held_ack_deadline_ns_ = INT64_MAX;
  if (qp_.attr_.qp_state == QpState::ERR) return 0;
  qp_.counters_.acks_held.inc();
  send_ack(kAckUnlimited, psn);
  return pending_ack_ ? 0 : 1;
}

int Responder::send_owed_ack() {
  if (!ack_owed_) return 0;
  const std::uint32_t psn = *ack_owed_;
  ack_owed_.reset();
  if (qp_.attr_.qp_state == QpState::ERR) return 0;  // the QP answers nothing more
  send_ack(kAckUnlimited, psn);
  return pending_ack_ ? 0 : 1;
}

bool Responder::send_atomic_ack(std::uint32_t psn, std::uint64_t orig) {
  wire::PacketFields f = response_fields(wire::Opcode::kRcAtomicAcknowledge, psn, kAckUnlimited);
  f.orig_remote_data = orig;
  cover_owed_ack(wire::psn_sub(psn, 1));
  // Lost to back-pressure, it is like a lost packet: the requester retries
  // and the duplicate is answered from the cache.
  return qp_.transmit(f, {});
}

bool Responder::pump_read(PendingRead& r) {
  const std::uint32_t mtu = qp_.mtu_bytes();
  while (true) {
    const std::uint32_t n = std::min(mtu, r.remaining);
    const bool last = r.remaining <= mtu;
    wire::Opcode op = r.first ? (last ? wire::Opcode::kRcRdmaReadResponseOnly : wire::Opcode::kRcRdmaReadResponseFirst)
                              : (last ? wire::Opcode::kRcRdmaReadResponseLast : wire::Opcode::kRcRdmaReadResponseMiddle);
    // Checked per packet: the region may have been deregistered since the request.
    const MrAccess a = qp_.mrs_.check_remote(qp_.pd_, r.rkey, r.va, n, Access::REMOTE_READ);
    if (!a.ok()) {
      qp_.counters_.naks_sent_rem_access.inc();
      r.remaining = 0;
      class_c_error(wire::aeth::kNakRemoteAccessError, r.psn);
      return true;
    }
    const wire::PacketFields f = response_fields(op, r.psn, kAckUnlimited);
    if (!qp_.transmit(f, std::span<const std::uint8_t>(a.data, n))) return false;
    cover_owed_ack(wire::psn_sub(r.psn, 1));
    r.psn = wire::psn_add(r.psn, 1);
    r.va += n;
    r.remaining -= n;
    r.first = false;
    if (last) return true;
  }
}

int Responder::flush_pending() {
  int sent = 0;
  while (!pending_reads_.empty()) {
    if (!pump_read(pending_reads_.front())) return sent;
    pending_reads_.pop_front();
    ++sent;
  }
  if (pending_ack_) {
    const PendingAck a = *pending_ack_;
    send_ack(a.syndrome, a.psn);
    if (!pending_ack_) ++sent;
  }
  return sent + send_owed_ack();
}

void Responder::class_c_error(std::uint8_t nak, std::uint32_t psn) {
  send_ack(nak, psn);
  if (nak == wire::aeth::kNakInvalidRequest) qp_.raise(EventType::QP_REQ_ERR);
  if (nak == wire::aeth::kNakRemoteAccessError) qp_.raise(EventType::QP_ACCESS_ERR);
  qp_.enter_error();
}

}  // namespace qpgate::verbs::soft
