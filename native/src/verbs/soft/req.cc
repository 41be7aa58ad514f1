#include "verbs/soft/req.h"

#include <algorithm>
#include <cstring>

#include "verbs/soft/comp.h"
#include "verbs/soft/soft_qp.h"
#include "wire/opcode.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft {

namespace {

using wire::Opcode;

bool is_rd_atomic(WrOpcode op) { return wr_opcode_info(op).is_read_or_atomic(); }

std::uint32_t packets_for(std::uint64_t len, std::uint32_t mtu) {
  if (len == 0) return 1;
  return static_cast<std::uint32_t>((len + mtu - 1) / mtu);
}

}  // namespace

Requester::Requester(SoftQp& qp) : qp_(qp) {}

void Requester::reset() {
  wqes_.clear();
  cur_ = 0;
  cur_pkt_ = 0;
  noack_pkts_ = 0;
  rd_atomic_ = 0;
  error_stop_ = false;
}

void Requester::clear() {
  wqes_.clear();
  cur_ = 0;
  cur_pkt_ = 0;
  rd_atomic_ = 0;
}

void Requester::start(std::uint32_t sq_psn) {
  next_psn_ = sq_psn & wire::kPsnMask;
  sent_psn_ = next_psn_;
  noack_pkts_ = 0;
}

void Requester::on_posted(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) wqes_.emplace_back();
}

bool Requester::has_work() const {
  if (error_stop_ || !qp_.sends_allowed()) return false;
  if (cur_ >= qp_.sq_.size()) return false;
  if (qp_.attr_.qp_state == QpState::SQD && !wqes_[cur_].started) return false;
  return true;
}

bool Requester::idle() const {
  if (qp_.type_ != QpType::RC) return cur_ == 0 && cur_pkt_ == 0;
  // Nothing started and unacknowledged: every started WQE has completed.
  return wqes_.empty() || !wqes_.front().started;
}

int Requester::run(std::int64_t now_ns) {
  int sent = 0;
  // Bounded so one busy QP cannot starve the others on the engine thread.
  while (sent < 256) {
    const Step s = send_one(now_ns);
    if (s == Step::SENT) {
      ++sent;
      continue;
    }
    if (s == Step::ERROR) {
      error_stop_ = true;
      qp_.comp_->check_front_error();
    }
    break;
  }
  return sent;
}

void Requester::go_back(std::uint32_t psn) {
  noack_pkts_ = 0;
  resending_ = true;
  resend_until_ = sent_psn_;  // what went out before; packets never sent are not resends
  for (std::uint32_t i = 0; i < wqes_.size(); ++i) {
    const WqeTxState& st = wqes_[i];
    if (!st.started) {
      cur_ = i;
      cur_pkt_ = 0;
      return;
    }
    if (wire::psn_distance(psn, st.first_psn) >= 0 && wire::psn_distance(psn, st.last_psn) <= 0) {
      cur_ = i;
      cur_pkt_ = static_cast<std::uint32_t>(wire::psn_distance(psn, st.first_psn));
      return;
    }
    if (wire::psn_distance(psn, st.first_psn) < 0) {  // before this WQE: it was acked; restart here
      cur_ = i;
      cur_pkt_ = 0;
      return;
    }
  }
  cur_ = static_cast<std::uint32_t>(wqes_.size());
  cur_pkt_ = 0;
}

void Requester::on_front_completed() {
  if (wqes_.empty()) return;
  if (wqes_.front().rd_atomic && rd_atomic_ > 0) --rd_atomic_;
  wqes_.pop_front();
  qp_.sq_.pop();
  if (cur_ > 0) {
    --cur_;
  } else {
    cur_pkt_ = 0;
  }
}

bool Requester::gather(const SendWqe& w, std::uint64_t offset, std::uint32_t len, std::uint8_t* out) {
  if (len == 0) return true;
  if (w.inline_data != nullptr) {
    std::memcpy(out, w.inline_data + offset, len);
    return true;
  }
  std::uint64_t pos = 0;
  std::uint32_t done = 0;
  for (const Sge& s : w.sg_list()) {
    if (offset + done >= pos + s.length) {
      pos += s.length;
      continue;
    }
    const std::uint64_t in = offset + done - pos;
    const auto take = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.length - in, len - done));
    const MrAccess a = qp_.mrs_.check_local(qp_.pd_, s.lkey, s.addr + in, take, false);
    if (!a.ok()) return false;
    std::memcpy(out + done, a.data, take);
    done += take;
    pos += s.length;
    if (done == len) return true;
  }
  return done == len;
}

void Requester::complete_unreliable_front(std::int64_t /*now_ns*/) {
  const SendWqe* w = qp_.sq_.front();
  if (w == nullptr) return;
  if (w->signaled()) {
    Wc wc;
    wc.wr_id = w->wr_id;
    wc.status = WcStatus::IBV_WC_SUCCESS;
    wc.opcode = wc_opcode_for(w->opcode);
    wc.byte_len = static_cast<std::uint32_t>(w->length);
    wc.qp_num = qp_.qpn_;
    qp_.complete_send(wc);
  }
  on_front_completed();
}

Requester::Step Requester::send_one(std::int64_t now_ns) {
  if (!qp_.sends_allowed() || error_stop_) return Step::DONE;
  const bool rc = qp_.type_ == QpType::RC;
  if (rc && qp_.comp_->rnr_waiting()) return Step::WAIT;
  const SendWqe* w = qp_.sq_.at(cur_);
  if (w == nullptr) return Step::DONE;
  WqeTxState& st = wqes_[cur_];
  if (st.local_error != WcStatus::IBV_WC_SUCCESS) return Step::ERROR;
  const bool fresh = !st.started;
  if (fresh && qp_.attr_.qp_state == QpState::SQD) return Step::DONE;  // draining: no new message

  const std::uint32_t mtu = qp_.mtu_bytes();
  const wire::WrOpcodeInfo& info = wr_opcode_info(w->opcode);
  const std::uint32_t npkts = fresh ? (info.is(wire::kWrAtomic) ? 1 : packets_for(w->length, mtu)) : st.npkts;
  if (fresh && rc && is_rd_atomic(w->opcode)) {
    const std::uint32_t depth = std::max<std::uint32_t>(1, qp_.attr_.max_rd_atomic);
    if (rd_atomic_ >= depth) {
      qp_.counters_.rd_atomic_waits.inc();
      return Step::WAIT;
    }
  }
  const std::uint32_t psn = fresh ? next_psn_ : wire::psn_add(st.first_psn, cur_pkt_);
  if (rc && wire::psn_distance(psn, qp_.comp_->comp_psn()) >= static_cast<std::int32_t>(kMaxUnackedPsns)) {
    qp_.counters_.window_waits.inc();
    return Step::WAIT;
  }

  wire::PacketFields f;
  f.bth.pkey = qp_.pkey_;
  f.bth.psn = psn;
  f.bth.dest_qpn = qp_.attr_.dest_qp_num;
  std::span<const std::uint8_t> payload;
  bool last_pkt = cur_pkt_ + 1 >= npkts;

  switch (w->opcode) {
    case WrOpcode::SEND:
    case WrOpcode::SEND_WITH_IMM:
    case WrOpcode::RDMA_WRITE:
    case WrOpcode::RDMA_WRITE_WITH_IMM: {
      const std::uint64_t off = std::uint64_t{cur_pkt_} * mtu;
      const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(mtu, w->length - std::min(off, w->length)));
      if (payload_.size() < mtu) payload_.resize(mtu);
      if (!gather(*w, off, len, payload_.data())) {
        qp_.counters_.local_prot_err.inc();
        st.local_error = WcStatus::IBV_WC_LOC_PROT_ERR;
        return Step::ERROR;
      }
      payload = std::span<const std::uint8_t>(payload_.data(), len);
      f.bth.opcode = info.packet_opcode(cur_pkt_, npkts, transport_of(qp_.type_));
      f.imm = info.is(wire::kWrImm) ? w->imm_data : 0;
      // Solicited event: on the last packet of a SEND or a WRITE with immediate (IBA 9.2.3).
      f.bth.solicited = last_pkt && w->send_flags.has(SendFlag::SOLICITED) && (info.is(wire::kWrSend) || info.is(wire::kWrImm));
      if (cur_pkt_ == 0) f.reth = wire::RethFields{w->rdma.remote_addr, w->rdma.rkey, static_cast<std::uint32_t>(w->length)};
      break;
    }
    case WrOpcode::RDMA_READ: {
      const std::uint64_t off = std::uint64_t{cur_pkt_} * mtu;
      f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcRdmaReadRequest);
      f.reth = wire::RethFields{w->rdma.remote_addr + off, w->rdma.rkey,
                                static_cast<std::uint32_t>(w->length - std::min(off, w->length))};
      last_pkt = true;
      break;
    }
    case WrOpcode::ATOMIC_CMP_AND_SWP:
      f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcCompareSwap);
      f.atomic_eth = wire::AtomicEthFields{w->atomic.remote_addr, w->atomic.rkey, w->atomic.swap, w->atomic.compare_add};
      last_pkt = true;
      break;
    case WrOpcode::ATOMIC_FETCH_AND_ADD:
      f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcFetchAdd);
      f.atomic_eth = wire::AtomicEthFields{w->atomic.remote_addr, w->atomic.rkey, w->atomic.compare_add, 0};
      last_pkt = true;
      break;
  }
  if (rc) {
    // Coalesced: the end of a message asks for an ACK when someone waits for
    // it (a signaled WQE, the last WQE posted so far); otherwise every
    // kMaxPktsPerAck packets do. READ/atomic responses are answers anyway.
    // After a go-back-N every resent packet asks, so one lost ACK cannot
    // stall recovery.
    const bool wanted = w->signaled() || cur_ + 1 >= qp_.sq_.size();
    f.bth.ack_req = (last_pkt && wanted) || is_rd_atomic(w->opcode) || noack_pkts_ + 1 >= kMaxPktsPerAck ||
                    (resending_ && wire::psn_before(psn, resend_until_));
    if (resending_ && !wire::psn_before(psn, resend_until_)) resending_ = false;
  }

  bool ok = false;
  if (qp_.type_ == QpType::UD) {
    const AhAttr& ah = w->ud.ah->attr();
    f.bth.dest_qpn = w->ud.remote_qpn;
    // A Q_Key with the high bit set in the WR means "use the QP's own" (IBA 10.2.5 controlled Q_Keys).
    f.deth.qkey = (w->ud.remote_qkey & kControlledQkeyBit) != 0 ? qp_.attr_.qkey : w->ud.remote_qkey;
    f.deth.src_qpn = qp_.qpn_;
    wire::UdpFlow flow;
    flow.src = qp_.local_ip_;
    flow.dst = ip_from_gid(ah.dgid);
    flow.src_port = ah.udp_sport != 0 ? ah.udp_sport : wire::roce_src_port(qp_.qpn_);
    ok = qp_.transmit_to(f, payload, flow, ah.traffic_class, ah.hop_limit);
  } else {
    ok = qp_.transmit(f, payload);
  }
  if (!ok) return Step::BACKPRESSURE;

  // Committed: the packet is on its way.
  qp_.counters_.sent_requests.inc();
  if (fresh) {
    st.started = true;
    st.first_psn = next_psn_;
    st.npkts = npkts;
    st.last_psn = wire::psn_add(st.first_psn, npkts - 1);
    next_psn_ = wire::psn_add(st.first_psn, npkts);
    if (rc && is_rd_atomic(w->opcode)) {
      st.rd_atomic = true;
      ++rd_atomic_;
    }
  }
  if (rc) {
    // A retransmission is a PSN sent before (the later packets of a
    // message are not: they go out for the first time).
    if (wire::psn_before(psn, sent_psn_)) qp_.counters_.retransmitted_pkts.inc();
    const std::uint32_t high = info.is(wire::kWrRead) ? wire::psn_add(st.last_psn, 1) : wire::psn_add(psn, 1);
    if (wire::psn_after(high, sent_psn_)) sent_psn_ = high;
  }
  if (qp_.type_ != QpType::RC) {
    // UC/UD: PSNs still advance per packet (the receiver of UC checks them).
    if (last_pkt) {
      cur_pkt_ = 0;
      complete_unreliable_front(now_ns);
    } else {
      ++cur_pkt_;
    }
    return Step::SENT;
  }
  noack_pkts_ = f.bth.ack_req ? 0 : noack_pkts_ + 1;
  qp_.comp_->on_request_sent(now_ns);
  if (last_pkt) {
    ++cur_;
    cur_pkt_ = 0;
  } else {
    ++cur_pkt_;
  }
  return Step::SENT;
}

}  // namespace qpgate::verbs::soft
