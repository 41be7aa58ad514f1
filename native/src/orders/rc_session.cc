#include "orders/rc_session.h"

#include <algorithm>
#include <cstring>

namespace qpgate::orders {

namespace {

verbs::Error with_context(const verbs::Error& e, const char* what, std::uint32_t session) {
  return verbs::Error{e.code, "session " + std::to_string(session) + ": " + what + e.message};
}

// Responder resources for the client's READs / atomics on its grants.
constexpr std::uint8_t kMaxDestRdAtomic = 16;

}  // namespace

verbs::Result<std::unique_ptr<RcSession>> RcSession::open(verbs::Device& device, RiskRegistry& risk,
                                                          const RcSessionConfig& config) {
  std::unique_ptr<RcSession> s{new RcSession(config)};
  const std::uint32_t id = config.session;
  auto channel = verbs::RcChannel::create(
      device, {config.recv_depth, config.max_message_bytes, config.send_depth, kMaxEncodedBytes, id});
  if (!channel.ok()) return with_context(channel.error(), "", id);
  s->channel_ = std::move(*channel);

  auto grants = RiskGrants::grant(s->channel_->pd(), risk, config.role, config.accounts);
  if (!grants.ok()) return with_context(grants.error(), "risk region: ", id);
  s->grants_ = std::move(*grants);

  verbs::RcParams p = config.params;
  p.access = qp_access_for(config.role);
  std::uint8_t rd = kMaxDestRdAtomic;
  if (auto attr = device.query_device(); attr.ok() && attr->max_qp_rd_atom != 0) {
    rd = static_cast<std::uint8_t>(std::min<std::uint32_t>(rd, attr->max_qp_rd_atom));
  }
  p.max_dest_rd_atomic = rd;
  p.max_rd_atomic = 0;  // the gateway initiates no READ or atomic
  s->config_.params = p;

  // The receives are posted before the answer goes back: the client may
  // SEND as soon as it is in RTS.
  if (verbs::Status st = s->channel_->connect(p, config.remote); !st.ok()) {
    return with_context(st.error(), "connect: ", id);
  }
  if (s->channel_->held_receives() != 0) {
    return verbs::Error{ENOMEM, "session " + std::to_string(id) + ": could not post " +
                                    std::to_string(config.recv_depth) + " receives"};
  }
  return s;
}

RcSession::~RcSession() = default;

void RcSession::stage_send(std::span<const std::uint8_t> bytes) noexcept {
  const std::span<std::uint8_t> slot = channel_->send_slot();
  const std::size_t n = std::min(bytes.size(), slot.size());
  std::memcpy(slot.data(), bytes.data(), n);
  channel_->stage_send(n);
}

}  // namespace qpgate::orders
