#include "feed/subscriber_channel.h"

#include <algorithm>
#include <cstring>

#include "engine/record_types.h"
#include "feed/feed_records.h"

namespace qpgate::feed {

using recovery::Status;

namespace {
// How long a record that found fromEngine full waits before it is tried again when no traffic comes.
constexpr std::uint64_t kFullRingRetryNs = 100'000;
}  // namespace

SubscriberChannel::SubscriberChannel(const SubscriberChannelConfig& c, SubscriberChannelCounters& channel_counters,
                                     SubscriberStats& all, std::uint32_t subscriber_id, RecoveryClient* client)
    : config(c), arbiter(c.arbiter), counters(channel_counters), stats_(all), subscriber_(subscriber_id),
      client_(client) {}

std::uint8_t* SubscriberChannel::claim(std::int32_t type, std::int32_t length) {
  std::byte* dst = out->claim(type, length);
  if (dst == nullptr) return nullptr;
  auto* p = reinterpret_cast<std::uint8_t*>(dst);
  store_le<std::uint32_t>(p + 0, subscriber_);  // every feed record starts with subscriber id and channel
  store_le<std::uint16_t>(p + 4, config.id);
  store_le<std::uint16_t>(p + 6, 0);
  return p;
}

bool SubscriberChannel::write_frame(std::uint8_t line, const ParsedFrame& frame, std::uint16_t skip,
                                    std::uint64_t receive_ns) {
  if (!settle()) return false;
  const FrameHeaderView h = frame.header();
  const auto length = static_cast<std::int32_t>(records::kFrameRecordHeaderBytes + frame.bytes().size());
  std::uint8_t* p = claim(records::kFeedFrame, length);
  if (p == nullptr) return false;
  p[6] = line;
  p[7] = h.flags();
  store_le<std::uint64_t>(p + 8, h.first_seq());
  store_le<std::uint16_t>(p + 16, h.message_count());
  store_le<std::uint16_t>(p + 18, skip);
  store_le<std::uint32_t>(p + 20, h.session());
  store_le<std::uint64_t>(p + 24, h.send_time_ns());
  store_le<std::uint64_t>(p + 32, receive_ns);
  std::memcpy(p + records::kFrameRecordHeaderBytes, frame.bytes().data(), frame.bytes().size());
  return true;
}

bool SubscriberChannel::write_gap(std::uint64_t from, std::uint64_t end) {
  std::uint8_t* p = claim(records::kFeedGap, records::kGapRecordBytes);
  if (p == nullptr) return false;
  store_le<std::uint64_t>(p + 8, from);
  store_le<std::uint64_t>(p + 16, end - from);
  return true;
}

bool SubscriberChannel::write_session(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) {
  std::uint8_t* p = claim(records::kFeedSession, records::kSessionRecordBytes);
  if (p == nullptr) return false;
  store_le<std::uint32_t>(p + 8, old_session);
  store_le<std::uint32_t>(p + 12, new_session);
  store_le<std::uint64_t>(p + 16, next_seq);
  return true;
}

bool SubscriberChannel::write(const Owed& r) {
  return r.is_gap ? write_gap(r.from, r.end) : write_session(r.old_session, r.new_session, r.next_seq);
}

bool SubscriberChannel::settle() {
  std::size_t written = 0;
  for (const Owed& o : owed_) {
    if (!write(o)) break;
    ++written;
  }
  owed_.erase(owed_.begin(), owed_.begin() + static_cast<std::ptrdiff_t>(written));
  return owed_.empty();
}

void SubscriberChannel::write_or_owe(const Owed& record) {
  if (!(settle() && write(record))) owe(record);
}

void SubscriberChannel::owe(const Owed& record) {
  stats_.ring_full_drops.add();
  if (record.is_gap && !owed_.empty() && owed_.back().is_gap && owed_.back().end == record.from) {
    owed_.back().end = record.end;
    return;
  }
  owed_.push_back(record);
}

std::uint64_t SubscriberChannel::undelivered_from(const ParsedFrame& frame, std::uint16_t skip) const {
  return std::max<std::uint64_t>(frame.header().first_seq() + skip, next_emit_);
}

SubscriberChannel::Emitted SubscriberChannel::emit(std::uint8_t line, const ParsedFrame& frame, std::uint16_t min_skip,
                                                   Source source, std::uint64_t receive_ns) {
  const FrameHeaderView h = frame.header();
  const std::uint64_t first = h.first_seq();
  const std::uint64_t end = h.end_seq();
  std::uint16_t skip = min_skip;
  if (next_emit_ != 0) {
    if (end <= next_emit_) return Emitted::kNotNeeded;  // already delivered (a retransmission overlapping, or trimmed by a snapshot)
    if (next_emit_ > first) skip = std::max(skip, static_cast<std::uint16_t>(next_emit_ - first));
  }
  if (skip >= h.message_count()) return Emitted::kNotNeeded;
  if (!write_frame(line, frame, skip, receive_ns)) return Emitted::kNoRoom;
  counters.frames.add();
  const std::uint64_t delivered = h.message_count() - skip;
  counters.messages.add(delivered);
  if (source == Source::kRecovered) counters.recovered.add(delivered);
  if (source == Source::kLive) {
    const std::uint64_t send = h.send_time_ns();
    counters.latency.record(receive_ns > send ? receive_ns - send : 0);
  }
  next_emit_ = end;
  counters.expected.set(next_emit_);
  return Emitted::kWritten;
}

void SubscriberChannel::emit_live(Line line, const ParsedFrame& frame, std::uint16_t skip) {
  if (emit(static_cast<std::uint8_t>(line), frame, skip, Source::kLive, receive_time_ns) != Emitted::kNoRoom) return;
  stats_.ring_full_drops.add();
  const std::uint64_t from = undelivered_from(frame, skip);
  hole(from, frame.header().end_seq() - from);
}

void SubscriberChannel::emit_or_report(const Pending& held) {
  const ParsedFrame frame(held.frame);
  if (emit(static_cast<std::uint8_t>(held.line), frame, 0, Source::kHeld, held.receive_ns) != Emitted::kNoRoom) return;
  stats_.ring_full_drops.add();
  unrecoverable(undelivered_from(frame, 0), frame.header().end_seq());
}

void SubscriberChannel::deliver(Line line, const ParsedFrame& frame, std::uint16_t skip) {
  if (!recovering()) {
    emit_live(line, frame, skip);
    return;
  }
  if (held_frames_ >= client_->config().buffer_frames) {
    overflowed();
    emit_live(line, frame, skip);
    return;
  }
  Pending p;
  p.line = line;
  p.receive_ns = receive_time_ns;
  p.frame.assign(frame.bytes().begin(), frame.bytes().end());
  pending_.push_back(std::move(p));
  ++held_frames_;
  counters.held.set(held_frames_);
}

void SubscriberChannel::unrecoverable(std::uint64_t from, std::uint64_t end) {
  if (next_emit_ > from) from = next_emit_;
  if (end <= from) return;
  counters.unrecoverable.add(end - from);
  next_emit_ = end;
  counters.expected.set(next_emit_);
  write_or_owe({.is_gap = true, .from = from, .end = end});
}

void SubscriberChannel::hole(std::uint64_t from, std::uint64_t count) {
  if (client_ == nullptr) {
    unrecoverable(from, from + count);
    return;
  }
  if (!recovering()) need(now_ns);
  Pending p;
  p.is_gap = true;
  p.from = from;
  p.count = count;
  pending_.push_back(std::move(p));
}

void SubscriberChannel::gap(std::uint64_t from, std::uint64_t count) {
  counters.gaps.add();
  hole(from, count);
}

void SubscriberChannel::session_change(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) {
  if (old_session != 0) counters.session_changes.add();
  // What the old session still needed can never come: reported, and its held frames delivered.
  flush_pending();
  counters.session.set(new_session);
  counters.expected.set(next_seq);
  outstanding_ = 0;
  attempts_ = 0;
  retry_at_ = 0;
  session_ = new_session;
  if (client_ != nullptr && next_seq != 1) {
    mode_ = Mode::kSnapshot;  // a late join or a restart seen mid-stream: state first
    next_emit_ = 0;
    need(now_ns);
  } else {
    mode_ = Mode::kLive;
    next_emit_ = next_seq;
  }
  write_or_owe({.old_session = old_session, .new_session = new_session, .next_seq = next_seq});
}

void SubscriberChannel::need(std::uint64_t since) { need_since_ = since == 0 ? 1 : since; }

std::uint64_t SubscriberChannel::waiting_since() const {
  if (client_->connected()) return outstanding_ != 0 ? sent_at_ : need_since_;
  // Failed, or a renewal being made: counted from the first failure not yet
  // cured by a reply, so a path that never works (a wrong key, a gateway
  // gone) cannot hold the channel through renewal after renewal, each of
  // which connects, asks, and fails again.
  return failed_seen_;  // 0: a handshake with no failure behind it, bounded by buffer_frames; the clock starts at the connection
}

bool SubscriberChannel::waited_too_long() const {
  const std::uint64_t since = waiting_since();
  return since != 0 && now_ns > since && now_ns - since > client_->config().request_timeout_ns;
}

void SubscriberChannel::report_pending_gaps() {
  std::erase_if(pending_, [&](const Pending& p) {
    if (!p.is_gap) return false;
    unrecoverable(p.from, p.from + p.count);
    return true;
  });
}

bool SubscriberChannel::ask_again() {
  if (outstanding_ == 0 || attempts_ >= client_->config().request_attempts || !client_->connected()) return false;
  client_->counters().request_timeouts.add();
  outstanding_ = 0;  // pump() asks again (from what is still missing) with a new id
  need(now_ns);      // the new request's own timeout, not the wait before the first
  return true;
}

void SubscriberChannel::give_up() {
  counters.recovery_failures.add();
  failed_seen_ = 0;  // a later need gets its own wait
  attempts_ = 0;
  outstanding_ = 0;
  retry_at_ = 0;
  flush_pending();
}

void SubscriberChannel::flush_pending() {
  mode_ = Mode::kLive;
  std::deque<Pending> items;
  items.swap(pending_);
  held_frames_ = 0;
  counters.held.set(0);
  for (const Pending& p : items) {
    if (p.is_gap) {
      unrecoverable(p.from, p.from + p.count);
    } else {
      emit_or_report(p);
    }
  }
}

void SubscriberChannel::overflowed() {
  counters.buffer_overflows.add();
  give_up();
}

void SubscriberChannel::on_reply(const recovery::Reply& r) {
  const bool snapshot = r.kind == recovery::ReplyKind::kSnapshot;
  const std::uint64_t id = snapshot ? r.snapshot.request_id : r.retransmit.request_id;
  if (outstanding_ == 0 || id != outstanding_) {
    client_->counters().stale_replies.add();
    return;
  }
  attempts_ = 0;
  failed_seen_ = 0;  // answered: the path works again
  const Status status = snapshot ? r.snapshot.status : r.retransmit.status;
  if (status == Status::kThrottled) {
    counters.throttled.add();
    outstanding_ = 0;
    retry_at_ = now_ns + std::max<std::uint64_t>(snapshot ? r.snapshot.retry_after_ns : r.retransmit.retry_after_ns, 1000);
    need(now_ns);
    return;
  }
  if (snapshot) {
    on_snapshot_reply(r);
  } else {
    on_retransmit_reply(r);
  }
}

void SubscriberChannel::on_snapshot_reply(const recovery::Reply& r) {
  if (r.snapshot.status != Status::kOk) {
    give_up();
    return;
  }
  for (std::size_t i = 0; i < r.frame_count; ++i) {
    const auto parsed = parse_frame(r.frames[i]);
    if (!parsed.ok() || parsed->header().channel() != config.id || (parsed->header().flags() & flags::kSnapshot) == 0) {
      client_->counters().malformed_replies.add();
      continue;
    }
    if (!write_frame(kRecoveryLine, *parsed, 0, receive_time_ns)) {
      if (!snapshot_torn_) stats_.ring_full_drops.add();
      snapshot_torn_ = true;
      continue;
    }
    counters.snapshot_messages.add(parsed->message_count());
  }
  if (!r.snapshot.last) {
    sent_at_ = now_ns;  // more parts follow
    return;
  }
  outstanding_ = 0;
  if (snapshot_torn_) {
    // The app missed parts of it: asked for again whole, once fromEngine has had time to drain;
    // request_timeout_ns (from need_since_, not renewed here) bounds the retries.
    snapshot_torn_ = false;
    retry_at_ = now_ns + kFullRingRetryNs;
    return;
  }
  counters.snapshots.add();
  mode_ = Mode::kLive;
  // Ranges the snapshot covers are over (reported lost), the rest is still wanted.
  const std::uint64_t resume = r.snapshot.last_sequence + 1;
  std::erase_if(pending_, [&](const Pending& p) {
    if (!p.is_gap || p.from + p.count > resume) return false;
    counters.unrecoverable.add(p.count);
    return true;
  });
  next_emit_ = std::max(next_emit_, resume);
  counters.expected.set(next_emit_);
  need(now_ns);
}

void SubscriberChannel::on_retransmit_reply(const recovery::Reply& r) {
  outstanding_ = 0;
  const Status status = r.retransmit.status;
  if (status == Status::kOk) {
    counters.recovery_replies.add();
    const std::uint64_t before = next_emit_;
    bool no_room = false;
    for (std::size_t i = 0; i < r.frame_count && !no_room; ++i) {
      const auto parsed = parse_frame(r.frames[i]);
      if (!parsed.ok() || parsed->header().channel() != config.id || parsed->header().session() != session_ ||
          parsed->header().is_control()) {
        client_->counters().malformed_replies.add();
        continue;
      }
      if (next_emit_ != 0 && parsed->header().first_seq() > next_emit_) break;  // would leave a hole: ask again
      no_room = emit(kRecoveryLine, *parsed, 0, Source::kRecovered, receive_time_ns) == Emitted::kNoRoom;
    }
    if (next_emit_ != before) need(now_ns);  // progress renews the timeout; a full fromEngine alone does not
    if (no_room) {
      stats_.ring_full_drops.add();
      retry_at_ = now_ns + kFullRingRetryNs;  // the rest is asked for again once the app has read some
      return;
    }
    if (next_emit_ == before) give_up();  // no progress: never loop on the same range
    return;
  }
  need(now_ns);
  if (status == Status::kRangeGone || status == Status::kUnknownSession) {
    counters.range_gone.add();
    report_pending_gaps();
    mode_ = Mode::kSnapshot;
    return;
  }
  give_up();  // NOT_ENTITLED, INVALID_RANGE, UNKNOWN_CHANNEL, MALFORMED: nothing to wait for
}

template <class Q>
void SubscriberChannel::ask(Q& q) {
  q.request_id = client_->next_request_id();
  if (!client_->send(q)) return;  // no send slot: pump() tries again
  counters.recovery_requests.add();
  outstanding_ = q.request_id;
  sent_at_ = now_ns;
  ++attempts_;
}

void SubscriberChannel::pump() {
  settle();
  if (client_ == nullptr) return;
  for (;;) {
    if (!recovering()) return;
    if (client_->failed() && failed_seen_ == 0) failed_seen_ = now_ns == 0 ? 1 : now_ns;
    if (waited_too_long() && !ask_again()) {
      give_up();
      return;
    }
    if (client_->failed()) return;  // the renewal's connection asks again for what is still queued
    if (outstanding_ != 0) return;
    if (mode_ == Mode::kSnapshot) {
      if (now_ns < retry_at_ || !client_->connected()) return;
      recovery::SnapshotRequest q;
      q.channel = config.id;
      snapshot_torn_ = false;
      ask(q);
      return;
    }
    Pending& head = pending_.front();
    if (!head.is_gap) {
      // fromEngine full: it stays at the head and is tried again; waited_too_long() bounds that.
      if (emit(static_cast<std::uint8_t>(head.line), ParsedFrame(head.frame), 0, Source::kHeld, head.receive_ns) ==
          Emitted::kNoRoom) {
        return;
      }
      pending_.pop_front();
      --held_frames_;
      counters.held.set(held_frames_);
      continue;
    }
    const std::uint64_t end = head.from + head.count;
    const std::uint64_t from = std::max(next_emit_, head.from);
    if (from >= end) {
      pending_.pop_front();
      continue;
    }
    if (now_ns < retry_at_ || !client_->connected()) return;
    recovery::RetransmitRequest q;
    q.channel = config.id;
    q.session = session_;
    q.from_sequence = from;
    q.count = static_cast<std::uint32_t>(std::min<std::uint64_t>(end - from, client_->config().max_request_messages));
    ask(q);
    return;
  }
}

void SubscriberChannel::set_client(RecoveryClient* client) {
  client_ = client;
  outstanding_ = 0;  // its reply would come on the old QP, which is gone
  attempts_ = 0;
  retry_at_ = 0;  // failed_seen_ stays: the new connection has proved nothing yet
  snapshot_torn_ = false;
}

void SubscriberChannel::on_connected(std::uint64_t now) {
  if (recovering() && outstanding_ == 0) need(now);
}

std::uint64_t SubscriberChannel::deadline() const {
  // Owed records are written once the app has read some: nothing else may wake the engine for them.
  const std::uint64_t owed = owed_.empty() ? 0 : now_ns + kFullRingRetryNs;
  if (!recovering()) return owed;
  std::uint64_t due = retry_at_;
  if (retry_at_ <= now_ns) {
    const std::uint64_t since = waiting_since();
    // Re-check soon while waiting for a connection, a renewal, a send slot or room in fromEngine.
    due = now_ns + 1'000'000;
    if (since != 0) due = std::min(due, since + client_->config().request_timeout_ns + 1);
  }
  return owed == 0 ? due : std::min(owed, due);
}

}  // namespace qpgate::feed
