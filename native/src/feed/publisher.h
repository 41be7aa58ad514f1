// The feed publisher (docs/protocol.md Part 2): messages in, sequenced frames
// out on each channel's multicast groups over a UD QP.
//
//   publish(channel, messages, count, enqueue_ns)
//       validates the messages (12-byte header + protobuf body each, packed,
//       as src/feed/frame.ts encodes them) and appends them to the channel's
//       frame; a full frame is sent at once. All or nothing per call.
//   do_work(now)
//       sends the partly filled frames (so one duty cycle's records share
//       frames), a heartbeat on every channel idle for its interval, posts
//       the batch of UD SENDs, and reaps send completions.
//
// Sending a frame: first_seq from the channel's sequence, send_time_ns =
// CLOCK_REALTIME, copied into a registered send slot and posted once per
// line (A, and B if configured: the same bytes on both groups; B from the
// alternate device when the publisher has one, A from the device); once
// posted, kept in the channel's retransmission ring and applied to its
// snapshot store (from the send slot, which holds the bytes until the SEND
// completes: the keeping, cold memory mostly, is not on the way to the wire;
// the recovery service reads the ring only after the publishers posted). A slot is
// reused once all its SENDs completed; a publish() that might need more
// slots than are free is refused with kRetry (back-pressure: the record
// stays in the ring), never dropped.
//
// Publish latency: JS stamps each PUBLISH record with CLOCK_MONOTONIC
// (process.hrtime) when it writes it; the time from that stamp until the
// post_send of the frame holding the record's last message is recorded in a
// LatencyHistogram (no allocation). Counters and the histogram live in a
// PublisherStats shared with readers on other threads.
//
// Memory: everything large a publisher holds — each channel's
// retransmission ring and snapshot store, the registered send slots — is
// allocated and touched by reserve() on the caller's thread (the JS thread in
// the gateway) and handed to create() on the engine thread, which only takes
// the pointers. reserved_bytes() says what reserve() allocates; the gateway's
// memory budgets (feeds.memoryBudgetBytes) are counted in it.
//
// One thread: the engine thread (or a test's loop). No locks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/counters.h"
#include "feed/feed_counters.def"
#include "feed/feed_limits.h"
#include "feed/frame.h"
#include "feed/retransmit_ring.h"
#include "feed/sequencer.h"
#include "feed/snapshot_store.h"
#include "feed/ud_endpoint.h"
#include "metrics/latency_histogram.h"
#include "verbs/device.h"

namespace qpgate::feed {

struct PublisherChannelConfig {
  std::uint16_t id = 0;
  std::uint32_t group_a = 0;  // IPv4 multicast, host byte order
  std::uint32_t group_b = 0;  // 0: no B line
  std::size_t frame_bytes = kDefaultFrameBytes;
  std::uint64_t heartbeat_ns = limits::heartbeat_ms.fallback * 1'000'000;
  RetransmitConfig ring;
  SnapshotConfig snapshot;
};

struct PublisherConfig {
  std::vector<PublisherChannelConfig> channels;
  std::uint32_t send_slots = limits::send_slots.fallback;  // frames in flight
  std::uint32_t qkey = kFeedQkey;
  std::uint8_t hop_limit = 8;       // multicast TTL
  std::uint32_t previous_session = 0;  // the new session differs from it
};

// Empty when usable, else what is wrong.
std::string validate(const PublisherConfig& config);

// What reserve() allocates for one channel: its retransmission ring
// (ring.max_bytes + 16 B per ring.max_frames) and snapshot store (64 B +
// slot_bytes per slot + one staging slot).
std::size_t reserved_bytes(const PublisherChannelConfig& channel);
// The registered send slots: send_slots x the largest frame size rounded up to 64.
std::size_t send_slot_bytes(const PublisherConfig& config);
// Every channel's plus the send slots.
std::size_t reserved_bytes(const PublisherConfig& config);

// A publisher's memory, allocated and every page touched, not yet in use.
struct PublisherReservation {
  struct Channel {
    std::unique_ptr<RetransmitRing> ring;
    std::unique_ptr<SnapshotStore> snapshot;
  };
  std::vector<Channel> channels;  // in config order
  std::vector<std::uint8_t> send_slots;
};

// Any thread; the pages go preferably to `numa_node` (the engine's; -1: the
// caller's first touch decides). Errors (ENOMEM), with nothing left allocated: the host has
// less memory available than reserved_bytes(config) (MemAvailable, or the
// cgroup's memory.max), or an allocation failed — the message names the
// channel and the part ("feed publisher: channel 3: out of memory reserving
// the retransmission ring (64.0 MiB): std::bad_alloc").
verbs::Result<PublisherReservation> reserve(const PublisherConfig& config, int numa_node = -1);

// Bytes the host can still give this process: MemAvailable, capped by the
// cgroup v2 memory.max - memory.current when there is one; SIZE_MAX if unknown.
std::size_t available_memory_bytes();
// "64.0 MiB", "512 B".
std::string format_bytes(std::size_t bytes);

// The channel's counters are the list QPGATE_FEED_CHANNEL_COUNTERS (feed_counters.def).
struct PublisherChannelCounters {
  std::uint16_t id = 0;
  QPGATE_FEED_CHANNEL_COUNTERS(QPGATE_COUNTER_MEMBER)

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_CHANNEL_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

// Readable from any thread while the publisher (or a holder) keeps it alive.
struct PublisherStats {
  explicit PublisherStats(std::size_t channel_count) : channels(channel_count) {}
  std::vector<PublisherChannelCounters> channels;  // in config order
  QPGATE_FEED_PUBLISHER_COUNTERS(QPGATE_COUNTER_MEMBER)  // feed_counters.def
  metrics::LatencyHistogram publish_latency;     // enqueue (JS) → post_send, ns

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_PUBLISHER_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

enum class PublishStatus : std::uint8_t { kOk, kRetry, kUnknownChannel, kMalformed, kTooLarge };

class Publisher {
 public:
  // Engine thread: takes `memory` (from reserve(config)) and makes the verbs
  // objects. `alternate`: a second device on another link (an ibv gateway's
  // backend.alternateDevice), which line B leaves from, so a subscriber with
  // a device on each link keeps one line when either link fails
  // (docs/protocol.md 1.11); both devices outlive the publisher.
  static verbs::Result<std::unique_ptr<Publisher>> create(verbs::Device& device, const PublisherConfig& config,
                                                          PublisherReservation memory, std::uint64_t now_ns,
                                                          verbs::Device* alternate = nullptr);
  // Reserves on the calling thread first (tests, tools).
  static verbs::Result<std::unique_ptr<Publisher>> create(verbs::Device& device, const PublisherConfig& config,
                                                          std::uint64_t now_ns, verbs::Device* alternate = nullptr);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  PublishStatus publish(std::uint16_t channel, std::span<const std::uint8_t> messages, std::uint16_t count,
                        std::uint64_t enqueue_ns);
  // `now_ns`: CLOCK_MONOTONIC. Returns the work done.
  int do_work(std::uint64_t now_ns);
  // Frees the send slots of completed SENDs; returns how many. do_work does
  // it too; the owner may also call it after the device has sent, so a
  // cycle's completions are taken in that cycle (feed_agent.h).
  int reap();
  // The earliest heartbeat due (CLOCK_MONOTONIC ns).
  std::uint64_t next_deadline_ns() const;

  // Sends the pending frames and an END_OF_SESSION on every channel; then
  // the owner keeps calling do_work until drained() before destroying it.
  void close(std::uint64_t now_ns);
  bool drained() const { return free_slots_ == slots_.size() && batches_[0].count == 0 && batches_[1].count == 0; }
  // After close(): gives up the channels' rings and snapshot stores (nothing
  // reads them once closed), so the owner frees them off the engine thread.
  PublisherReservation release_channel_memory();

  // Fault injection (tests, drills): bit 0 = send on line A, bit 1 = on B.
  // A line left out misses those frames for good (sequences still advance).
  void set_line_mask(std::uint8_t mask) { line_mask_ = mask; }
  std::uint8_t line_mask() const { return line_mask_; }

  std::uint32_t session() const { return session_; }
  const std::shared_ptr<PublisherStats>& stats() const { return stats_; }
  // The UD QP the frames leave on, for the control plane's QP table (state,
  // PSN, Q_Key, counters). Engine thread only, like every verbs call.
  const verbs::QueuePair& qp() const { return *ep_->qp; }
  // Line B's UD QP on the alternate device; nullptr when line B leaves from qp().
  const verbs::QueuePair* alternate_qp() const { return alternate_ep_ ? alternate_ep_->qp.get() : nullptr; }
  // For tests and the recovery service.
  const RetransmitRing* ring(std::uint16_t channel) const;
  const SnapshotStore* snapshot(std::uint16_t channel) const;

 private:
  struct Channel;
  Publisher(const PublisherConfig& config, std::unique_ptr<UdEndpoint> ep, PublisherReservation& memory,
            std::uint64_t now_ns);
  Channel* find(std::uint16_t id);
  const Channel* find(std::uint16_t id) const;
  // Returns the send slot that holds the frame until it is posted, or
  // kNoSlot when none does (no slot, or every line disabled).
  std::size_t send_frame(Channel& c, std::span<const std::uint8_t> frame, std::uint64_t now_ns);
  static constexpr std::size_t kNoSlot = SIZE_MAX;
  // Keeps a sent data frame: the channel's ring and snapshot store.
  static void keep(Channel& c, std::span<const std::uint8_t> frame);
  void keep_posted_frames();
  void send_data_frame(Channel& c, std::uint64_t now_ns);
  void send_control(Channel& c, std::uint8_t flag, std::uint64_t now_ns);
  void post();
  static std::uint64_t heartbeat_due_ns(const Channel& c);
  std::size_t slots_needed(const Channel& c, std::size_t bytes, std::uint16_t count) const;

  // Line B's endpoint on the alternate device, over ep_'s send slots.
  verbs::Status open_alternate(verbs::Device& alternate);
  verbs::Status make_address_handles(verbs::Device& device, verbs::Device* alternate);

  PublisherConfig config_;
  std::unique_ptr<UdEndpoint> ep_;
  std::unique_ptr<UdEndpoint> alternate_ep_;  // null: line B leaves from ep_
  std::vector<std::unique_ptr<verbs::AddressHandle>> ahs_;  // per channel: A, B (may be null)
  std::vector<std::unique_ptr<Channel>> channels_;
  std::shared_ptr<PublisherStats> stats_;
  std::uint32_t session_ = 0;
  std::size_t slot_bytes_ = 0;
  struct Slot {
    std::uint32_t outstanding = 0;  // SENDs posted or pending, not yet completed
  };
  std::vector<Slot> slots_;
  std::size_t next_slot_ = 0;
  std::size_t free_slots_ = 0;
  // The post batches, one per endpoint (ep_, alternate_ep_): WRs and their
  // SGEs (fixed capacity, no allocation).
  static constexpr std::size_t kMaxBatch = 64;
  struct SendBatch {
    std::array<verbs::SendWr, kMaxBatch> wrs{};
    std::array<verbs::Sge, kMaxBatch> sges{};
    std::size_t count = 0;
  };
  std::array<SendBatch, 2> batches_{};
  // The endpoint a line leaves from.
  UdEndpoint& line_endpoint(int line) { return line == 1 && alternate_ep_ ? *alternate_ep_ : *ep_; }
  SendBatch& line_batch(int line) { return batches_[line == 1 && alternate_ep_ ? 1 : 0]; }
  void post(SendBatch& batch, UdEndpoint& ep);
  int reap(UdEndpoint& ep);
  // Data frames in the post batch, kept once it is posted (each has a WR in it).
  struct Unkept {
    Channel* channel = nullptr;
    std::size_t slot = 0;
    std::size_t bytes = 0;
  };
  std::array<Unkept, kMaxBatch> unkept_{};
  std::size_t unkept_count_ = 0;
  // Enqueue stamps of records whose last message is in a frame sent but not yet posted.
  static constexpr std::size_t kMaxStamps = 4096;
  std::array<std::uint64_t, kMaxStamps> stamps_{};
  std::size_t stamp_count_ = 0;
  bool closed_ = false;
  std::uint8_t line_mask_ = 0x3;
};

}  // namespace qpgate::feed
