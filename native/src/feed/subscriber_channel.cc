#include "feed/subscriber_channel.h"

#include <algorithm>
#include <cstring>

#include "engine/record_types.h"
#include "feed/feed_records.h"

namespace qpgate::feed {

using recovery::Status;

SubscriberChannel::SubscriberChannel(const SubscriberChannelConfig& c, SubscriberChannelCounters& channel_counters,
                                     SubscriberStats& all, std::uint32_t subscriber_id, RecoveryClient* client)
    : config(c), arbiter(c.arbiter), counters(channel_counters), stats_(all), subscriber_(subscriber_id),
      client_(client) {}

std::uint8_t* SubscriberChannel::claim(std::int32_t type, std::int32_t length) {
  std::byte* dst = out->claim(type, length);
  if (dst == nullptr) {
    stats_.ring_full_drops.add();
    return nullptr;
  }
  auto* p = reinterpret_cast<std::uint8_t*>(dst);
  store_le<std::uint32_t>(p + 0, subscriber_);  // every feed record starts with subscriber id and channel
  store_le<std::uint16_t>(p + 4, config.id);
  store_le<std::uint16_t>(p + 6, 0);
  return p;
}

bool SubscriberChannel::write_frame(std::uint8_t line, const ParsedFrame& frame, std::uint16_t skip,
                                    std::uint64_t receive_ns) {
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

void SubscriberChannel::emit(std::uint8_t line, const ParsedFrame& frame, std::uint16_t min_skip, Source source,
                             std::uint64_t receive_ns) {
  const FrameHeaderView h = frame.header();
  const std::uint64_t first = h.first_seq();
  const std::uint64_t end = h.end_seq();
  std::uint16_t skip = min_skip;
  if (next_emit_ != 0) {
    if (end <= next_emit_) return;  // already delivered (a retransmission overlapping, or trimmed by a snapshot)
    if (next_emit_ > first) skip = std::max(skip, static_cast<std::uint16_t>(next_emit_ - first));
  }
  if (skip >= h.message_count()) return;
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
  write_frame(line, frame, skip, receive_ns);
}

void SubscriberChannel::deliver(Line line, const ParsedFrame& frame, std::uint16_t skip) {
  if (!recovering()) {
    emit(static_cast<std::uint8_t>(line), frame, skip, Source::kLive, receive_time_ns);
    return;
  }
  if (held_frames_ >= client_->config().buffer_frames) {
    overflowed();
    emit(static_cast<std::uint8_t>(line), frame, skip, Source::kLive, receive_time_ns);
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
  std::uint8_t* p = claim(records::kFeedGap, records::kGapRecordBytes);
  if (p == nullptr) return;
  store_le<std::uint64_t>(p + 8, from);
  store_le<std::uint64_t>(p + 16, end - from);
}

void SubscriberChannel::gap(std::uint64_t from, std::uint64_t count) {
  counters.gaps.add();
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

void SubscriberChannel::session_change(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) {
  if (old_session != 0) counters.session_changes.add();
  // What the old session still needed can never come: reported, and its held frames delivered.
  flush_pending();
  counters.session.set(new_session);
  counters.expected.set(next_seq);
  outstanding_ = 0;
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
  std::uint8_t* p = claim(records::kFeedSession, records::kSessionRecordBytes);
  if (p == nullptr) return;
  store_le<std::uint32_t>(p + 8, old_session);
  store_le<std::uint32_t>(p + 12, new_session);
  store_le<std::uint64_t>(p + 16, next_seq);
}

void SubscriberChannel::need(std::uint64_t since) { need_since_ = since == 0 ? 1 : since; }

bool SubscriberChannel::waited_too_long() const {
  if (outstanding_ == 0 && client_->connecting()) return false;  // bounded by buffer_frames; the clock starts at the connection
  const std::uint64_t since = outstanding_ != 0 ? sent_at_ : need_since_;
  return since != 0 && now_ns > since && now_ns - since > client_->config().request_timeout_ns;
}

void SubscriberChannel::report_pending_gaps() {
  std::erase_if(pending_, [&](const Pending& p) {
    if (!p.is_gap) return false;
    unrecoverable(p.from, p.from + p.count);
    return true;
  });
}

void SubscriberChannel::give_up() {
  counters.recovery_failures.add();
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
      emit(static_cast<std::uint8_t>(p.line), ParsedFrame(p.frame), 0, Source::kHeld, p.receive_ns);
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
  const Status status = snapshot ? r.snapshot.status : r.retransmit.status;
  if (status == Status::kThrottled) {
    counters.throttled.add();
    outstanding_ = 0;
    retry_at_ = now_ns + std::max<std::uint64_t>(snapshot ? r.snapshot.retry_after_ns : r.retransmit.retry_after_ns, 1000);
    need(now_ns);
    return;
  }
  if (snapshot) {
    if (status != Status::kOk) {
      give_up();
      return;
    }
    for (std::size_t i = 0; i < r.frame_count; ++i) {
      const auto parsed = parse_frame(r.frames[i]);
      if (!parsed.ok() || parsed->header().channel() != config.id || (parsed->header().flags() & flags::kSnapshot) == 0) {
        client_->counters().malformed_replies.add();
        continue;
      }
      counters.snapshot_messages.add(parsed->message_count());
      write_frame(kRecoveryLine, *parsed, 0, receive_time_ns);
    }
    if (!r.snapshot.last) {
      sent_at_ = now_ns;  // more parts follow
      return;
    }
    outstanding_ = 0;
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
    return;
  }
  outstanding_ = 0;
  need(now_ns);
  if (status == Status::kOk) {
    counters.recovery_replies.add();
    const std::uint64_t before = next_emit_;
    for (std::size_t i = 0; i < r.frame_count; ++i) {
      const auto parsed = parse_frame(r.frames[i]);
      if (!parsed.ok() || parsed->header().channel() != config.id || parsed->header().session() != session_ ||
          parsed->header().is_control()) {
        client_->counters().malformed_replies.add();
        continue;
      }
      if (next_emit_ != 0 && parsed->header().first_seq() > next_emit_) break;  // would leave a hole: ask again
      emit(kRecoveryLine, *parsed, 0, Source::kRecovered, receive_time_ns);
    }
    if (next_emit_ == before) give_up();  // no progress: never loop on the same range
    return;
  }
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
}

void SubscriberChannel::pump() {
  if (client_ == nullptr) return;
  for (;;) {
    if (!recovering()) return;
    if (client_->failed() || waited_too_long()) {
      give_up();
      return;
    }
    if (outstanding_ != 0) return;
    if (mode_ == Mode::kSnapshot) {
      if (now_ns < retry_at_ || !client_->connected()) return;
      recovery::SnapshotRequest q;
      q.channel = config.id;
      ask(q);
      return;
    }
    Pending& head = pending_.front();
    if (!head.is_gap) {
      const Pending p = std::move(head);
      pending_.pop_front();
      --held_frames_;
      counters.held.set(held_frames_);
      emit(static_cast<std::uint8_t>(p.line), ParsedFrame(p.frame), 0, Source::kHeld, p.receive_ns);
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
  retry_at_ = 0;
}

void SubscriberChannel::on_connected(std::uint64_t now) {
  if (recovering() && outstanding_ == 0) need(now);
}

std::uint64_t SubscriberChannel::deadline() const {
  if (!recovering()) return 0;
  if (retry_at_ > now_ns) return retry_at_;
  const std::uint64_t since = outstanding_ != 0 ? sent_at_ : need_since_;
  // Re-check soon while waiting for a connection or a send slot.
  return std::min(since + client_->config().request_timeout_ns + 1, now_ns + 1'000'000);
}

}  // namespace qpgate::feed
