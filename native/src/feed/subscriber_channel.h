// One subscribed channel of a Subscriber: the arbiter's sink, and what turns
// arbitrated frames into FEED_FRAME / FEED_GAP / FEED_SESSION records in
// sequence order (docs/protocol.md 2.8, 2.11).
//
// Without a recovery connection a hole lost on every line is reported as a
// FEED_GAP (unrecoverable) and delivery carries on. With one:
//   gap       the range is queued and asked for (RetransmitRequest, at most
//             max_request_messages at a time); live frames behind it are
//             held (copied, at most buffer_frames) and delivered after the
//             recovered ones, which go out as FEED_FRAMEs with the
//             RETRANSMISSION flag (line 2 = recovery) and count as recovered.
//   RANGE_GONE / UNKNOWN_SESSION
//             the queued ranges are reported unrecoverable (FEED_GAP), then
//             the channel resyncs from a snapshot.
//   late join or a new session not starting at 1
//             a snapshot first: SNAPSHOT-flagged FEED_FRAMEs, then live
//             delivery resumes at last_sequence + 1 (held frames trimmed),
//             with no gap.
//   THROTTLED the request is repeated after retry_after_ns.
//   no answer within request_timeout_ns
//             the request is sent again (a new id; the late answer to the
//             old one is stale), request_attempts times in all.
//   the connection failed (its retries ran out: a lost link, or the
//             gateway gone)
//             what is needed waits for the renewal (Subscriber::
//             renew_recovery, which src/feed/recovery-link.ts starts at
//             once): a gateway that still has the ranges serves them on the
//             new connection. The wait is request_timeout_ns from the
//             first failure, however many renewals connect and fail again
//             or hang in between; only a reply proves the path again and
//             ends that clock.
//   no answer to the last attempt, no working renewal of a failed
//             connection in time, the held frames overflowed, or another
//             status
//             recovery gives up: the queued ranges are unrecoverable and
//             the held frames are delivered.
//   a connection being made with no failure behind it (the handshake, or
//             a renewal after the gateway restarted)
//             what is needed waits for it, bounded by buffer_frames only;
//             request_timeout_ns counts from the connection.
//   a new session
//             what the old one still needed is over: its queued ranges are
//             reported unrecoverable, its held frames delivered.
// fromEngine full (the app is not reading fast enough) loses nothing
// silently. A live frame that finds no room is a hole like one lost on the
// wire: asked for again over recovery, or, without a recovery connection,
// reported as a FEED_GAP. A held or recovered frame stays where it is and is
// tried again (within request_timeout_ns). A FEED_GAP or FEED_SESSION record
// that finds no room is owed: written, in order, before anything else of the
// channel once there is room. A snapshot torn by a full ring is asked for
// again whole.
// Held frames are copies: recovery allocates; the live path does not.
// One thread (the engine's).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/spsc_ring.h"
#include "feed/arbiter.h"
#include "feed/recovery_client.h"
#include "feed/subscriber.h"

namespace qpgate::feed {

// FEED_FRAME line byte for frames that came over the recovery connection.
inline constexpr std::uint8_t kRecoveryLine = 2;

class SubscriberChannel final : public ArbiterSink {
 public:
  SubscriberChannel(const SubscriberChannelConfig& c, SubscriberChannelCounters& counters, SubscriberStats& all,
                    std::uint32_t subscriber_id, RecoveryClient* client);

  // ArbiterSink
  void deliver(Line line, const ParsedFrame& frame, std::uint16_t skip) override;
  void gap(std::uint64_t from, std::uint64_t count) override;
  void session_change(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) override;

  // A reply for this channel (routed by its channel field).
  void on_reply(const recovery::Reply& reply);
  // Sends what is needed, delivers what can be, gives up on what waited too long.
  void pump();
  // When pump() must run again without traffic (0: not needed).
  std::uint64_t deadline() const;
  // The recovery connection was renewed: what was asked of the old one is void.
  void set_client(RecoveryClient* client);
  // The connection is up (at `now`, CLOCK_MONOTONIC): a waiting need's timeout starts.
  void on_connected(std::uint64_t now);

  SubscriberChannelConfig config;
  Arbiter arbiter;
  SubscriberChannelCounters& counters;
  // Set for the duration of Subscriber::do_work.
  engine::SpscProducer* out = nullptr;
  std::uint64_t receive_time_ns = 0;  // CLOCK_REALTIME
  std::uint64_t now_ns = 0;           // CLOCK_MONOTONIC

 private:
  enum class Mode : std::uint8_t { kLive, kSnapshot };
  enum class Source : std::uint8_t { kLive, kHeld, kRecovered };
  // What emit() did with a frame.
  enum class Emitted : std::uint8_t { kWritten, kNotNeeded, kNoRoom };
  // A FEED_GAP (is_gap) or FEED_SESSION record still to be written.
  struct Owed {
    bool is_gap = false;
    std::uint64_t from = 0, end = 0;  // gap
    std::uint32_t old_session = 0, new_session = 0;
    std::uint64_t next_seq = 0;  // session
  };
  struct Pending {
    bool is_gap = false;
    Line line = Line::kA;
    std::uint64_t from = 0;   // gap
    std::uint64_t count = 0;  // gap
    std::uint64_t receive_ns = 0;
    std::vector<std::uint8_t> frame;
  };

  bool recovering() const { return client_ != nullptr && (mode_ == Mode::kSnapshot || !pending_.empty()); }
  Emitted emit(std::uint8_t line, const ParsedFrame& frame, std::uint16_t min_skip, Source source,
               std::uint64_t receive_ns);
  // A live frame, or the hole it leaves when fromEngine is full.
  void emit_live(Line line, const ParsedFrame& frame, std::uint16_t skip);
  // A held frame being let go of, or, when fromEngine is full, its range reported unrecoverable.
  void emit_or_report(const Pending& held);
  // The first sequence of `frame` (past `skip`) the app has not had.
  std::uint64_t undelivered_from(const ParsedFrame& frame, std::uint16_t skip) const;
  // A hole in what the app gets, from `from` for `count`: queued for recovery, or reported.
  void hole(std::uint64_t from, std::uint64_t count);
  // Claims a record and writes its common head (subscriber id, channel); null when fromEngine is full.
  std::uint8_t* claim(std::int32_t type, std::int32_t length);
  // Each false when fromEngine has no room, or owed records are still ahead of it.
  bool write_frame(std::uint8_t line, const ParsedFrame& frame, std::uint16_t skip, std::uint64_t receive_ns);
  bool write_gap(std::uint64_t from, std::uint64_t end);
  bool write_session(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq);
  bool write(const Owed& record);
  // Writes the owed records it can; true when none is left.
  bool settle();
  // `record` now, behind what is owed, or owed too (counted).
  void write_or_owe(const Owed& record);
  void owe(const Owed& record);
  void unrecoverable(std::uint64_t from, std::uint64_t end);
  // The reply to the outstanding request, by kind (THROTTLED handled before).
  void on_snapshot_reply(const recovery::Reply& reply);
  void on_retransmit_reply(const recovery::Reply& reply);
  void report_pending_gaps();
  void give_up();
  // The outstanding request timed out: true if it may be sent again (request_attempts), made so.
  bool ask_again();
  void flush_pending();
  void overflowed();
  bool waited_too_long() const;
  // When the wait for what is needed began (0: unbounded, a connection being made with no failure behind it).
  std::uint64_t waiting_since() const;
  void need(std::uint64_t since);
  template <class Q>
  void ask(Q& q);

  SubscriberStats& stats_;
  std::uint32_t subscriber_;
  RecoveryClient* client_;
  Mode mode_ = Mode::kLive;
  std::uint32_t session_ = 0;
  std::uint64_t next_emit_ = 0;  // next sequence to deliver; 0 = not synced (take the next frame as is)
  std::deque<Pending> pending_;  // held frames and queued gaps, in sequence order
  std::size_t held_frames_ = 0;
  std::uint64_t outstanding_ = 0;  // request id awaiting its reply (0: none)
  std::uint64_t sent_at_ = 0;
  std::uint32_t attempts_ = 0;  // times the request now outstanding was sent, unanswered (request_attempts)
  std::uint64_t need_since_ = 0;   // when the current need arose (waiting for a connection)
  std::uint64_t retry_at_ = 0;     // THROTTLED, or fromEngine full: not before
  std::uint64_t failed_seen_ = 0;  // when pump() first found a connection failed, until a reply or give_up (0: none)
  bool snapshot_torn_ = false;     // a part of the snapshot being received found fromEngine full
  std::vector<Owed> owed_;         // in order; contiguous gaps merged, so a handful at most
};

}  // namespace qpgate::feed
