// One order-entry (or risk) session: a verbs::RcChannel (its own
// protection domain, CQ, RC QP and registered receive and send slots),
// connected at once towards the client that sent its QPN/PSN/GID/MTU in the
// handshake, and the risk-region grants of its accounts in that PD.
//
// Framing (docs/protocol.md Part 3): one qpgate.orders.v1.OrderMessage per
// SEND in each direction: at most `max_message_bytes` from the client, at
// most kMaxEncodedBytes (codec.h) from the gateway. Receives are posted
// `recv_depth` deep; a consumed receive is released and re-posted by
// channel().repost_receives() — which the service skips under
// back-pressure, so the client then meets RNR NAKs. Sends are signaled, one
// slot each, `send_depth` deep.
//
// Only the verbs interface (verbs/device.h) is used: the soft and ibv
// backends behave alike. Everything here runs on the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "orders/out_queue.h"
#include "orders/risk_grants.h"
#include "verbs/device.h"
#include "verbs/rc_channel.h"

namespace qpgate::orders {

struct RcSessionConfig {
  std::uint32_t session = 0;
  SessionRole role = SessionRole::kTrading;
  std::vector<std::uint64_t> accounts;  // for the risk grants
  verbs::RcPeer remote;
  std::uint32_t recv_depth = 256;
  std::uint32_t send_depth = 256;
  std::uint32_t max_message_bytes = 512;
  verbs::RcParams params;  // psn, mtu, sgid_index, timers; access is set from the role
};

class RcSession {
 public:
  static verbs::Result<std::unique_ptr<RcSession>> open(verbs::Device& device, RiskRegistry& risk,
                                                        const RcSessionConfig& config);
  ~RcSession();
  RcSession(const RcSession&) = delete;
  RcSession& operator=(const RcSession&) = delete;

  std::uint32_t id() const noexcept { return config_.session; }
  SessionRole role() const noexcept { return config_.role; }
  std::uint32_t qpn() const noexcept { return channel_->qpn(); }
  std::uint32_t psn() const noexcept { return config_.params.psn; }
  verbs::Mtu mtu() const noexcept { return config_.params.mtu; }
  verbs::QpState state() const { return channel_->state(); }
  const std::vector<RegionGrant>& regions() const noexcept { return grants_.regions(); }
  const std::vector<std::uint64_t>& accounts() const noexcept { return config_.accounts; }

  // The QP, its completions and its receive and send slots.
  verbs::RcChannel& channel() noexcept { return *channel_; }
  const verbs::RcChannel& channel() const noexcept { return *channel_; }
  // Copies `bytes` into the next send slot and stages its SEND (channel().free_send_slots() > 0).
  void stage_send(std::span<const std::uint8_t> bytes) noexcept;

  // Service state of the connection.
  OutQueue& out() noexcept { return out_; }
  bool greeted = false;       // a Welcome was queued: sequenced messages follow it
  // The rebuild (resend_rebuilder.h) its Welcome's resend waits for, 0 = none;
  // until it is done what the session is sent waits in `held`, behind the
  // resends of [resend_from, resend_to] (held until `resend_durable`).
  std::uint64_t rebuild_job = 0;
  std::uint64_t resend_from = 0;
  std::uint64_t resend_to = 0;
  std::uint64_t resend_durable = 0;
  OutQueue held{2};
  std::uint8_t device = 0;    // which of the service's devices its QP is on (order_service.h kPrimaryDevice...)
  bool disconnected = false;  // the QP left RTS and on_disconnect ran
  // What ended it (set with disconnected): the work-completion status or async
  // event that said so, or the gateway's own reason; /v1/sessions shows it.
  std::string ended_by;
  bool back_pressured = false;  // its receives are held: it does not read its answers
  std::uint64_t received_count = 0;
  std::uint64_t sent_count = 0;
  std::uint64_t next_state_check_ns = 0;
  // Time the gateway watched it hold a queue over max_queued_messages with
  // nothing posted (OrderService::pace_sessions), and when that was last looked at.
  std::uint64_t held_ns = 0;
  std::uint64_t held_checked_ns = 0;

 private:
  explicit RcSession(const RcSessionConfig& config) : config_(config) {}

  RcSessionConfig config_;
  std::unique_ptr<verbs::RcChannel> channel_;
  RiskGrants grants_;  // MRs in the channel's PD: deregistered before it goes
  OutQueue out_;
};

}  // namespace qpgate::orders
