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
constexpr std::uint8_t kAckUnlimited = wire::aeth::kAck | wire::aeth::kCreditsInvalid;  // 0x1f, as rxe
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

namespace {
// Copies `data` into the receive WQE's SGEs from byte `offset`; false when an SGE fails its lkey check.
bool scatter_into(const MrTable& mrs, std::uint32_t pd, const RecvWqe& w, std::uint64_t offset,
                  std::span<const std::uint8_t> data) {
  std::uint64_t pos = 0;
  std::size_t done = 0;
  for (const Sge& s : w.sg_list()) {
    if (done == data.size()) break;
    if (offset + done >= pos + s.length) {
      pos += s.length;
      continue;
    }
    const std::uint64_t in = offset + done - pos;
    const auto take = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.length - in, data.size() - done));
    const MrAccess a = mrs.check_local(pd, s.lkey, s.addr + in, take, true);
    if (!a.ok()) return false;
    std::memcpy(a.data, data.data() + done, take);
    done += take;
    pos += s.length;
  }
  return done == data.size();
}
}  // namespace

bool Responder::scatter(const wire::Packet& pkt, std::uint64_t offset) {
  return scatter_into(qp_.mrs_, qp_.pd_, *wqe_, offset, pkt.payload);
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

void Responder::send_ack(std::uint8_t syndrome, std::uint32_t psn) {
  // Responses leave in PSN order: an ACK never overtakes READ responses held by back-pressure.
  if (pending_reads_.empty()) {
    wire::PacketFields f;
    f.bth.opcode = static_cast<std::uint8_t>(wire::Opcode::kRcAcknowledge);
    f.bth.pkey = qp_.pkey_;
    f.bth.dest_qpn = qp_.attr_.dest_qp_num;
    f.bth.psn = psn;
    f.aeth = wire::AethFields{syndrome, msn_};
    if (qp_.transmit(f, {})) {
      if ((syndrome & wire::aeth::kTypeMask) == wire::aeth::kAck) qp_.counters_.acks_sent.inc();
      pending_ack_.reset();
      return;
    }
  }
  pending_ack_ = PendingAck{syndrome, psn};  // the newest answer supersedes an older one
}

bool Responder::send_atomic_ack(std::uint32_t psn, std::uint64_t orig) {
  wire::PacketFields f;
  f.bth.opcode = static_cast<std::uint8_t>(wire::Opcode::kRcAtomicAcknowledge);
  f.bth.pkey = qp_.pkey_;
  f.bth.dest_qpn = qp_.attr_.dest_qp_num;
  f.bth.psn = psn;
  f.aeth = wire::AethFields{kAckUnlimited, msn_};
  f.orig_remote_data = orig;
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
    wire::PacketFields f;
    f.bth.opcode = static_cast<std::uint8_t>(op);
    f.bth.pkey = qp_.pkey_;
    f.bth.dest_qpn = qp_.attr_.dest_qp_num;
    f.bth.psn = r.psn;
    f.aeth = wire::AethFields{kAckUnlimited, msn_};
    if (!qp_.transmit(f, std::span<const std::uint8_t>(a.data, n))) return false;
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
  return sent;
}

void Responder::class_c_error(std::uint8_t nak, std::uint32_t psn) {
  send_ack(nak, psn);
  if (nak == wire::aeth::kNakInvalidRequest) qp_.raise(EventType::QP_REQ_ERR);
  if (nak == wire::aeth::kNakRemoteAccessError) qp_.raise(EventType::QP_ACCESS_ERR);
  qp_.enter_error();
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
  if (!scatter_into(qp_.mrs_, qp_.pd_, *wqe_, 0, grh) || !scatter_into(qp_.mrs_, qp_.pd_, *wqe_, kGrhBytes, pkt.payload)) {
    qp_.counters_.local_prot_err.inc();
    complete_recv(WcStatus::IBV_WC_LOC_PROT_ERR, 0, &pkt, false);
    return;
  }
  complete_recv(WcStatus::IBV_WC_SUCCESS, static_cast<std::uint32_t>(total), &pkt, false);
}

void Responder::on_request(const wire::Packet& pkt, const RxMeta& meta) {
  if (qp_.type_ == QpType::UD) {
    receive_ud(pkt, meta);
    return;
  }
  const bool rc = qp_.type_ == QpType::RC;
  const wire::OpcodeInfo* op = pkt.op;
  if ((rc && op->transport != wire::Transport::kRc) || (!rc && op->transport != wire::Transport::kUc)) {
    qp_.counters_.drops_bad_state.inc();
    return;
  }
  const std::uint8_t opcode = pkt.bth().opcode();
  const std::uint32_t psn = pkt.bth().psn();
  const std::uint32_t mtu = qp_.mtu_bytes();
  const std::size_t len = pkt.payload.size();
  MrAccess access;
  RespState s = RespState::CHK_PSN;

  // UC: give up the message in progress; its receive WQE is kept for the next one.
  const auto uc_abandon = [&] {
    if (cur_opcode_ != kNoOpcode) qp_.counters_.uc_msgs_dropped.inc();
    cur_opcode_ = kNoOpcode;
    recv_offset_ = 0;
  };

  while (s != RespState::DONE) {
    last_state_ = s;
    switch (s) {
      case RespState::CHK_PSN: {
        if (rc) {
          const std::int32_t d = wire::psn_distance(psn, epsn_);
          if (d > 0) {
            if (sent_psn_nak_) {
              qp_.counters_.out_of_seq_dropped.inc();
              s = RespState::DONE;
            } else {
              sent_psn_nak_ = true;
              qp_.counters_.out_of_seq_request.inc();
              s = RespState::ERR_PSN_OUT_OF_SEQ;
            }
          } else if (d < 0) {
            qp_.counters_.duplicate_request.inc();
            s = RespState::DUPLICATE_REQUEST;
          } else {
            sent_psn_nak_ = false;
            s = RespState::CHK_OP_SEQ;
          }
          break;
        }
        // UC: a gap loses the message in progress; resume at a FIRST/ONLY.
        if (psn != epsn_) {
          uc_abandon();
          epsn_ = psn;
          uc_drop_ = !op->is_first();
        }
        if (uc_drop_ && !op->is_first()) {
          qp_.counters_.uc_pkts_dropped.inc();
          epsn_ = wire::psn_add(psn, 1);
          s = RespState::DONE;
          break;
        }
        uc_drop_ = false;
        s = RespState::CHK_OP_SEQ;
        break;
      }

      case RespState::CHK_OP_SEQ: {
        bool ok;
        if (opcode_in_send(cur_opcode_) && cur_opcode_ != kNoOpcode) {
          ok = is_send(op) && !op->is_first();
        } else if (opcode_in_write(cur_opcode_)) {
          ok = is_write(op) && !op->is_first();
        } else {
          ok = op->is_first();
        }
        if (ok) {
          s = RespState::CHK_OP_VALID;
        } else {
          qp_.counters_.opcode_seq_err.inc();
          if (rc) {
            s = RespState::ERR_INVALID_REQUEST;
          } else if (op->is_first()) {
            uc_abandon();  // the tail of the previous message was lost
            s = RespState::CHK_OP_VALID;
          } else {
            s = RespState::DROP;
          }
        }
        break;
      }

      case RespState::CHK_OP_VALID: {
        const AccessFlags qa = qp_.attr_.qp_access_flags;
        const bool ok = (!is_write(op) || qa.has(Access::REMOTE_WRITE)) && (!is_read(op) || qa.has(Access::REMOTE_READ)) &&
                        (!is_atomic(op) || qa.has(Access::REMOTE_ATOMIC));
        s = ok ? RespState::CHK_RESOURCE : (rc ? RespState::ERR_INVALID_REQUEST : RespState::DROP);
        break;
      }

      case RespState::CHK_RESOURCE: {
        const bool needs_wqe = (is_send(op) && op->is_first()) || (is_write(op) && op->is(wire::kOpImm));
        if (needs_wqe && !take_recv_wqe()) {
          s = rc ? RespState::ERR_RNR : RespState::DROP;
          break;
        }
        s = RespState::CHK_LENGTH;
        break;
      }

      case RespState::CHK_LENGTH: {
        if (op->carries_payload() && (len > mtu || (!op->is_last() && len != mtu))) {
          s = rc ? RespState::ERR_INVALID_REQUEST : RespState::DROP;
          break;
        }
        if (is_send(op) && recv_offset_ + len > wqe_->length) {
          s = RespState::ERR_LENGTH;
          break;
        }
        if (is_write(op)) {
          if (op->is_first()) {
            const auto reth = pkt.reth();
            write_va_ = reth->va();
            write_rkey_ = reth->rkey();
            write_len_ = reth->dma_len();
            write_resid_ = write_len_;
          }
          const bool bad = len > write_resid_ || (op->is_last() && len != write_resid_);
          if (bad) {
            s = rc ? RespState::ERR_INVALID_REQUEST : RespState::DROP;
            break;
          }
        }
        s = RespState::CHK_RKEY;
        break;
      }

      case RespState::CHK_RKEY: {
        if (is_write(op) && op->is_first()) {
          access = qp_.mrs_.check_remote(qp_.pd_, write_rkey_, write_va_, write_len_, Access::REMOTE_WRITE);
        } else if (is_read(op)) {
          const auto reth = pkt.reth();
          access = qp_.mrs_.check_remote(qp_.pd_, reth->rkey(), reth->va(), reth->dma_len(), Access::REMOTE_READ);
        } else if (is_atomic(op)) {
          const auto a = pkt.atomic_eth();
          access = qp_.mrs_.check_atomic(qp_.pd_, a->rkey(), a->va());
        } else {
          access = MrAccess{MrCheck::OK};
        }
        if (access.ok()) {
          s = RespState::EXECUTE;
        } else if (!rc) {
          s = RespState::DROP;
        } else if (remote_nak_is_invalid_request(access.check)) {
          s = RespState::ERR_INVALID_REQUEST;
        } else {
          s = RespState::ERR_REMOTE_ACCESS;
        }
        break;
      }

      case RespState::EXECUTE: {
        if (is_send(op)) {
          if (!scatter(pkt, recv_offset_)) {
            s = RespState::ERR_LOCAL;
            break;
          }
          recv_offset_ += len;
        } else if (is_write(op) && len > 0) {
          // Checked again per packet: the region may have gone since the FIRST.
          const MrAccess a = qp_.mrs_.check_remote(qp_.pd_, write_rkey_, write_va_, len, Access::REMOTE_WRITE);
          if (!a.ok()) {
            s = rc ? RespState::ERR_REMOTE_ACCESS : RespState::DROP;
            break;
          }
          std::memcpy(a.data, pkt.payload.data(), len);
          write_va_ += len;
          write_resid_ -= static_cast<std::uint32_t>(len);
        }
        if (is_read(op)) {
          s = RespState::READ_REPLY;
        } else if (is_atomic(op)) {
          s = RespState::ATOMIC_REPLY;
        } else {
          cur_opcode_ = op->is_last() ? kNoOpcode : opcode;
          s = op->is_last() ? RespState::COMPLETE : RespState::ACKNOWLEDGE;
        }
        break;
      }

      case RespState::READ_REPLY: {
        const auto reth = pkt.reth();
        const std::uint32_t n = reth->dma_len() == 0 ? 1 : (reth->dma_len() + mtu - 1) / mtu;
        epsn_ = wire::psn_add(psn, n);
        ++msn_;
        qp_.counters_.reads_executed.inc();
        pending_reads_.push_back(PendingRead{psn, reth->va(), reth->rkey(), reth->dma_len(), true});
        flush_pending();
        s = RespState::CLEANUP;
        break;
      }

      case RespState::ATOMIC_REPLY: {
        const auto a = pkt.atomic_eth();
        // 8-byte aligned inside a registered region (check_atomic): atomic
        // against the local CPU too, not only against other remote atomics.
        std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(access.data));
        std::uint64_t orig;
        if (op->opcode == wire::Opcode::kRcCompareSwap) {
          orig = a->compare();
          word.compare_exchange_strong(orig, a->swap_add());
        } else {
          orig = word.fetch_add(a->swap_add());
        }
        qp_.counters_.atomics_executed.inc();
        atomics_.put(psn, orig);
        epsn_ = wire::psn_add(psn, 1);
        ++msn_;
        send_atomic_ack(psn, orig);
        s = RespState::CLEANUP;
        break;
      }

      case RespState::COMPLETE:
        if (rc) ++msn_;
        if (is_send(op)) {
          complete_recv(WcStatus::IBV_WC_SUCCESS, static_cast<std::uint32_t>(recv_offset_), &pkt, false);
        } else if (op->is(wire::kOpImm)) {
          complete_recv(WcStatus::IBV_WC_SUCCESS, write_len_, &pkt, true);
        }
        s = RespState::ACKNOWLEDGE;
        break;

      case RespState::ACKNOWLEDGE:
        epsn_ = wire::psn_add(psn, 1);
        if (rc && pkt.bth().ack_req() && qp_.attr_.qp_state != QpState::ERR) send_ack(kAckUnlimited, psn);
        s = RespState::CLEANUP;
        break;

      case RespState::CLEANUP:
        s = RespState::DONE;
        break;

      case RespState::DUPLICATE_REQUEST: {
        if (is_send(op) || is_write(op)) {
          // Already delivered: acknowledge everything received so far, deliver nothing.
          if (pkt.bth().ack_req()) send_ack(kAckUnlimited, wire::psn_sub(epsn_, 1));
        } else if (is_read(op)) {
          const auto reth = pkt.reth();
          const MrAccess a =
              qp_.mrs_.check_remote(qp_.pd_, reth->rkey(), reth->va(), reth->dma_len(), Access::REMOTE_READ);
          if (a.ok()) {
            qp_.counters_.reads_replayed.inc();
            pending_reads_.push_back(PendingRead{psn, reth->va(), reth->rkey(), reth->dma_len(), true});
            flush_pending();
          } else {
            qp_.counters_.out_of_seq_dropped.inc();
          }
        } else if (is_atomic(op)) {
          if (auto orig = atomics_.get(psn)) {
            qp_.counters_.atomics_replayed.inc();
            send_atomic_ack(psn, *orig);
          } else {
            qp_.counters_.atomic_replay_miss.inc();
          }
        }
        s = RespState::DONE;
        break;
      }

      case RespState::ERR_PSN_OUT_OF_SEQ:
        send_ack(wire::aeth::kNakPsnSeqError, epsn_);
        s = RespState::DONE;
        break;

      case RespState::ERR_RNR:
        qp_.counters_.rnr_naks_sent.inc();
        // Latch: the packets already in flight behind this one are dropped
        // silently instead of drawing a sequence error NAK.
        sent_psn_nak_ = true;
        send_ack(static_cast<std::uint8_t>(wire::aeth::kRnrNak | (qp_.attr_.min_rnr_timer & wire::aeth::kValueMask)), psn);
        s = RespState::DONE;
        break;

      case RespState::ERR_INVALID_REQUEST:
        qp_.counters_.naks_sent_inv_req.inc();
        class_c_error(wire::aeth::kNakInvalidRequest, psn);
        s = RespState::DONE;
        break;

      case RespState::ERR_REMOTE_ACCESS:
        qp_.counters_.naks_sent_rem_access.inc();
        class_c_error(wire::aeth::kNakRemoteAccessError, psn);
        s = RespState::DONE;
        break;

      case RespState::ERR_LENGTH:
        // A SEND longer than the receive: the receive completes in error.
        if (rc) {
          qp_.counters_.naks_sent_rem_op.inc();
          complete_recv(WcStatus::IBV_WC_LOC_LEN_ERR, 0, &pkt, false);
          class_c_error(wire::aeth::kNakRemoteOperationalError, psn);
        } else {
          complete_recv(WcStatus::IBV_WC_LOC_LEN_ERR, 0, &pkt, false);
          uc_abandon();
          uc_drop_ = true;
          epsn_ = wire::psn_add(psn, 1);
        }
        s = RespState::DONE;
        break;

      case RespState::ERR_LOCAL:
        qp_.counters_.local_prot_err.inc();
        complete_recv(WcStatus::IBV_WC_LOC_PROT_ERR, 0, &pkt, false);
        if (rc) {
          qp_.counters_.naks_sent_rem_op.inc();
          class_c_error(wire::aeth::kNakRemoteOperationalError, psn);
        } else {
          uc_abandon();
          uc_drop_ = true;
          epsn_ = wire::psn_add(psn, 1);
        }
        s = RespState::DONE;
        break;

      case RespState::DROP:  // UC only: drop the rest of this message
        qp_.counters_.uc_pkts_dropped.inc();
        uc_abandon();
        uc_drop_ = !op->is_last();
        epsn_ = wire::psn_add(psn, 1);
        s = RespState::DONE;
        break;

      case RespState::DONE:
        break;
    }
  }
}

}  // namespace qpgate::verbs::soft
