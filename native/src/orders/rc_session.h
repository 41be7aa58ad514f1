// One order-entry (or risk) session: its own protection domain, CQ and RC
// QP (RESET→RTS at once with verbs::connect_rc, towards the client that
// sent its QPN/PSN/GID/MTU in the handshake), registered receive and send
// buffers, and the risk-region grants of its accounts in that PD.
//
// Framing (docs/protocol.md Part 3): one qpgate.orders.v1.OrderMessage per
// SEND in each direction: at most `max_message_bytes` from the client, at
// most kMaxEncodedBytes (codec.h) from the gateway. Receives are posted
// `recv_depth` deep; a consumed receive is re-posted by repost() — which the
// service skips under back-pressure, so the client then meets RNR NAKs.
// Sends are signaled, one slot each, `send_depth` deep; completions of the
// send queue come back in order, so slots are a ring.
//
// Only the verbs interface (verbs/device.h) is used: the soft and ibv
// backends behave alike. Everything here runs on the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "orders/out_queue.h"
#include "orders/risk_grants.h"
#include "verbs/device.h"
#include "verbs/rc_connect.h"

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
  std::uint32_t qpn() const noexcept { return qp_->qp_num(); }
  std::uint32_t psn() const noexcept { return config_.params.psn; }
  verbs::Mtu mtu() const noexcept { return config_.params.mtu; }
  verbs::QpState state() const { return qp_->state(); }
  const std::vector<RegionGrant>& regions() const noexcept { return grants_.regions(); }
  const std::vector<std::uint64_t>& accounts() const noexcept { return config_.accounts; }

  // Completions: up to out.size(); EOVERFLOW (the QP is in ERR then) as an error.
  verbs::Result<std::size_t> poll(std::span<verbs::Wc> out) { return cq_->poll(out); }
  static bool is_send(const verbs::Wc& wc) noexcept { return (wc.wr_id & kSendTag) != 0; }
  // The bytes of a successful receive completion (empty if its length is impossible).
  std::span<const std::uint8_t> received(const verbs::Wc& wc) const noexcept;
  // The receive of `wc` may be posted again (its bytes were consumed).
  void release_receive(const verbs::Wc& wc) noexcept;
  // Posts the released receives; returns how many.
  std::size_t repost_receives();
  std::size_t held_receives() const noexcept { return released_.size(); }

  std::size_t free_send_slots() const noexcept { return config_.send_depth - sends_in_flight_ - staged_.size(); }
  // Copies `bytes` into the next send slot and stages its WR (free_send_slots() > 0).
  void stage_send(std::span<const std::uint8_t> bytes) noexcept;
  // Posts the staged sends in one call; the Status of the post.
  verbs::Status flush_sends();
  void send_completed() noexcept {
    if (sends_in_flight_ > 0) --sends_in_flight_;
  }
  std::uint32_t sends_in_flight() const noexcept { return sends_in_flight_; }

  // QP → ERR: the client's QP will see its next request fail; our posted WRs flush.
  void to_error();

  // Service state of the connection.
  OutQueue& out() noexcept { return out_; }
  bool greeted = false;       // a Welcome was queued: sequenced messages follow it
  bool disconnected = false;  // the QP left RTS and on_disconnect ran
  std::uint64_t received_count = 0;
  std::uint64_t sent_count = 0;
  std::uint64_t next_state_check_ns = 0;

 private:
  static constexpr std::uint64_t kSendTag = std::uint64_t{1} << 63;

  explicit RcSession(const RcSessionConfig& config) : config_(config) {}

  RcSessionConfig config_;
  std::unique_ptr<verbs::ProtectionDomain> pd_;
  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::unique_ptr<verbs::QueuePair> qp_;
  RiskGrants grants_;
  std::vector<std::uint8_t> recv_buffer_;
  std::vector<std::uint8_t> send_buffer_;
  std::unique_ptr<verbs::MemoryRegion> recv_mr_;
  std::unique_ptr<verbs::MemoryRegion> send_mr_;
  std::vector<std::uint32_t> released_;       // receive slots to post again
  std::vector<verbs::Sge> recv_sges_;          // one per receive slot, fixed
  std::vector<verbs::RecvWr> recv_wrs_;        // scratch for repost_receives
  std::vector<verbs::Sge> send_sges_;          // one per send slot
  std::vector<verbs::SendWr> staged_;
  std::uint32_t next_send_slot_ = 0;
  std::uint32_t sends_in_flight_ = 0;
  OutQueue out_;
};

}  // namespace qpgate::orders
