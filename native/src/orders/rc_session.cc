#include "orders/rc_session.h"

#include <algorithm>
#include <cstring>

namespace qpgate::orders {

namespace {

verbs::Error with_context(const verbs::Error& e, const char* what, std::uint32_t session) {
  return verbs::Error{e.code, "session " + std::to_string(session) + ": " + what + ": " + e.message};
}

// Responder resources for the client's READs / atomics on its grants.
constexpr std::uint8_t kMaxDestRdAtomic = 16;

}  // namespace

verbs::Result<std::unique_ptr<RcSession>> RcSession::open(verbs::Device& device, RiskRegistry& risk,
                                                          const RcSessionConfig& config) {
  std::unique_ptr<RcSession> s{new RcSession(config)};
  const std::uint32_t id = config.session;
  auto pd = device.alloc_pd();
  if (!pd.ok()) return with_context(pd.error(), "alloc_pd", id);
  s->pd_ = std::move(*pd);
  auto cq = device.create_cq(config.recv_depth + config.send_depth, id);
  if (!cq.ok()) return with_context(cq.error(), "create_cq", id);
  s->cq_ = std::move(*cq);

  auto grants = RiskGrants::grant(*s->pd_, risk, config.role, config.accounts);
  if (!grants.ok()) return with_context(grants.error(), "risk region", id);
  s->grants_ = std::move(*grants);

  const std::size_t msg = config.max_message_bytes;
  s->recv_buffer_.assign(msg * config.recv_depth, 0);
  s->send_buffer_.assign(kMaxEncodedBytes * config.send_depth, 0);
  auto rmr = s->pd_->reg_mr(s->recv_buffer_.data(), s->recv_buffer_.size(), verbs::Access::LOCAL_WRITE);
  if (!rmr.ok()) return with_context(rmr.error(), "receive buffers", id);
  s->recv_mr_ = std::move(*rmr);
  auto smr = s->pd_->reg_mr(s->send_buffer_.data(), s->send_buffer_.size(), verbs::AccessFlags{});
  if (!smr.ok()) return with_context(smr.error(), "send buffers", id);
  s->send_mr_ = std::move(*smr);

  verbs::QpInitAttr init;
  init.qp_type = verbs::QpType::RC;
  init.send_cq = s->cq_.get();
  init.recv_cq = s->cq_.get();
  init.cap.max_send_wr = config.send_depth;
  init.cap.max_recv_wr = config.recv_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_context = id;
  auto qp = s->pd_->create_qp(init);
  if (!qp.ok()) return with_context(qp.error(), "create_qp", id);
  s->qp_ = std::move(*qp);

  verbs::RcParams p = config.params;
  p.access = qp_access_for(config.role);
  std::uint8_t rd = kMaxDestRdAtomic;
  if (auto attr = device.query_device(); attr.ok() && attr->max_qp_rd_atom != 0) {
    rd = static_cast<std::uint8_t>(std::min<std::uint32_t>(rd, attr->max_qp_rd_atom));
  }
  p.max_dest_rd_atomic = rd;
  p.max_rd_atomic = 0;  // the gateway initiates no READ or atomic
  s->config_.params = p;

  // Receives first: the client may SEND as soon as it is in RTS.
  s->recv_sges_.resize(config.recv_depth);
  s->recv_wrs_.resize(config.recv_depth);
  s->released_.reserve(config.recv_depth);
  for (std::uint32_t i = 0; i < config.recv_depth; ++i) {
    s->recv_sges_[i] = verbs::Sge{reinterpret_cast<std::uint64_t>(s->recv_buffer_.data() + i * msg),
                                  static_cast<std::uint32_t>(msg), s->recv_mr_->lkey()};
    s->released_.push_back(i);
  }
  s->send_sges_.resize(config.send_depth);
  s->staged_.reserve(config.send_depth);

  if (verbs::Status st = verbs::connect_rc(*s->qp_, p, config.remote); !st.ok()) {
    return with_context(st.error(), "connect", id);
  }
  s->repost_receives();
  if (s->held_receives() != 0) {
    return verbs::Error{ENOMEM, "session " + std::to_string(id) + ": could not post " +
                                    std::to_string(config.recv_depth) + " receives"};
  }
  return s;
}

RcSession::~RcSession() = default;

std::span<const std::uint8_t> RcSession::received(const verbs::Wc& wc) const noexcept {
  const std::uint64_t slot = wc.wr_id;
  if (slot >= config_.recv_depth || wc.byte_len > config_.max_message_bytes) return {};
  return {recv_buffer_.data() + slot * config_.max_message_bytes, wc.byte_len};
}

void RcSession::release_receive(const verbs::Wc& wc) noexcept {
  if (wc.wr_id < config_.recv_depth && released_.size() < config_.recv_depth) {
    released_.push_back(static_cast<std::uint32_t>(wc.wr_id));
  }
}

std::size_t RcSession::repost_receives() {
  const std::size_t n = released_.size();
  if (n == 0) return 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t slot = released_[i];
    recv_wrs_[i] = verbs::RecvWr{slot, nullptr, std::span<const verbs::Sge>(&recv_sges_[slot], 1)};
  }
  const verbs::PostRecvResult r = qp_->post_recv(std::span<const verbs::RecvWr>(recv_wrs_.data(), n));
  // What was not posted stays released (a QP in ERR refuses: it is going away).
  released_.erase(released_.begin(), released_.begin() + static_cast<std::ptrdiff_t>(r.posted()));
  return r.posted();
}

void RcSession::stage_send(std::span<const std::uint8_t> bytes) noexcept {
  const std::size_t msg = kMaxEncodedBytes;
  const std::uint32_t slot = next_send_slot_;
  next_send_slot_ = (next_send_slot_ + 1) % config_.send_depth;
  std::uint8_t* at = send_buffer_.data() + slot * msg;
  const std::size_t n = std::min(bytes.size(), msg);
  std::memcpy(at, bytes.data(), n);
  send_sges_[slot] = verbs::Sge{reinterpret_cast<std::uint64_t>(at), static_cast<std::uint32_t>(n), send_mr_->lkey()};
  verbs::SendWr wr;
  wr.wr_id = kSendTag | slot;
  wr.sg_list = std::span<const verbs::Sge>(&send_sges_[slot], 1);
  wr.opcode = verbs::WrOpcode::SEND;
  wr.send_flags = verbs::SendFlag::SIGNALED;
  staged_.push_back(wr);
}

verbs::Status RcSession::flush_sends() {
  if (staged_.empty()) return {};
  const verbs::PostSendResult r = qp_->post_send(std::span<const verbs::SendWr>(staged_.data(), staged_.size()));
  sends_in_flight_ += static_cast<std::uint32_t>(r.posted());
  staged_.clear();
  if (!r.ok()) return r.status();
  return {};
}

void RcSession::to_error() {
  verbs::QpAttr a;
  a.qp_state = verbs::QpState::ERR;
  (void)qp_->modify(a, verbs::QpAttrMask::STATE);
}

}  // namespace qpgate::orders
