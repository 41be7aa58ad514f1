#include "verbs/soft/resp.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "verbs/soft/soft_qp.h"
#include "wire/opcode.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft {

namespace {

constexpr std::array<std::string_view, kRespStateCount> kRespStateNames = {
    "CHK_PSN",      "CHK_OP_SEQ",   "CHK_OP_VALID", "CHK_RESOURCE",      "CHK_LENGTH",         "CHK_RKEY",
    "EXECUTE",      "READ_REPLY",   "ATOMIC_REPLY", "COMPLETE",          "ACKNOWLEDGE",        "CLEANUP",
    "DUPLICATE_REQUEST", "ERR_PSN_OUT_OF_SEQ", "ERR_RNR", "ERR_INVALID_REQUEST", "ERR_REMOTE_ACCESS",
    "ERR_LENGTH",   "ERR_LOCAL",    "DROP",         "DONE",
};

constexpr std::uint8_t kNoOpcode = 0xff;
constexpr std::size_t kGrhBytes = 40;

// kOpSend marks "consumes a receive WQE", which WRITE_*_WITH_IMM do too.
bool is_send(const wire::OpcodeInfo* op) { return op->is(wire::kOpSend) && !op->is(wire::kOpWrite); }
bool is_write(const wire::OpcodeInfo* op) { return op->is(wire::kOpWrite); }
bool is_read(const wire::OpcodeInfo* op) { return op->is(wire::kOpRead) && op->is(wire::kOpRequest); }
bool is_atomic(const wire::OpcodeInfo* op) { return op->is(wire::kOpAtomic); }

// The operation within a transport (opcode & 0x1f): first/middle of a SEND or WRITE.
bool opcode_in_send(std::uint8_t op) { const auto b = op & 0x1f; return b == 0x00 || b == 0x01; }
bool opcode_in_write(std::uint8_t op) { const auto b = op & 0x1f; return b == 0x06 || b == 0x07; }

}  // namespace

std::string_view resp_state_name(RespState s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kRespStateNames.size() ? kRespStateNames[i] : std::string_view("UNKNOWN");
}

// ---------------------------------------------------------------- Responder

Responder::Responder(SoftQp& qp) : qp_(qp) {}

void Responder::reset() {
  epsn_ = 0;
  msn_ = 0;
  sent_psn_nak_ = false;
  cur_opcode_ = kNoOpcode;
  wqe_.reset();
  recv_offset_ = 0;
  write_resid_ = 0;
  uc_drop_ = false;
  atomics_.clear();
  pending_ack_.reset();
  ack_owed_.reset();
  held_ack_.reset();
  held_ack_deadline_ns_ = INT64_MAX;
  pending_reads_.clear();
}

void Responder::start(std::uint32_t rq_psn) {
  epsn_ = rq_psn & wire::kPsnMask;
  sent_psn_nak_ = false;
  cur_opcode_ = kNoOpcode;
}

std::optional<RecvWqe> Responder::take_held_wqe() {
  auto w = std::move(wqe_);
  wqe_.reset();
  recv_offset_ = 0;
  return w;
}

bool Responder::take_recv_wqe() {
  if (wqe_) return true;
  std::optional<RecvWqe> w = qp_.srq_ != nullptr ? qp_.srq_->take() : qp_.rq_.take();
  if (!w) return false;
  wqe_ = *w;
  recv_offset_ = 0;
  return true;
}

bool Responder::scatter(const wire::Packet& pkt, std::uint64_t offset) {
  return qp_.mrs_.scatter(qp_.pd_, wqe_->sg_list(), offset, pkt.payload);
}

bool Responder::complete_recv(WcStatus status, std::uint32_t byte_len, const wire::Packet* pkt, bool write_imm) {
  if (!wqe_) return true;
  Wc wc;
  wc.wr_id = wqe_->wr_id;
  wc.status = status;
  wc.opcode = write_imm ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV;
  wc.byte_len = byte_len;
  wc.qp_num = qp_.qpn_;
  wc.src_qp = qp_.attr_.dest_qp_num;
  if (pkt != nullptr) {
    if (auto imm = pkt->imm_dt()) {
      wc.imm_data = imm->imm();
      wc.wc_flags |= WcFlag::WITH_IMM;
    }
    if (auto deth = pkt->deth()) {
      wc.src_qp = deth->src_qpn();
      wc.wc_flags |= WcFlag::GRH;
    }
  }
  wqe_.reset();
  recv_offset_ = 0;
  return qp_.complete_recv(wc);
}

void Responder::receive_ud(const wire::Packet& pkt, const RxMeta& meta) {
  if (pkt.op->transport != wire::Transport::kUd) {
    qp_.counters_.drops_bad_state.inc();
    return;
  }
  if (!take_recv_wqe()) {
    qp_.counters_.ud_no_recv_drops.inc();
    return;
  }
  const std::uint64_t total = kGrhBytes + pkt.payload.size();
  if (total > wqe_->length) {
    qp_.counters_.ud_len_err.inc();
    complete_recv(WcStatus::IBV_WC_LOC_LEN_ERR, 0, &pkt, false);
    return;
  }
  // The GRH area: RoCEv2/IPv4 puts the 20-byte IPv4 header at offset 20 (the
  // first 20 bytes are undefined; we zero them), IPv6 the whole 40-byte header.
  std::array<std::uint8_t, kGrhBytes> grh{};
  std::array<std::uint8_t, wire::kMaxIpUdpHeaderBytes> hdr{};
  wire::OuterOptions opt;
  opt.tos_or_traffic_class = meta.traffic_class;
  opt.ttl_or_hop_limit = meta.hop_limit;
  if (wire::build_ip_udp_headers(hdr, meta.flow, pkt.bytes.size(), opt) != 0) {
    if (meta.flow.src.family == wire::IpFamily::kIpv4) {
      std::memcpy(grh.data() + 20, hdr.data(), wire::kIpv4HeaderBytes);
    } else {
      std::memcpy(grh.data(), hdr.data(), wire::kIpv6HeaderBytes);
    }
  }
  if (!qp_.mrs_.scatter(qp_.pd_, wqe_->sg_list(), 0, grh) ||
      !qp_.mrs_.scatter(qp_.pd_, wqe_->sg_list(), kGrhBytes, pkt.payload)) {
    qp_.counters_.local_prot_err.inc();
    complete_recv(WcStatus::IBV_WC_LOC_PROT_ERR, 0, &pkt, false);
    return;
  }
  complete_recv(WcStatus::IBV_WC_SUCCESS, static_cast<std::uint32_t>(total), &pkt, false);
}

// ---------------------------------------------------------------- the state machine

void Responder::on_request(const wire::Packet& pkt, const RxMeta& meta) {
  if (qp_.type_ == QpType::UD) {
    receive_ud(pkt, meta);
    return;
  }
  if (pkt.op->transport != transport_of(qp_.type_)) {
    qp_.counters_.drops_bad_state.inc();
    return;
  }
  Request r{pkt, pkt.op, pkt.bth().opcode(), pkt.bth().psn(), pkt.payload.size(), qp_.type_ == QpType::RC, {}};
  for (RespState s = RespState::CHK_PSN; s != RespState::DONE; s = step(s, r)) last_state_ = s;
}

RespState Responder::step(RespState s, Request& r) {
  switch (s) {
    case RespState::CHK_PSN: return r.rc ? check_psn(r) : check_psn_uc(r);
    case RespState::CHK_OP_SEQ: return check_op_seq(r);
    case RespState::CHK_OP_VALID: return check_op_valid(r);
    case RespState::CHK_RESOURCE: return check_resource(r);
    case RespState::CHK_LENGTH: return check_length(r);
    case RespState::CHK_RKEY: return check_rkey(r);
    case RespState::EXECUTE: return execute(r);
    case RespState::READ_REPLY: return read_reply(r);
    case RespState::ATOMIC_REPLY: return atomic_reply(r);
    case RespState::COMPLETE: return complete(r);
    case RespState::ACKNOWLEDGE: return acknowledge(r);
    case RespState::DUPLICATE_REQUEST: return duplicate_request(r);
    case RespState::ERR_PSN_OUT_OF_SEQ: return err_psn_out_of_seq();
    case RespState::ERR_RNR: return err_rnr(r);
    case RespState::ERR_INVALID_REQUEST: return err_invalid_request(r);
    case RespState::ERR_REMOTE_ACCESS: return err_remote_access(r);
    case RespState::ERR_LENGTH: return err_length(r);
    case RespState::ERR_LOCAL: return err_local(r);
    case RespState::DROP: return drop(r);
    case RespState::CLEANUP:
    case RespState::DONE: break;
  }
  return RespState::DONE;
}

// A check an RC request fails is answered with a NAK (rc_state); UC has no
// NAKs and drops the rest of the message.
RespState Responder::fail(const Request& r, RespState rc_state) { return r.rc ? rc_state : RespState::DROP; }

// UC: gives up the message in progress; its receive WQE is kept for the next one.
void Responder::uc_abandon() {
  if (cur_opcode_ != kNoOpcode) qp_.counters_.uc_msgs_dropped.inc();
  cur_opcode_ = kNoOpcode;
  recv_offset_ = 0;
}

// UC: abandons the message at `psn` and, with `rest`, drops its later packets.
void Responder::uc_skip(std::uint32_t psn, bool rest) {
  uc_abandon();
  uc_drop_ = rest;
  epsn_ = wire::psn_add(psn, 1);
}

RespState Responder::check_psn(Request& r) {
  const std::int32_t d = wire::psn_distance(r.psn, epsn_);
  if (d < 0) {
    qp_.counters_.duplicate_request.inc();
    return RespState::DUPLICATE_REQUEST;
  }
  if (d == 0) {
    sent_psn_nak_ = false;
    return RespState::CHK_OP_SEQ;
  }
  if (sent_psn_nak_) {
    qp_.counters_.out_of_seq_dropped.inc();
    return RespState::DONE;
  }
  sent_psn_nak_ = true;
  qp_.counters_.out_of_seq_request.inc();
  return RespState::ERR_PSN_OUT_OF_SEQ;
}

// UC: a gap loses the message in progress; resume at a FIRST/ONLY.
RespState Responder::check_psn_uc(Request& r) {
  if (r.psn != epsn_) {
    uc_abandon();
    epsn_ = r.psn;
    uc_drop_ = !r.op->is_first();
  }
  if (uc_drop_ && !r.op->is_first()) {
    qp_.counters_.uc_pkts_dropped.inc();
    epsn_ = wire::psn_add(r.psn, 1);
    return RespState::DONE;
  }
  uc_drop_ = false;
  return RespState::CHK_OP_SEQ;
}

RespState Responder::check_op_seq(Request& r) {
  const wire::OpcodeInfo* op = r.op;
  bool ok;
  if (opcode_in_send(cur_opcode_) && cur_opcode_ != kNoOpcode) {
    ok = is_send(op) && !op->is_first();
  } else if (opcode_in_write(cur_opcode_)) {
    ok = is_write(op) && !op->is_first();
  } else {
    ok = op->is_first();
  }
  if (ok) return RespState::CHK_OP_VALID;
  qp_.counters_.opcode_seq_err.inc();
  if (r.rc) return RespState::ERR_INVALID_REQUEST;
  if (!op->is_first()) return RespState::DROP;
  uc_abandon();  // the tail of the previous message was lost
  return RespState::CHK_OP_VALID;
}

RespState Responder::check_op_valid(Request& r) {
  const AccessFlags qa = qp_.attr_.qp_access_flags;
  const wire::OpcodeInfo* op = r.op;
  const bool ok = (!is_write(op) || qa.has(Access::REMOTE_WRITE)) && (!is_read(op) || qa.has(Access::REMOTE_READ)) &&
                  (!is_atomic(op) || qa.has(Access::REMOTE_ATOMIC));
  return ok ? RespState::CHK_RESOURCE : fail(r, RespState::ERR_INVALID_REQUEST);
}

RespState Responder::check_resource(Request& r) {
  const bool needs_wqe = (is_send(r.op) && r.op->is_first()) || (is_write(r.op) && r.op->is(wire::kOpImm));
  if (needs_wqe && !take_recv_wqe()) return r.rc ? RespState::ERR_RNR : RespState::DROP;
  return RespState::CHK_LENGTH;
}

RespState Responder::check_length(Request& r) {
  const wire::OpcodeInfo* op = r.op;
  const std::uint32_t mtu = qp_.mtu_bytes();
  if (op->carries_payload() && (r.len > mtu || (!op->is_last() && r.len != mtu))) {
    return fail(r, RespState::ERR_INVALID_REQUEST);
  }
  if (is_send(op) && recv_offset_ + r.len > wqe_->length) return RespState::ERR_LENGTH;
  if (!is_write(op)) return RespState::CHK_RKEY;
  if (op->is_first()) {
    const auto reth = r.pkt.reth();
    write_va_ = reth->va();
    write_rkey_ = reth->rkey();
    write_len_ = reth->dma_len();
    write_resid_ = write_len_;
  }
  const bool bad = r.len > write_resid_ || (op->is_last() && r.len != write_resid_);
  return bad ? fail(r, RespState::ERR_INVALID_REQUEST) : RespState::CHK_RKEY;
}

// The remote memory the request names, checked against its rkey and access.
MrAccess Responder::remote_access(const Request& r) const {
  const wire::OpcodeInfo* op = r.op;
  if (is_write(op) && op->is_first()) {
    return qp_.mrs_.check_remote(qp_.pd_, write_rkey_, write_va_, write_len_, Access::REMOTE_WRITE);
  }
  if (is_read(op)) {
    const auto reth = r.pkt.reth();
    return qp_.mrs_.check_remote(qp_.pd_, reth->rkey(), reth->va(), reth->dma_len(), Access::REMOTE_READ);
  }
  if (is_atomic(op)) {
    const auto a = r.pkt.atomic_eth();
    return qp_.mrs_.check_atomic(qp_.pd_, a->rkey(), a->va());
  }
  return MrAccess{MrCheck::OK};
}

RespState Responder::check_rkey(Request& r) {
  r.access = remote_access(r);
  if (r.access.ok()) return RespState::EXECUTE;
  if (!r.rc) return RespState::DROP;
  return remote_nak_is_invalid_request(r.access.check) ? RespState::ERR_INVALID_REQUEST : RespState::ERR_REMOTE_ACCESS;
}

RespState Responder::execute(Request& r) {
  const wire::OpcodeInfo* op = r.op;
  if (is_send(op)) {
    if (!scatter(r.pkt, recv_offset_)) return RespState::ERR_LOCAL;
    recv_offset_ += r.len;
  } else if (is_write(op) && r.len > 0) {
    // Checked again per packet: the region may have gone since the FIRST.
    const MrAccess a = qp_.mrs_.check_remote(qp_.pd_, write_rkey_, write_va_, r.len, Access::REMOTE_WRITE);
    if (!a.ok()) return fail(r, RespState::ERR_REMOTE_ACCESS);
    std::memcpy(a.data, r.pkt.payload.data(), r.len);
    write_va_ += r.len;
    write_resid_ -= static_cast<std::uint32_t>(r.len);
  }
  if (is_read(op)) return RespState::READ_REPLY;
  if (is_atomic(op)) return RespState::ATOMIC_REPLY;
  cur_opcode_ = op->is_last() ? kNoOpcode : r.opcode;
  return op->is_last() ? RespState::COMPLETE : RespState::ACKNOWLEDGE;
}

RespState Responder::read_reply(Request& r) {
  const auto reth = r.pkt.reth();
  const std::uint32_t mtu = qp_.mtu_bytes();
  const std::uint32_t n = reth->dma_len() == 0 ? 1 : (reth->dma_len() + mtu - 1) / mtu;
  epsn_ = wire::psn_add(r.psn, n);
  ++msn_;
  qp_.counters_.reads_executed.inc();
  pending_reads_.push_back(PendingRead{r.psn, reth->va(), reth->rkey(), reth->dma_len(), true});
  flush_pending();
  return RespState::CLEANUP;
}

RespState Responder::atomic_reply(Request& r) {
  const auto a = r.pkt.atomic_eth();
  // 8-byte aligned inside a registered region (check_atomic): atomic
  // against the local CPU too, not only against other remote atomics.
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(r.access.data));
  std::uint64_t orig;
  if (r.op->opcode == wire::Opcode::kRcCompareSwap) {
    orig = a->compare();
    word.compare_exchange_strong(orig, a->swap_add());
  } else {
    orig = word.fetch_add(a->swap_add());
  }
  qp_.counters_.atomics_executed.inc();
  atomics_.put(r.psn, orig);
  epsn_ = wire::psn_add(r.psn, 1);
  ++msn_;
  send_atomic_ack(r.psn, orig);
  return RespState::CLEANUP;
}

RespState Responder::complete(Request& r) {
  if (r.rc) ++msn_;
  if (is_send(r.op)) {
    complete_recv(WcStatus::IBV_WC_SUCCESS, static_cast<std::uint32_t>(recv_offset_), &r.pkt, false);
  } else if (r.op->is(wire::kOpImm)) {
    complete_recv(WcStatus::IBV_WC_SUCCESS, write_len_, &r.pkt, true);
  }
  return RespState::ACKNOWLEDGE;
}

RespState Responder::acknowledge(Request& r) {
  epsn_ = wire::psn_add(r.psn, 1);
  if (!r.rc || qp_.attr_.qp_state == QpState::ERR) return RespState::CLEANUP;
  if (r.pkt.bth().ack_req()) {
    owe_ack(r.psn);
  } else {
    hold_ack(r.psn);
  }
  return RespState::CLEANUP;
}

RespState Responder::duplicate_request(Request& r) {
  if (is_send(r.op) || is_write(r.op)) {
    // Already delivered: acknowledge everything received so far, deliver
    // nothing; a go-back-N resends a batch of them, answered by one ACK.
    if (r.pkt.bth().ack_req()) owe_ack(wire::psn_sub(epsn_, 1));
  } else if (is_read(r.op)) {
    replay_read(r);
  } else if (is_atomic(r.op)) {
    replay_atomic(r);
  }
  return RespState::DONE;
}

// A duplicate READ is executed again from memory (its responses were lost).
void Responder::replay_read(const Request& r) {
  const auto reth = r.pkt.reth();
  const MrAccess a = qp_.mrs_.check_remote(qp_.pd_, reth->rkey(), reth->va(), reth->dma_len(), Access::REMOTE_READ);
  if (!a.ok()) {
    qp_.counters_.out_of_seq_dropped.inc();
    return;
  }
  qp_.counters_.reads_replayed.inc();
  pending_reads_.push_back(PendingRead{r.psn, reth->va(), reth->rkey(), reth->dma_len(), true});
  flush_pending();
}

// A duplicate atomic is answered from the cache, never executed twice.
void Responder::replay_atomic(const Request& r) {
  if (auto orig = atomics_.get(r.psn)) {
    qp_.counters_.atomics_replayed.inc();
    send_atomic_ack(r.psn, *orig);
  } else {
    qp_.counters_.atomic_replay_miss.inc();
  }
}

RespState Responder::err_psn_out_of_seq() {
  send_ack(wire::aeth::kNakPsnSeqError, epsn_);
  return RespState::DONE;
}

RespState Responder::err_rnr(Request& r) {
  qp_.counters_.rnr_naks_sent.inc();
  // Latch: the packets already in flight behind this one are dropped
  // silently instead of drawing a sequence error NAK.
  sent_psn_nak_ = true;
  send_ack(static_cast<std::uint8_t>(wire::aeth::kRnrNak | (qp_.attr_.min_rnr_timer & wire::aeth::kValueMask)), r.psn);
  return RespState::DONE;
}

RespState Responder::err_invalid_request(Request& r) {
  qp_.counters_.naks_sent_inv_req.inc();
  class_c_error(wire::aeth::kNakInvalidRequest, r.psn);
  return RespState::DONE;
}

RespState Responder::err_remote_access(Request& r) {
  qp_.counters_.naks_sent_rem_access.inc();
  class_c_error(wire::aeth::kNakRemoteAccessError, r.psn);
  return RespState::DONE;
}

// A SEND longer than the receive: the receive completes in error.
RespState Responder::err_length(Request& r) { return fail_receive(r, WcStatus::IBV_WC_LOC_LEN_ERR); }

// The receive WQE's own SGEs failed their lkey check.
RespState Responder::err_local(Request& r) {
  qp_.counters_.local_prot_err.inc();
  return fail_receive(r, WcStatus::IBV_WC_LOC_PROT_ERR);
}

// The receive completes with `status`; RC answers NAK remote operational
// error (rxe 6.1, test/fixtures/captures/README.md), UC drops the rest of the message.
RespState Responder::fail_receive(Request& r, WcStatus status) {
  complete_recv(status, 0, &r.pkt, false);
  if (r.rc) {
    qp_.counters_.naks_sent_rem_op.inc();
    class_c_error(wire::aeth::kNakRemoteOperationalError, r.psn);
  } else {
    uc_skip(r.psn, true);
  }
  return RespState::DONE;
}

// UC only: drop the rest of this message.
RespState Responder::drop(Request& r) {
  qp_.counters_.uc_pkts_dropped.inc();
  uc_skip(r.psn, !r.op->is_last());
  return RespState::DONE;
}

}  // namespace qpgate::verbs::soft
