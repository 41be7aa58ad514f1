#include "feed/rc_endpoint.h"

#include <algorithm>
#include <array>

#include "verbs/source_gid.h"

namespace qpgate::feed {

verbs::Result<std::unique_ptr<RcEndpoint>> RcEndpoint::create(verbs::Device& device, const RcEndpointConfig& c) {
  if (c.recv_slots == 0 || c.send_slots == 0 || c.recv_bytes < 64 || c.send_bytes < 256) {
    return verbs::Error{EINVAL, "recovery endpoint: slots and sizes must be positive"};
  }
  auto channel = verbs::RcChannel::create(device, c);
  if (!channel.ok()) return channel.error();
  std::unique_ptr<RcEndpoint> e(new RcEndpoint(std::move(*channel)));
  auto gid = verbs::choose_source_gid(device);
  if (!gid.ok()) return verbs::Error{gid.error().code, "recovery endpoint: " + gid.error().message};
  e->local_.gid = gid->gid;
  e->sgid_index_ = gid->index;
  if (auto alt = verbs::choose_alternate_gid(device, *gid)) {
    e->local_.alt_gid = alt->gid;
    e->alt_sgid_index_ = alt->index;
  }
  e->local_.qpn = e->channel_->qpn();
  e->local_.psn = verbs::random_psn();
  e->local_.mtu = verbs::Mtu::MTU_1024;
  return e;
}

verbs::Status RcEndpoint::connect(const verbs::RcPeer& peer, const verbs::RcParams& params) {
  verbs::RcParams p = params;
  p.psn = local_.psn;
  p.sgid_index = sgid_index_;
  p.alt_sgid_index = alt_sgid_index_;
  p.access = verbs::Access::LOCAL_WRITE;
  if (verbs::Status s = channel_->connect(p, peer); !s.ok()) return s;
  if (!verbs::arms_alternate(p, peer)) local_.alt_gid.reset();
  if (channel_->held_receives() != 0) failed_ = true;
  connected_ = !failed_;
  return {};
}

void RcEndpoint::fail() {
  failed_ = true;
  connected_ = false;
  channel_->to_error();
}

void RcEndpoint::repost(std::uint32_t slot) {
  if (failed_) return;
  channel_->release_receive(slot);
  channel_->repost_receives();
  if (channel_->held_receives() != 0) failed_ = true;
}

std::size_t RcEndpoint::poll(std::span<Completion> out) {
  std::array<verbs::Wc, 32> wcs;
  const std::size_t want = std::min(out.size(), wcs.size());
  auto n = channel_->poll(std::span<verbs::Wc>(wcs.data(), want));
  if (!n.ok()) return 0;
  for (std::size_t i = 0; i < *n; ++i) {
    const verbs::Wc& wc = wcs[i];
    const std::uint32_t slot = verbs::RcChannel::slot_of(wc);
    if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) {
      failed_ = true;
      connected_ = false;
      out[i] = Completion{Completion::Kind::kError, slot, {}, wc.status};
    } else if (verbs::RcChannel::is_send(wc)) {
      out[i] = Completion{Completion::Kind::kSent, slot, {}};
    } else {
      out[i] = Completion{Completion::Kind::kReceived, slot, channel_->received(wc)};
    }
  }
  return *n;
}

bool RcEndpoint::post_send(std::size_t length) {
  if (!connected_ || channel_->free_send_slots() == 0 || length > channel_->shape().send_bytes) return false;
  channel_->stage_send(length);
  if (!channel_->flush_sends().ok()) {
    fail();
    return false;
  }
  return true;
}

}  // namespace qpgate::feed
