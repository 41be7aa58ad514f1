// The feed subscriber's native half (docs/protocol.md 2.7, 2.11): one UD QP
// attached to each subscribed channel's A (and B) groups — with an alternate
// device (a second link), a second UD QP there for the B groups, so either
// link alone still delivers one line — receive buffers of
// 40 (GRH) + frame size bytes, frames parsed and counted (FrameParser
// counters), A/B arbitrated and gap-checked (Arbiter: first copy wins, a
// frame ahead of a hole waits a bounded time for the other line), and
// delivered IN ORDER to JS as fromEngine records:
//
//   FEED_FRAME    one live data frame (with how many of its leading
//                 messages were already delivered: an overlap)
//   FEED_GAP      [from, from + count) lost for good (unrecoverable)
//   FEED_SESSION  the channel's session changed, or was first seen
//
// With a recovery connection (config.recovery, an RC QP to the gateway made
// here and connected by connect_recovery() after the control-plane
// handshake) a hole is asked for natively and delivered in order, and a
// late join or a new session resyncs from a snapshot (subscriber_channel.h).
//
// The line a frame came on is the destination group in the GRH (bytes
// 36..39: the IPv4 destination address). End-to-end latency (the frame's
// send_time_ns, CLOCK_REALTIME at the publisher, to CLOCK_REALTIME when the
// completion is polled) is recorded per channel in a LatencyHistogram.
//
// When fromEngine has no room for a record, the record is dropped and
// counted (ring_full_drops).
//
// One thread (the engine's). No locks; counters are readable anywhere.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/counters.h"
#include "feed/feed_counters.def"
#include "engine/spsc_ring.h"
#include "feed/arbiter.h"
#include "feed/feed_limits.h"
#include "feed/frame.h"
#include "feed/recovery_client.h"
#include "feed/ud_endpoint.h"
#include "metrics/latency_histogram.h"
#include "verbs/device.h"
#include "verbs/session_device.h"

namespace qpgate::feed {

struct SubscriberChannelConfig {
  std::uint16_t id = 0;
  std::uint32_t group_a = 0;  // host byte order
  std::uint32_t group_b = 0;  // 0: A only
  ArbiterConfig arbiter;
};

struct SubscriberConfig {
  std::uint32_t id = 0;  // written into every record (the feed agent assigns it)
  std::vector<SubscriberChannelConfig> channels;
  std::size_t max_frame_bytes = limits::max_frame_bytes.fallback;  // receive buffer = 40 + this
  std::uint32_t recv_slots = limits::recv_slots.fallback;
  std::uint32_t qkey = kFeedQkey;
  SubscriberRecoveryConfig recovery;
};

std::string validate(const SubscriberConfig& config);

struct SubscriberChannelCounters {
  std::uint16_t id = 0;
  QPGATE_FEED_SUBSCRIBER_CHANNEL_COUNTERS(QPGATE_COUNTER_MEMBER)  // feed_counters.def
  engine::SingleWriterCounter& line_frames(std::size_t line) { return line == 0 ? line_a_frames : line_b_frames; }
  FrameCounters frame_counters;                // accepted / rejected by reason
  metrics::LatencyHistogram latency;           // send_time_ns → polled, ns (CLOCK_REALTIME both ends)

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_SUBSCRIBER_CHANNEL_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

struct SubscriberStats {
  explicit SubscriberStats(std::size_t channel_count) : channels(channel_count) {}
  std::vector<SubscriberChannelCounters> channels;  // in config order
  QPGATE_FEED_SUBSCRIBER_COUNTERS(QPGATE_COUNTER_MEMBER)  // feed_counters.def

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_SUBSCRIBER_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

class SubscriberChannel;

class Subscriber {
 public:
  // `alternate`: a second device on another link (ibv; docs/protocol.md 1.11)
  // which line B is received on and the recovery connection may move to
  // (renew_recovery); both devices outlive the subscriber.
  static verbs::Result<std::unique_ptr<Subscriber>> create(verbs::Device& device, const SubscriberConfig& config,
                                                           verbs::Device* alternate = nullptr);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Polls the CQ, arbitrates, writes records into `out` (not published:
  // the engine publishes once per duty cycle). `now_ns`: CLOCK_MONOTONIC.
  int do_work(std::uint64_t now_ns, engine::SpscProducer& out);
  // When a hole is waiting for the other line: the time to declare it lost.
  std::uint64_t next_deadline_ns() const { return deadline_ns_; }

  std::uint32_t id() const { return config_.id; }
  const std::shared_ptr<SubscriberStats>& stats() const { return stats_; }
  const Arbiter* arbiter(std::uint16_t channel) const;

  // The recovery connection (config.recovery.enabled): our side for the
  // handshake, then the gateway's answer. Engine thread.
  RecoveryClient* recovery() const { return recovery_.get(); }
  verbs::Status connect_recovery(const verbs::RcPeer& gateway);
  // A new recovery connection (a new RC QP) in place of the current one,
  // which is destroyed: after the gateway restarted or the QP failed, the
  // old one can never answer. Returns our new side for the handshake; what
  // the channels still need waits for connect_recovery(). `device`
  // (verbs/session_device.h): kAlternateDevice makes it on the alternate
  // device (a failover: the first link is gone); EINVAL without one.
  verbs::Result<verbs::RcPeer> renew_recovery(std::uint8_t device = verbs::kPrimaryDevice);
  // The device the recovery connection is on.
  std::uint8_t recovery_device() const { return recovery_device_; }
  bool has_alternate_device() const { return devices_[verbs::kAlternateDevice] != nullptr; }
  // The application's queue (lag, drops), reported to the gateway over the recovery connection.
  const std::shared_ptr<ConsumerLoad>& consumer_load() const { return consumer_; }

 private:
  using Channel = SubscriberChannel;
  // One UD QP with its receive slots: on the device (groups A, and B without
  // an alternate device), or on the alternate device (groups B).
  struct Receiver {
    std::unique_ptr<UdEndpoint> ep;
    std::vector<std::uint32_t> to_repost;
    std::vector<verbs::RecvWr> wrs;
    std::vector<verbs::Sge> sges;
  };
  explicit Subscriber(const SubscriberConfig& config);
  verbs::Status add_receiver(verbs::Device& device, bool line_a, bool line_b);
  int post_receives(Receiver& r);
  int poll(Receiver& r, std::uint64_t now_ns);
  void on_completion(Receiver& r, const verbs::Wc& wc, std::uint64_t now_ns, std::uint64_t received_at);
  void make_channels();

  SubscriberConfig config_;
  // [kPrimaryDevice], [kAlternateDevice] (null without one); they outlive the
  // subscriber (the feed agent removes it first).
  std::array<verbs::Device*, 2> devices_{};
  std::vector<Receiver> receivers_;
  std::unique_ptr<RecoveryClient> recovery_;
  std::uint8_t recovery_device_ = verbs::kPrimaryDevice;
  std::shared_ptr<ConsumerLoad> consumer_ = std::make_shared<ConsumerLoad>();
  std::uint64_t next_report_ns_ = 0;
  void report(std::uint64_t now_ns);
  std::vector<std::unique_ptr<Channel>> channels_;
  std::shared_ptr<SubscriberStats> stats_;
  std::size_t slot_bytes_ = 0;
  std::uint64_t deadline_ns_ = 0;
};

}  // namespace qpgate::feed
