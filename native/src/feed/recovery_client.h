// A subscriber's recovery connection: one RC QP (RcEndpoint) to the
// gateway's recovery service, made when the subscriber is created and
// connected once the control-plane handshake (POST /v1/sessions, role
// "recovery") returned the gateway's side. Sends RecoveryRequests and hands
// decoded RecoveryReplies to the subscriber's channels. One thread (the
// engine's).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/counters.h"
#include "feed/feed_counters.def"
#include "feed/rc_endpoint.h"
#include "feed/recovery_codec.h"

namespace qpgate::feed {

struct SubscriberRecoveryConfig {
  bool enabled = false;
  std::uint32_t reply_bytes = 64 * 1024;       // receive slot size: >= the gateway's replyBytes
  std::uint32_t recv_slots = 8;
  std::uint32_t max_request_messages = 4096;   // asked per RetransmitRequest
  std::uint64_t request_timeout_ns = 2'000'000'000;  // no answer by then: asked again; no connection by then: give up
  // Times a request is sent before recovery gives up on it, each waiting request_timeout_ns: a
  // gateway that is slow to answer (a restart, a loaded host) costs a second request, not the ranges.
  std::uint32_t request_attempts = 3;
  std::size_t buffer_frames = 65'536;          // live frames held per channel while recovering
  std::uint64_t report_interval_ns = 250'000'000;  // SubscriberReport to the gateway (0: never)
};

// What the application side (JS) says about its consumption, for the
// SubscriberReport: written by the JS thread, read by the engine thread.
struct ConsumerLoad {
  std::atomic<std::uint64_t> queued{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> conflated{0};
};

struct RecoveryClientCounters {
  QPGATE_FEED_RECOVERY_CLIENT_COUNTERS(QPGATE_COUNTER_MEMBER)  // feed_counters.def

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_RECOVERY_CLIENT_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

class RecoveryClient {
 public:
  // `counters`: a renewed connection (Subscriber::renew_recovery) goes on counting in its predecessor's.
  static verbs::Result<std::unique_ptr<RecoveryClient>> create(verbs::Device& device, const SubscriberRecoveryConfig& c,
                                                               std::shared_ptr<RecoveryClientCounters> counters = nullptr);

  verbs::RcPeer local() const { return ep_->local(); }
  verbs::Status connect(const verbs::RcPeer& peer);
  bool connected() const { return ep_->connected(); }
  bool failed() const { return ep_->failed(); }
  verbs::QpState state() const { return ep_->state(); }
  verbs::RcPathInfo path() const { return ep_->path(); }

  // Every verbs::kRcCheckIntervalNs: after a path migration the gateway
  // followed, the path left becomes the alternate again (RcEndpoint::rearm),
  // so a second failure moves the connection back instead of ending it.
  void rearm_when_due(std::uint64_t now_ns);

  std::uint64_t next_request_id() { return ++last_request_id_; }
  bool send(const recovery::RetransmitRequest& q);
  bool send(const recovery::SnapshotRequest& q);
  bool send(const recovery::SubscriberReport& q);

  // Calls on_reply(const recovery::Reply&) for each reply received; the
  // reply's frames are valid during the call only.
  template <class Fn>
  int poll(Fn&& on_reply) {
    std::array<RcEndpoint::Completion, 8> done{};
    const std::size_t n = ep_->poll(done);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& c = done[i];
      if (c.kind == RcEndpoint::Completion::Kind::kError) {
        counters_->errors.add();
        if (c.status == verbs::WcStatus::IBV_WC_RETRY_EXC_ERR) counters_->retry_exceeded.add();
      } else if (c.kind == RcEndpoint::Completion::Kind::kReceived) {
        const char* error = nullptr;
        if (recovery::decode_reply(c.bytes, *reply_, &error)) {
          counters_->replies.add();
          on_reply(*reply_);
        } else {
          counters_->malformed_replies.add();
        }
        ep_->repost(c.slot);
      }
    }
    return static_cast<int>(n);
  }

  RecoveryClientCounters& counters() { return *counters_; }
  // Readable from any thread for as long as it is held.
  const std::shared_ptr<RecoveryClientCounters>& shared_counters() const { return counters_; }
  const SubscriberRecoveryConfig& config() const { return config_; }

 private:
  explicit RecoveryClient(const SubscriberRecoveryConfig& c) : config_(c), reply_(std::make_unique<recovery::Reply>()) {}
  template <class Q>
  bool send_request(const Q& q);

  SubscriberRecoveryConfig config_;
  std::unique_ptr<RcEndpoint> ep_;
  std::unique_ptr<recovery::Reply> reply_;  // decoded in place (its frame table is large)
  std::uint64_t last_request_id_ = 0;
  std::uint64_t next_rearm_check_ns_ = 0;
  std::shared_ptr<RecoveryClientCounters> counters_ = std::make_shared<RecoveryClientCounters>();
};

}  // namespace qpgate::feed
