// The feed subscriber's native half (docs/protocol.md 2.7, 2.11): one UD QP
// attached to each subscribed channel's A (and B) groups, receive buffers of
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
  static verbs::Result<std::unique_ptr<Subscriber>> create(verbs::Device& device, const SubscriberConfig& config);
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
  // the channels still need waits for connect_recovery().
  verbs::Result<verbs::RcPeer> renew_recovery();
  // The application's queue (lag, drops), reported to the gateway over the recovery connection.
  const std::shared_ptr<ConsumerLoad>& consumer_load() const { return consumer_; }

 private:
  using Channel = SubscriberChannel;
  explicit Subscriber(const SubscriberConfig& config);
  int post_receives();
  void on_completion(const verbs::Wc& wc, std::uint64_t now_ns, std::uint64_t received_at);
  void make_channels();

  SubscriberConfig config_;
  verbs::Device* device_ = nullptr;  // outlives the subscriber (the feed agent removes it first)
  std::unique_ptr<UdEndpoint> ep_;
  std::unique_ptr<RecoveryClient> recovery_;
  std::shared_ptr<ConsumerLoad> consumer_ = std::make_shared<ConsumerLoad>();
  std::uint64_t next_report_ns_ = 0;
  void report(std::uint64_t now_ns);
  std::vector<std::unique_ptr<Channel>> channels_;
  std::shared_ptr<SubscriberStats> stats_;
  std::size_t slot_bytes_ = 0;
  std::vector<std::uint32_t> to_repost_;
  std::vector<verbs::RecvWr> recv_wrs_;
  std::vector<verbs::Sge> recv_sges_;
  std::uint64_t deadline_ns_ = 0;
};

}  // namespace qpgate::feed
