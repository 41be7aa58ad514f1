#include "verbs/rc_channel.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace qpgate::verbs {

namespace {

Error step_failed(const Error& e, const char* what) { return Error{e.code, std::string{what} + ": " + e.message}; }

}  // namespace

Result<std::unique_ptr<RcChannel>> RcChannel::create(Device& device, const RcChannelShape& shape) {
  if (shape.recv_slots == 0 || shape.send_slots == 0 || shape.recv_bytes == 0 || shape.send_bytes == 0) {
    return Error{EINVAL, "rc channel: slots and sizes must be positive"};
  }
  std::unique_ptr<RcChannel> c{new RcChannel(device, shape)};
  auto pd = device.alloc_pd();
  if (!pd.ok()) return step_failed(pd.error(), "alloc_pd");
  c->pd_ = std::move(*pd);
  auto cq = device.create_cq(shape.recv_slots + shape.send_slots, shape.context);
  if (!cq.ok()) return step_failed(cq.error(), "create_cq");
  c->cq_ = std::move(*cq);

  c->recv_buffer_.assign(std::size_t{shape.recv_slots} * shape.recv_bytes, 0);
  c->send_buffer_.assign(std::size_t{shape.send_slots} * shape.send_bytes, 0);
  auto rmr = c->pd_->reg_mr(c->recv_buffer_.data(), c->recv_buffer_.size(), Access::LOCAL_WRITE);
  if (!rmr.ok()) return step_failed(rmr.error(), "receive buffers");
  c->recv_mr_ = std::move(*rmr);
  auto smr = c->pd_->reg_mr(c->send_buffer_.data(), c->send_buffer_.size(), AccessFlags{});
  if (!smr.ok()) return step_failed(smr.error(), "send buffers");
  c->send_mr_ = std::move(*smr);

  QpInitAttr init;
  init.qp_type = QpType::RC;
  init.send_cq = c->cq_.get();
  init.recv_cq = c->cq_.get();
  init.cap.max_send_wr = shape.send_slots;
  init.cap.max_recv_wr = shape.recv_slots;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.sq_sig_all = true;  // a send slot is freed by its completion: every SEND must have one
  init.qp_context = shape.context;
  auto qp = c->pd_->create_qp(init);
  if (!qp.ok()) return step_failed(qp.error(), "create_qp");
  c->qp_ = std::move(*qp);

  c->recv_sges_.resize(shape.recv_slots);
  c->recv_wrs_.resize(shape.recv_slots);
  c->released_.reserve(shape.recv_slots);
  for (std::uint32_t i = 0; i < shape.recv_slots; ++i) {
    c->recv_sges_[i] = Sge{reinterpret_cast<std::uint64_t>(c->recv_buffer_.data() + std::size_t{i} * shape.recv_bytes),
                           shape.recv_bytes, c->recv_mr_->lkey()};
    c->released_.push_back(i);  // posted by connect(): a QP in RESET takes no receives
  }
  c->send_sges_.resize(shape.send_slots);
  c->staged_.reserve(shape.send_slots);
  return c;
}

RcChannel::~RcChannel() {
  qp_.reset();  // before the CQ and the memory its WQEs point at
}

Status RcChannel::connect(const RcParams& asked, const RcPeer& peer) {
  RcParams local = asked;
  // A retry count the device counts down: past its max_retry_cnt it would retry forever.
  local.retry_cnt = std::min(local.retry_cnt, device_->max_retry_cnt());
  if (Status s = connect_rc(*qp_, local, peer); !s.ok()) return s;
  local_ = local;
  peer_ = peer;
  armed_ = arms_alternate(local, peer);
  repost_receives();
  return {};
}

Result<bool> RcChannel::rearm() {
  if (!armed_ || sends_in_flight_ != 0) return false;
  return rearm_rc(*qp_, *device_, local_, peer_);
}

void RcChannel::to_error() {
  QpAttr a;
  a.qp_state = QpState::ERR;
  (void)qp_->modify(a, QpAttrMask::STATE);
}

Result<std::size_t> RcChannel::poll(std::span<Wc> out) {
  auto n = cq_->poll(out);
  if (!n.ok()) return n;
  for (std::size_t i = 0; i < *n; ++i) {
    if (is_send(out[i]) && sends_in_flight_ > 0) --sends_in_flight_;
  }
  return n;
}

std::span<const std::uint8_t> RcChannel::received(const Wc& wc) const noexcept {
  const std::uint64_t slot = wc.wr_id;
  if (slot >= shape_.recv_slots || wc.byte_len > shape_.recv_bytes) return {};
  return {recv_buffer_.data() + slot * shape_.recv_bytes, wc.byte_len};
}

void RcChannel::release_receive(std::uint32_t slot) noexcept {
  if (slot < shape_.recv_slots && released_.size() < shape_.recv_slots) released_.push_back(slot);
}

std::size_t RcChannel::repost_receives() {
  const std::size_t n = released_.size();
  if (n == 0) return 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t slot = released_[i];
    recv_wrs_[i] = RecvWr{slot, nullptr, std::span<const Sge>(&recv_sges_[slot], 1)};
  }
  const PostRecvResult r = qp_->post_recv(std::span<const RecvWr>(recv_wrs_.data(), n));
  // What was not posted stays released (a QP in ERR refuses: it is going away).
  released_.erase(released_.begin(), released_.begin() + static_cast<std::ptrdiff_t>(r.posted()));
  return r.posted();
}

std::span<std::uint8_t> RcChannel::send_slot() noexcept {
  if (free_send_slots() == 0) return {};
  return {send_buffer_.data() + std::size_t{next_send_slot_} * shape_.send_bytes, shape_.send_bytes};
}

void RcChannel::stage_send(std::size_t length) noexcept {
  const std::uint32_t slot = next_send_slot_;
  next_send_slot_ = (next_send_slot_ + 1) % shape_.send_slots;
  const std::size_t n = std::min<std::size_t>(length, shape_.send_bytes);
  send_sges_[slot] = Sge{reinterpret_cast<std::uint64_t>(send_buffer_.data() + std::size_t{slot} * shape_.send_bytes),
                         static_cast<std::uint32_t>(n), send_mr_->lkey()};
  SendWr wr;
  wr.wr_id = kSendTag | slot;
  wr.sg_list = std::span<const Sge>(&send_sges_[slot], 1);
  wr.opcode = WrOpcode::SEND;
  wr.send_flags = SendFlag::SIGNALED;
  staged_.push_back(wr);
}

Status RcChannel::flush_sends() {
  if (staged_.empty()) return {};
  const PostSendResult r = qp_->post_send(std::span<const SendWr>(staged_.data(), staged_.size()));
  const auto posted = static_cast<std::uint32_t>(r.posted());
  const auto refused = static_cast<std::uint32_t>(staged_.size()) - posted;
  sends_in_flight_ += posted;
  // The refused slots are free again: the ring resumes at the first of them.
  next_send_slot_ = (next_send_slot_ + shape_.send_slots - refused) % shape_.send_slots;
  staged_.clear();
  if (!r.ok()) return r.status();
  return {};
}

}  // namespace qpgate::verbs
