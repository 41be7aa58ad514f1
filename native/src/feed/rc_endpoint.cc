#include "feed/rc_endpoint.h"

#include <array>

namespace qpgate::feed {
namespace {
// Send work request ids are tagged so a completion names its slot kind.
constexpr std::uint64_t kSendTag = 1ull << 32;
}  // namespace

verbs::Result<std::unique_ptr<RcEndpoint>> RcEndpoint::create(verbs::Device& device, const RcEndpointConfig& c) {
  if (c.recv_slots == 0 || c.send_slots == 0 || c.recv_bytes < 64 || c.send_bytes < 256) {
    return verbs::Error{EINVAL, "recovery endpoint: slots and sizes must be positive"};
  }
  std::unique_ptr<RcEndpoint> e(new RcEndpoint(c));
  auto pd = device.alloc_pd();
  if (!pd.ok()) return pd.error();
  e->pd_ = std::move(pd).value();
  auto cq = device.create_cq(c.recv_slots + c.send_slots + 8, 0);
  if (!cq.ok()) return cq.error();
  e->cq_ = std::move(cq).value();
  e->buffer_.assign(std::size_t{c.recv_slots} * c.recv_bytes + std::size_t{c.send_slots} * c.send_bytes, 0);
  auto mr = e->pd_->reg_mr(e->buffer_.data(), e->buffer_.size(), verbs::Access::LOCAL_WRITE);
  if (!mr.ok()) return mr.error();
  e->mr_ = std::move(mr).value();
  verbs::QpInitAttr init;
  init.qp_type = verbs::QpType::RC;
  init.send_cq = e->cq_.get();
  init.recv_cq = e->cq_.get();
  init.cap.max_send_wr = c.send_slots;
  init.cap.max_recv_wr = c.recv_slots;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.sq_sig_all = true;
  auto qp = e->pd_->create_qp(init);
  if (!qp.ok()) return qp.error();
  e->qp_ = std::move(qp).value();
  auto gids = device.query_gid_table(1);
  if (!gids.ok() || gids->empty()) return verbs::Error{ENODEV, "recovery endpoint: the device has no GID"};
  e->local_.gid = (*gids)[0];
  e->local_.qpn = e->qp_->qp_num();
  e->local_.psn = verbs::random_psn();
  e->local_.mtu = verbs::Mtu::MTU_1024;
  e->send_busy_.assign(c.send_slots, false);
  e->free_send_ = c.send_slots;
  return e;
}

RcEndpoint::~RcEndpoint() {
  qp_.reset();  // before the CQ and the memory its WQEs point at
  mr_.reset();
}

verbs::Sge RcEndpoint::sge(std::size_t offset, std::uint32_t length) const {
  return verbs::Sge{reinterpret_cast<std::uint64_t>(buffer_.data() + offset), length, mr_->lkey()};
}

verbs::QpState RcEndpoint::state() const { return qp_->state(); }

verbs::Status RcEndpoint::connect(const verbs::RcPeer& peer, const verbs::RcParams& params) {
  verbs::RcParams p = params;
  p.psn = local_.psn;
  p.access = verbs::Access::LOCAL_WRITE;
  if (verbs::Status s = verbs::connect_rc(*qp_, p, peer); !s.ok()) return s;
  for (std::uint32_t i = 0; i < config_.recv_slots; ++i) repost(i);
  connected_ = !failed_;
  return {};
}

void RcEndpoint::fail() {
  failed_ = true;
  connected_ = false;
  verbs::QpAttr a;
  a.qp_state = verbs::QpState::ERR;
  (void)qp_->modify(a, verbs::QpAttrMask::STATE);
}

void RcEndpoint::repost(std::uint32_t slot) {
  if (failed_) return;
  const verbs::Sge s = sge(std::size_t{slot} * config_.recv_bytes, config_.recv_bytes);
  verbs::RecvWr wr;
  wr.wr_id = slot;
  wr.sg_list = std::span<const verbs::Sge>(&s, 1);
  if (!qp_->post_recv(wr).ok()) failed_ = true;
}

std::size_t RcEndpoint::poll(std::span<Completion> out) {
  std::array<verbs::Wc, 32> wcs;
  const std::size_t want = std::min(out.size(), wcs.size());
  auto n = cq_->poll(std::span<verbs::Wc>(wcs.data(), want));
  if (!n.ok()) return 0;
  for (std::size_t i = 0; i < *n; ++i) {
    const verbs::Wc& wc = wcs[i];
    const bool send = (wc.wr_id & kSendTag) != 0;
    const auto slot = static_cast<std::uint32_t>(wc.wr_id & 0xffffffffu);
    if (send && slot < send_busy_.size() && send_busy_[slot]) {
      send_busy_[slot] = false;
      ++free_send_;
    }
    if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) {
      failed_ = true;
      connected_ = false;
      out[i] = Completion{Completion::Kind::kError, slot, {}};
    } else if (send) {
      out[i] = Completion{Completion::Kind::kSent, slot, {}};
    } else {
      out[i] = Completion{Completion::Kind::kReceived, slot,
                          {buffer_.data() + std::size_t{slot} * config_.recv_bytes, wc.byte_len}};
    }
  }
  return *n;
}

std::span<std::uint8_t> RcEndpoint::send_buffer() {
  if (free_send_ == 0 || send_busy_[next_send_]) return {};
  return {buffer_.data() + send_offset(next_send_), config_.send_bytes};
}

bool RcEndpoint::post_send(std::size_t length) {
  if (!connected_ || free_send_ == 0 || send_busy_[next_send_] || length > config_.send_bytes) return false;
  const std::uint32_t slot = next_send_;
  const verbs::Sge s = sge(send_offset(slot), static_cast<std::uint32_t>(length));
  verbs::SendWr wr;
  wr.wr_id = kSendTag | slot;
  wr.sg_list = std::span<const verbs::Sge>(&s, 1);
  wr.opcode = verbs::WrOpcode::SEND;
  wr.send_flags = verbs::SendFlag::SIGNALED;
  if (!qp_->post_send(wr).ok()) {
    fail();
    return false;
  }
  send_busy_[slot] = true;
  --free_send_;
  next_send_ = (next_send_ + 1) % config_.send_slots;
  return true;
}

}  // namespace qpgate::feed
