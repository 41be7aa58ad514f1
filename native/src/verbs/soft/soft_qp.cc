#include "verbs/soft/soft_qp.h"

#include <algorithm>
#include <string>

#include "verbs/soft/comp.h"
#include "verbs/soft/req.h"
#include "verbs/soft/resp.h"
#include "wire/opcode.h"

namespace qpgate::verbs::soft {

wire::IpAddress ip_from_gid(const Gid& gid) {
  if (gid.is_ipv4_mapped()) return wire::IpAddress::v4(gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
  return wire::IpAddress::v6(gid.raw);
}

ModifyLimits SoftQpContext::default_limits() {
  ModifyLimits l;
  l.unsupported = SoftQp::kUnsupportedAttrs;
  l.backend_name = "soft";
  return l;
}

namespace {

SendQueueConfig sq_config(const SoftQpContext& ctx) {
  SendQueueConfig c;
  c.qp_type = ctx.init.qp_type;
  c.cap = ctx.init.cap;
  c.sq_sig_all = ctx.init.sq_sig_all;
  c.ud_max_payload = mtu_to_bytes(ctx.active_mtu);
  c.qp_num = ctx.qpn;
  return c;
}

// The largest packet: BTH + extension headers + one MTU + pad + ICRC.
constexpr std::size_t kTxBufBytes = wire::kMaxTransportHeaderBytes + 4096 + 4 + wire::kIcrcBytes;

}  // namespace

Status SoftQp::check_init(const SoftQpContext& ctx) {
  const QpType t = ctx.init.qp_type;
  if (t != QpType::RC && t != QpType::UC && t != QpType::UD) {
    return Error{EINVAL, "create_qp: qp_type " + std::to_string(static_cast<unsigned>(t)) +
                             " is not RC (2), UC (3) or UD (4)"};
  }
  if (ctx.send_cq == nullptr || ctx.recv_cq == nullptr) {
    return Error{EINVAL, "create_qp: send_cq and recv_cq are required"};
  }
  if (ctx.qpn == 0 || ctx.qpn > kQpnMask) {
    return Error{EINVAL, "create_qp: QPN " + std::to_string(ctx.qpn) + " is not in 1..0xffffff"};
  }
  return check_qp_cap(ctx.init.cap, ctx.srq != nullptr);
}

SoftQp::SoftQp(const SoftQpContext& ctx)
    : type_(ctx.init.qp_type),
      qpn_(ctx.qpn),
      pd_(ctx.pd),
      pkey_(ctx.pkey),
      init_(ctx.init),
      tx_(ctx.tx),
      mrs_(ctx.mrs),
      events_(ctx.events),
      mcast_(ctx.mcast),
      membership_(ctx.membership),
      local_ip_(ctx.local_ip),
      send_cq_(ctx.send_cq),
      recv_cq_(ctx.recv_cq),
      srq_(ctx.srq),
      limits_(ctx.limits),
      active_mtu_(ctx.active_mtu),
      sq_(sq_config(ctx)),
      rq_(ctx.srq != nullptr ? 0 : ctx.init.cap.max_recv_wr, ctx.init.cap.max_recv_sge,
          "RQ of QP " + std::to_string(ctx.qpn)),
      tx_buf_(kTxBufBytes),
      gid_addresses_(ctx.gid_addresses.empty() ? std::vector<wire::IpAddress>{ctx.local_ip} : ctx.gid_addresses),
      req_(std::make_unique<Requester>(*this)),
      resp_(std::make_unique<Responder>(*this)),
      comp_(std::make_unique<Completer>(*this)) {
  limits_.unsupported = kUnsupportedAttrs;
  attr_.qp_state = QpState::RESET;
  attr_.cap = init_.cap;
}

SoftQp::~SoftQp() {
  for (const Gid& g : attached_) {
    auto r = mcast_.detach(g, qpn_);
    if (r.ok() && *r == DetachOutcome::GROUP_EMPTY) (void)membership_.leave(ip_from_gid(g));
  }
}

// ---------------------------------------------------------------- modify / query

Status SoftQp::modify(const QpAttr& attr, QpAttrMaskFlags mask) {
  const QpState from = attr_.qp_state;
  if (Status s = check_modify_qp(type_, from, attr, mask, limits_); !s.ok()) return s;
  if (Status s = check_mig_request(attr, mask); !s.ok()) return s;
  const QpState to = target_state(from, attr, mask);
  const QpAttr before = attr_;
  apply_modify_qp(attr_, attr, mask);
  attr_.path_mig_state = before.path_mig_state;  // moved by apply_mig_request, not copied
  apply_mig_request(attr, mask);
  attr_.cap = init_.cap;
  if (mask.has(QpAttrMask::RETRY_CNT) || mask.has(QpAttrMask::RNR_RETRY)) comp_->reload_retry();

  if (to == QpState::RESET) {
    // Back to RESET: queues emptied without completions (ibv_modify_qp(3)).
    while (!sq_.empty()) sq_.pop();
    while (rq_.take()) {}
    (void)resp_->take_held_wqe();
    req_->reset();
    resp_->reset();
    comp_->reset();
    sq_drained_pending_ = false;
    attr_.path_mig_state = MigState::MIGRATED;
    alt_loaded_ = false;
    failed_over_ = false;
    mig_req_ = false;
    return {};
  }
  if (to == QpState::ERR) {
    if (from != QpState::ERR) enter_error();
    return {};
  }
  if (from == QpState::INIT && to == QpState::RTR) resp_->start(attr_.rq_psn);
  if (from == QpState::RTR && to == QpState::RTS) {
    req_->start(attr_.sq_psn);
    comp_->start(attr_.sq_psn);
  }
  if (from == QpState::RTS && to == QpState::SQD) {
    sq_drained_pending_ = mask.has(QpAttrMask::EN_SQD_ASYNC_NOTIFY) && attr.en_sqd_async_notify != 0;
    check_sq_drained();
  }
  if (to == QpState::RTS) sq_drained_pending_ = false;
  return {};
}

Result<QpAttr> SoftQp::query() const {
  QpAttr a = attr_;
  a.cur_qp_state = a.qp_state;
  a.cap = init_.cap;
  a.sq_draining = (attr_.qp_state == QpState::SQD && !req_->idle()) ? 1 : 0;
  return a;
}

// ---------------------------------------------------------------- posting

PostSendResult SoftQp::post_send(const SendWr& first) {
  if (Status s = check_post_send_state(attr_.qp_state); !s.ok()) return PostSendResult::failed(0, &first, s.error());
  PostSendResult r = sq_.post(first);
  req_->on_posted(r.posted());
  if (attr_.qp_state == QpState::ERR) flush_all();
  return r;
}

PostSendResult SoftQp::post_send(std::span<const SendWr> wrs) {
  if (wrs.empty()) return PostSendResult::all_posted(0);
  if (Status s = check_post_send_state(attr_.qp_state); !s.ok()) return PostSendResult::failed(0, &wrs[0], s.error());
  PostSendResult r = sq_.post(wrs);
  req_->on_posted(r.posted());
  if (attr_.qp_state == QpState::ERR) flush_all();
  return r;
}

PostRecvResult SoftQp::post_recv(const RecvWr& first) {
  if (srq_ != nullptr) {
    return PostRecvResult::failed(0, &first, Error{EINVAL, "post_recv: QP " + std::to_string(qpn_) +
                                                               " receives from an SRQ; post to the SRQ"});
  }
  if (Status s = check_post_recv_state(attr_.qp_state); !s.ok()) return PostRecvResult::failed(0, &first, s.error());
  PostRecvResult r = rq_.post(first);
  if (attr_.qp_state == QpState::ERR) flush_recv_queue();
  return r;
}

PostRecvResult SoftQp::post_recv(std::span<const RecvWr> wrs) {
  if (wrs.empty()) return PostRecvResult::all_posted(0);
  if (srq_ != nullptr) {
    return PostRecvResult::failed(0, &wrs[0], Error{EINVAL, "post_recv: QP " + std::to_string(qpn_) +
                                                                " receives from an SRQ; post to the SRQ"});
  }
  if (Status s = check_post_recv_state(attr_.qp_state); !s.ok()) return PostRecvResult::failed(0, &wrs[0], s.error());
  PostRecvResult r = rq_.post(wrs);
  if (attr_.qp_state == QpState::ERR) flush_recv_queue();
  return r;
}

// ---------------------------------------------------------------- multicast

Status SoftQp::attach_mcast(const Gid& mgid) {
  if (type_ != QpType::UD) {
    return Error{EINVAL, "attach_mcast: QP " + std::to_string(qpn_) + " is " + std::string(qp_type_name(type_)) +
                             "; only UD QPs join multicast groups"};
  }
  auto r = mcast_.attach(mgid, qpn_);
  if (!r.ok()) return r.error();
  if (*r == AttachOutcome::NEW_GROUP) {
    if (Status s = membership_.join(ip_from_gid(mgid)); !s.ok()) {
      (void)mcast_.detach(mgid, qpn_);
      return s;
    }
  }
  if (std::find(attached_.begin(), attached_.end(), mgid) == attached_.end()) attached_.push_back(mgid);
  return {};
}

Status SoftQp::detach_mcast(const Gid& mgid) {
  if (type_ != QpType::UD) {
    return Error{EINVAL, "detach_mcast: QP " + std::to_string(qpn_) + " is not UD"};
  }
  auto r = mcast_.detach(mgid, qpn_);
  if (!r.ok()) return r.error();
  attached_.erase(std::remove(attached_.begin(), attached_.end(), mgid), attached_.end());
  if (*r == DetachOutcome::GROUP_EMPTY) return membership_.leave(ip_from_gid(mgid));
  return {};
}

// ---------------------------------------------------------------- driving

std::optional<wire::IpAddress> SoftQp::peer_address() const {
  if (type_ == QpType::UD) return std::nullopt;
  const QpState s = attr_.qp_state;
  if (s == QpState::RESET || s == QpState::INIT) return std::nullopt;
  return ip_from_gid(attr_.ah_attr.dgid);
}

void SoftQp::on_packet(const wire::Packet& pkt, const RxMeta& meta) {
  now_ns_ = std::max(now_ns_, meta.rx_ns);
  counters_.rcvd_pkts.inc();
  if (!receives_allowed()) {
    counters_.drops_bad_state.inc();
    return;
  }
  if (pkt.op->is(wire::kOpResponse)) {
    if (!sends_allowed() && attr_.qp_state != QpState::SQE) {
      counters_.drops_bad_state.inc();
      return;
    }
    if (arrived_on_alternate(pkt, meta)) follow_migration();
    comp_->on_response(pkt, now_ns_);
  } else if (pkt.op->is(wire::kOpRequest)) {
    if (arrived_on_alternate(pkt, meta)) follow_migration();
    resp_->on_request(pkt, meta);
  } else {
    counters_.drops_bad_state.inc();  // a CNP: congestion control is not implemented
    return;
  }
  if (sends_allowed()) req_->run(now_ns_);
  check_sq_drained();
}

int SoftQp::do_work(std::int64_t now_ns) {
  const int work = send_work(now_ns);
  return work + on_timers(now_ns);
}

int SoftQp::send_work(std::int64_t now_ns) {
  now_ns_ = std::max(now_ns_, now_ns);
  int work = resp_->flush_pending();
  if (attr_.qp_state == QpState::ERR || attr_.qp_state == QpState::RESET) return work;
  if (sends_allowed()) work += req_->run(now_ns_);
  check_sq_drained();
  return work;
}

// A due timer may resend (go-back-N from the oldest unacknowledged PSN),
// so the requester runs after it, as do_work ran it before the split.
int SoftQp::on_timers(std::int64_t now_ns) {
  now_ns_ = std::max(now_ns_, now_ns);
  if (attr_.qp_state == QpState::ERR || attr_.qp_state == QpState::RESET) return 0;
  // The responder's held ACK first: it leaves before any resend of ours.
  int work = type_ == QpType::RC && receives_allowed() ? resp_->on_timers(now_ns_) : 0;
  const int fired = comp_->on_timers(now_ns_);
  if (fired > 0 && sends_allowed()) work += fired + req_->run(now_ns_);
  check_sq_drained();
  return work;
}

std::int64_t SoftQp::next_deadline_ns() const {
  if (type_ != QpType::RC) return kNoDeadline;
  const std::int64_t held_ack = receives_allowed() ? resp_->next_deadline_ns() : kNoDeadline;
  if (!sends_allowed()) return held_ack;
  return std::min(held_ack, comp_->next_deadline_ns());
}

int SoftQp::end_receive_batch() { return resp_->send_owed_ack(); }

Status SoftQp::set_ack_requests(AckRequests mode) {
  if (type_ != QpType::RC) return Error{EINVAL, "ack requests: only an RC queue pair asks for ACKs"};
  ack_requests_ = mode;
  return Status{};
}

bool SoftQp::has_work() const { return req_->has_work() || resp_->has_pending(); }

// ---------------------------------------------------------------- shared helpers

wire::UdpFlow SoftQp::connected_flow() const {
  const AhAttr& ah = attr_.ah_attr;
  wire::UdpFlow f;
  f.src = source_ip(ah.sgid_index);
  f.dst = ip_from_gid(ah.dgid);
  f.src_port = ah.udp_sport != 0 ? ah.udp_sport : wire::roce_src_port_connected(ah.flow_label, qpn_, attr_.dest_qp_num);
  return f;
}

const wire::IpAddress& SoftQp::source_ip(std::uint8_t sgid_index) const {
  return sgid_index < gid_addresses_.size() ? gid_addresses_[sgid_index] : local_ip_;
}

bool SoftQp::transmit(const wire::PacketFields& f, std::span<const std::uint8_t> payload) {
  if (mig_req_ != f.bth.mig_req) {
    wire::PacketFields g = f;
    g.bth.mig_req = mig_req_;
    return transmit_to(g, payload, connected_flow(), attr_.ah_attr.traffic_class, attr_.ah_attr.hop_limit);
  }
  return transmit_to(f, payload, connected_flow(), attr_.ah_attr.traffic_class, attr_.ah_attr.hop_limit);
}

bool SoftQp::transmit_to(const wire::PacketFields& f, std::span<const std::uint8_t> payload, const wire::UdpFlow& flow,
                         std::uint8_t traffic_class, std::uint8_t hop_limit) {
  auto n = wire::encode(f, payload, flow, tx_buf_);
  if (!n.ok()) return true;  // cannot happen for the opcodes and sizes we build; never retried
  TxPacket p;
  p.flow = flow;
  p.traffic_class = traffic_class;
  p.hop_limit = hop_limit;
  p.roce = std::span<const std::uint8_t>(tx_buf_.data(), *n);
  if (!tx_.transmit(p)) {
    counters_.tx_back_pressure.inc();
    return false;
  }
  counters_.sent_pkts.inc();
  return true;
}

void SoftQp::raise(EventType e) { events_.push(e, qpn_, init_.qp_context); }

bool SoftQp::complete_send(const Wc& wc) {
  if (wc.status == WcStatus::IBV_WC_WR_FLUSH_ERR) {
    counters_.flushed_wqes.inc();
  } else {
    counters_.send_wc.inc();
  }
  if (send_cq_ == nullptr || send_cq_->ring().push(wc)) return true;
  counters_.cq_overflow.inc();
  if (attr_.qp_state != QpState::ERR) {
    raise(EventType::QP_FATAL);
    enter_error();
  }
  return false;
}

bool SoftQp::complete_recv(const Wc& wc) {
  if (wc.status == WcStatus::IBV_WC_WR_FLUSH_ERR) {
    counters_.flushed_wqes.inc();
  } else {
    counters_.recv_wc.inc();
  }
  if (recv_cq_ == nullptr || recv_cq_->ring().push(wc)) return true;
  counters_.cq_overflow.inc();
  if (attr_.qp_state != QpState::ERR) {
    raise(EventType::QP_FATAL);
    enter_error();
  }
  return false;
}

void SoftQp::enter_error() {
  if (in_error_flush_) return;
  in_error_flush_ = true;
  attr_.qp_state = QpState::ERR;
  comp_->disarm();
  flush_all();
  // IBA 11.6.3: a QP on an SRQ tells its owner when no WQE of the SRQ will
  // reach it any more (here at once: nothing is in flight inside the QP).
  if (srq_ != nullptr) raise(EventType::QP_LAST_WQE_REACHED);
  sq_drained_pending_ = false;
  in_error_flush_ = false;
}

void SoftQp::flush_all() {
  while (const SendWqe* w = sq_.front()) {
    Wc wc;
    wc.wr_id = w->wr_id;
    wc.status = WcStatus::IBV_WC_WR_FLUSH_ERR;
    wc.opcode = wc_opcode_for(w->opcode);
    wc.qp_num = qpn_;
    complete_send(wc);
    sq_.pop();
  }
  req_->clear();
  if (auto held = resp_->take_held_wqe()) {
    Wc wc;
    wc.wr_id = held->wr_id;
    wc.status = WcStatus::IBV_WC_WR_FLUSH_ERR;
    wc.opcode = WcOpcode::RECV;
    wc.qp_num = qpn_;
    complete_recv(wc);
  }
  flush_recv_queue();
}

void SoftQp::flush_recv_queue() {
  while (auto w = rq_.take()) {
    Wc wc;
    wc.wr_id = w->wr_id;
    wc.status = WcStatus::IBV_WC_WR_FLUSH_ERR;
    wc.opcode = WcOpcode::RECV;
    wc.qp_num = qpn_;
    complete_recv(wc);
  }
}

std::uint32_t SoftQp::mtu_bytes() const {
  return mtu_to_bytes(type_ == QpType::UD ? active_mtu_ : attr_.path_mtu);
}

bool SoftQp::sends_allowed() const {
  return attr_.qp_state == QpState::RTS || attr_.qp_state == QpState::SQD;
}

bool SoftQp::receives_allowed() const {
  const QpState s = attr_.qp_state;
  return s == QpState::RTR || s == QpState::RTS || s == QpState::SQD || s == QpState::SQE;
}

void SoftQp::check_sq_drained() {
  if (!sq_drained_pending_ || attr_.qp_state != QpState::SQD) return;
  if (!req_->idle()) return;
  sq_drained_pending_ = false;
  raise(EventType::SQ_DRAINED);
}

}  // namespace qpgate::verbs::soft
