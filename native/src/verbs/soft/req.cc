#include "verbs/soft/req.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "verbs/soft/comp.h"
#include "verbs/soft/soft_qp.h"
#include "wire/opcode.h"
#include "wire/psn.h"

namespace qpgate::verbs::soft {

namespace {

constexpr std::array<std::string_view, kReqStateCount> kReqStateNames = {
    "GET_WQE", "CHECK_RD_ATOMIC", "CHECK_WINDOW", "BUILD_PACKET", "SET_ACK_REQ", "TRANSMIT", "UPDATE",
    "SENT",    "WAIT",            "BACKPRESSURE", "ERROR",        "DONE",
};

std::uint32_t packets_for(std::uint64_t len, std::uint32_t mtu) {
  if (len == 0) return 1;
  return static_cast<std::uint32_t>((len + mtu - 1) / mtu);
}

}  // namespace

std::string_view req_state_name(ReqState s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kReqStateNames.size() ? kReqStateNames[i] : std::string_view("UNKNOWN");
}

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
  // Every duty-cycle pass comes here; an idle QP answers with this one test
  // rather than an Outgoing built and GET_WQE walked (the same DONE).
  if (!has_work()) return 0;
  int sent = 0;
  // Bounded so one busy QP cannot starve the others on the engine thread.
  while (sent < 256) {
    const ReqState s = send_one(now_ns);
    if (s == ReqState::SENT) {
      ++sent;
      continue;
    }
    if (s == ReqState::ERROR) {
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

void Requester::complete_unreliable_front() {
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

// ---------------------------------------------------------------- the state machine

// One packet: the states from GET_WQE to the first end state (SENT and after).
ReqState Requester::send_one(std::int64_t now_ns) {
  Outgoing p;
  p.now_ns = now_ns;
  ReqState s = ReqState::GET_WQE;
  while (!req_state_ends(s)) {
    last_state_ = s;
    s = step(s, p);
  }
  return s;
}

ReqState Requester::step(ReqState s, Outgoing& p) {
  switch (s) {
    case ReqState::GET_WQE: return get_wqe(p);
    case ReqState::CHECK_RD_ATOMIC: return check_rd_atomic(p);
    case ReqState::CHECK_WINDOW: return check_window(p);
    case ReqState::BUILD_PACKET: return build_packet(p);
    case ReqState::SET_ACK_REQ: return set_ack_req(p);
    case ReqState::TRANSMIT: return transmit(p);
    case ReqState::UPDATE: return update(p);
    default: return s;
  }
}

ReqState Requester::get_wqe(Outgoing& p) {
  if (!qp_.sends_allowed() || error_stop_) return ReqState::DONE;
  p.rc = qp_.type_ == QpType::RC;
  if (p.rc && qp_.comp_->rnr_waiting()) return ReqState::WAIT;
  p.w = qp_.sq_.at(cur_);
  if (p.w == nullptr) return ReqState::DONE;
  p.st = &wqes_[cur_];
  if (p.st->local_error != WcStatus::IBV_WC_SUCCESS) return ReqState::ERROR;
  p.fresh = !p.st->started;
  if (p.fresh && qp_.attr_.qp_state == QpState::SQD) return ReqState::DONE;  // draining: no new message
  p.info = &wr_opcode_info(p.w->opcode);
  const bool one_packet = p.info->is(wire::kWrAtomic);
  p.npkts = p.fresh ? (one_packet ? 1 : packets_for(p.w->length, qp_.mtu_bytes())) : p.st->npkts;
  return ReqState::CHECK_RD_ATOMIC;
}

// At most max_rd_atomic READs/atomics outstanding.
ReqState Requester::check_rd_atomic(Outgoing& p) {
  if (p.fresh && p.rc && p.info->is_read_or_atomic()) {
    const std::uint32_t depth = std::max<std::uint32_t>(1, qp_.attr_.max_rd_atomic);
    if (rd_atomic_ >= depth) {
      qp_.counters_.rd_atomic_waits.inc();
      return ReqState::WAIT;
    }
  }
  return ReqState::CHECK_WINDOW;
}

// At most kMaxUnackedPsns PSNs in flight.
ReqState Requester::check_window(Outgoing& p) {
  p.psn = p.fresh ? next_psn_ : wire::psn_add(p.st->first_psn, cur_pkt_);
  if (p.rc && wire::psn_distance(p.psn, qp_.comp_->comp_psn()) >= static_cast<std::int32_t>(kMaxUnackedPsns)) {
    qp_.counters_.window_waits.inc();
    return ReqState::WAIT;
  }
  return ReqState::BUILD_PACKET;
}

ReqState Requester::build_packet(Outgoing& p) {
  const SendWqe& w = *p.w;
  wire::PacketFields& f = p.f;
  f.bth.pkey = qp_.pkey_;
  f.bth.psn = p.psn;
  f.bth.dest_qpn = qp_.attr_.dest_qp_num;
  f.bth.opcode = p.info->packet_opcode(cur_pkt_, p.npkts, transport_of(qp_.type_));
  p.last_pkt = cur_pkt_ + 1 >= p.npkts;
  const std::uint64_t off = std::uint64_t{cur_pkt_} * qp_.mtu_bytes();
  if (p.info->is(wire::kWrRead)) {
    f.reth = wire::RethFields{w.rdma.remote_addr + off, w.rdma.rkey,
                              static_cast<std::uint32_t>(w.length - std::min(off, w.length))};
    p.last_pkt = true;  // one request packet, however many PSNs its responses take
  } else if (p.info->is(wire::kWrAtomic)) {
    const bool cas = w.opcode == WrOpcode::ATOMIC_CMP_AND_SWP;
    f.atomic_eth = wire::AtomicEthFields{w.atomic.remote_addr, w.atomic.rkey, cas ? w.atomic.swap : w.atomic.compare_add,
                                         cas ? w.atomic.compare_add : 0};
    p.last_pkt = true;
  } else if (!build_data_packet(p, off)) {
    qp_.counters_.local_prot_err.inc();
    p.st->local_error = WcStatus::IBV_WC_LOC_PROT_ERR;
    return ReqState::ERROR;
  }
  return p.rc ? ReqState::SET_ACK_REQ : ReqState::TRANSMIT;
}

// A SEND or WRITE packet: its slice of the message, immediate, RETH, solicited.
bool Requester::build_data_packet(Outgoing& p, std::uint64_t off) {
  const SendWqe& w = *p.w;
  const std::uint32_t mtu = qp_.mtu_bytes();
  const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(mtu, w.length - std::min(off, w.length)));
  if (payload_.size() < mtu) payload_.resize(mtu);
  if (!gather(w, off, len, payload_.data())) return false;
  p.payload = std::span<const std::uint8_t>(payload_.data(), len);
  p.f.imm = p.info->is(wire::kWrImm) ? w.imm_data : 0;
  // Solicited event: on the last packet of a SEND or a WRITE with immediate (IBA 9.2.3).
  p.f.bth.solicited = p.last_pkt && w.send_flags.has(SendFlag::SOLICITED) &&
                      (p.info->is(wire::kWrSend) || p.info->is(wire::kWrImm));
  if (cur_pkt_ == 0) p.f.reth = wire::RethFields{w.rdma.remote_addr, w.rdma.rkey, static_cast<std::uint32_t>(w.length)};
  return true;
}

// Coalesced: the end of a message asks for an ACK when someone waits for it
// (a signaled WQE, the last WQE posted so far) or, in AckRequests::WINDOW,
// when half the send queue waits for one (the peer's ACK hold covers the
// rest); otherwise every kMaxPktsPerAck packets do. READ/atomic responses
// are answers anyway. After a go-back-N every resent packet asks, so one
// lost ACK cannot stall recovery.
ReqState Requester::set_ack_req(Outgoing& p) {
  const bool wanted = qp_.ack_requests_ == AckRequests::WINDOW
                          ? 2u * qp_.sq_.size() >= qp_.init_.cap.max_send_wr
                          : p.w->signaled() || cur_ + 1 >= qp_.sq_.size();
  const bool resend = resending_ && wire::psn_before(p.psn, resend_until_);
  p.f.bth.ack_req = (p.last_pkt && wanted) || p.info->is_read_or_atomic() || noack_pkts_ + 1 >= kMaxPktsPerAck || resend;
  if (resending_ && !resend) resending_ = false;
  return ReqState::TRANSMIT;
}

ReqState Requester::transmit(Outgoing& p) {
  bool ok = false;
  if (qp_.type_ == QpType::UD) {
    const SendWqe& w = *p.w;
    const AhAttr& ah = w.ud.ah->attr();
    p.f.bth.dest_qpn = w.ud.remote_qpn;
    // A Q_Key with the high bit set in the WR means "use the QP's own" (IBA 10.2.5 controlled Q_Keys).
    p.f.deth.qkey = (w.ud.remote_qkey & kControlledQkeyBit) != 0 ? qp_.attr_.qkey : w.ud.remote_qkey;
    p.f.deth.src_qpn = qp_.qpn_;
    wire::UdpFlow flow;
    flow.src = qp_.source_ip(ah.sgid_index);
    flow.dst = ip_from_gid(ah.dgid);
    flow.src_port = ah.udp_sport != 0 ? ah.udp_sport : wire::roce_src_port(qp_.qpn_);
    ok = qp_.transmit_to(p.f, p.payload, flow, ah.traffic_class, ah.hop_limit);
  } else {
    ok = qp_.transmit(p.f, p.payload);
  }
  return ok ? ReqState::UPDATE : ReqState::BACKPRESSURE;
}

// Committed: the packet is on its way; the WQE's PSNs and the cursor move on.
ReqState Requester::update(Outgoing& p) {
  WqeTxState& st = *p.st;
  qp_.counters_.sent_requests.inc();
  if (p.fresh) {
    st.started = true;
    st.first_psn = next_psn_;
    st.npkts = p.npkts;
    st.last_psn = wire::psn_add(st.first_psn, p.npkts - 1);
    next_psn_ = wire::psn_add(st.first_psn, p.npkts);
    if (p.rc && p.info->is_read_or_atomic()) {
      st.rd_atomic = true;
      ++rd_atomic_;
    }
  }
  if (!p.rc) {
    // UC/UD: PSNs still advance per packet (the receiver of UC checks them).
    if (!p.last_pkt) {
      ++cur_pkt_;
      return ReqState::SENT;
    }
    cur_pkt_ = 0;
    complete_unreliable_front();
    return ReqState::SENT;
  }
  // A retransmission is a PSN sent before (the later packets of a message
  // are not: they go out for the first time).
  if (wire::psn_before(p.psn, sent_psn_)) qp_.counters_.retransmitted_pkts.inc();
  const std::uint32_t high = p.info->is(wire::kWrRead) ? wire::psn_add(st.last_psn, 1) : wire::psn_add(p.psn, 1);
  if (wire::psn_after(high, sent_psn_)) sent_psn_ = high;
  noack_pkts_ = p.f.bth.ack_req ? 0 : noack_pkts_ + 1;
  if (p.f.bth.ack_req) qp_.counters_.ack_requests.inc();
  qp_.comp_->on_request_sent(p.now_ns);
  if (p.last_pkt) {
    ++cur_;
    cur_pkt_ = 0;
  } else {
    ++cur_pkt_;
  }
  return ReqState::SENT;
}

}  // namespace qpgate::verbs::soft
