#include "feed/recovery_service.h"

#include <algorithm>
#include <array>

#include "feed/publisher.h"

namespace qpgate::feed {

using recovery::Status;

std::string validate(const RecoveryLimits& l) {
  if (l.max_messages == 0) return "maxMessages must be at least 1";
  if (l.messages_per_second == 0 || l.burst_messages == 0) return "messagesPerSecond and burstMessages must be at least 1";
  if (l.reply_bytes < 2 * kMaxFrameBytes || l.reply_bytes > (1u << 24)) {
    return "replyBytes must be " + std::to_string(2 * kMaxFrameBytes) + ".." + std::to_string(1u << 24);
  }
  if (l.send_slots < 2 || l.send_slots > 1024 || l.recv_slots < 1 || l.recv_slots > 1024) {
    return "sendSlots must be 2..1024 and recvSlots 1..1024";
  }
  if (l.request_bytes < 64 || l.request_bytes > 65536) return "requestBytes must be 64..65536";
  return "";
}

struct RecoveryService::Session {
  Session(const RecoverySessionConfig& c, std::unique_ptr<RcEndpoint> e, std::uint64_t now_ns)
      : config(c), ep(std::move(e)), bucket(c.limits.messages_per_second, c.limits.burst_messages, now_ns),
        counters(std::make_shared<RecoverySessionCounters>()) {}

  bool entitled(std::uint32_t channel) const {
    return std::find(config.channels.begin(), config.channels.end(), channel) != config.channels.end();
  }
  void count_reply(Status st, std::size_t bytes) {
    counters->replies.add();
    counters->by_status[static_cast<std::size_t>(st)].add();
    counters->bytes_sent.add(bytes);
  }

  RecoverySessionConfig config;
  std::unique_ptr<RcEndpoint> ep;
  TokenBucket bucket;
  std::shared_ptr<RecoverySessionCounters> counters;
  // Requests received but not served yet: a snapshot is still streaming, or no send slot was free.
  std::deque<RcEndpoint::Completion> waiting;
  // When to look for a migration to re-arm after (RcEndpoint::rearm), every verbs::kRcCheckIntervalNs.
  std::uint64_t next_rearm_check_ns = 0;
  // The snapshot being streamed.
  bool streaming = false;
  SnapshotFrames snap;
  std::size_t next_frame = 0;
  recovery::SnapshotReplyHead snap_head;
  std::vector<std::span<const std::uint8_t>> batch;
};

RecoveryService::RecoveryService(FindPublisher find) : find_(std::move(find)) {}
RecoveryService::~RecoveryService() = default;

verbs::Result<verbs::RcPeer> RecoveryService::open(verbs::Device& device, const RecoverySessionConfig& config,
                                                   std::uint64_t now_ns) {
  if (config.session == 0) return verbs::Error{EINVAL, "recovery session: the session id must be > 0"};
  if (std::string e = validate(config.limits); !e.empty()) return verbs::Error{EINVAL, "recovery session: " + e};
  for (const auto& s : sessions_) {
    if (s->config.session == config.session) {
      return verbs::Error{EEXIST, "recovery session " + std::to_string(config.session) + " is already open"};
    }
  }
  RcEndpointConfig ec;
  ec.recv_slots = config.limits.recv_slots;
  ec.recv_bytes = config.limits.request_bytes;
  ec.send_slots = config.limits.send_slots;
  ec.send_bytes = config.limits.reply_bytes;
  auto ep = RcEndpoint::create(device, ec);
  if (!ep.ok()) return verbs::Error{ep.error().code, "recovery session: " + ep.error().message};
  verbs::RcParams params;
  params.mtu = config.remote.mtu;
  if (verbs::Status s = (*ep)->connect(config.remote, params); !s.ok()) {
    return verbs::Error{s.code(), "recovery session: " + std::string(s.message())};
  }
  const verbs::RcPeer local = (*ep)->local();
  sessions_.push_back(std::make_unique<Session>(config, std::move(ep).value(), now_ns));
  return local;
}

bool RecoveryService::close(std::uint32_t session) {
  auto it = std::find_if(sessions_.begin(), sessions_.end(), [&](const auto& s) { return s->config.session == session; });
  if (it == sessions_.end()) return false;
  (*it)->ep->fail();  // QP → ERR: the subscriber's next request fails instead of hanging
  sessions_.erase(it);
  return true;
}

void RecoveryService::close_publisher(std::uint32_t publisher) {
  std::erase_if(sessions_, [&](const auto& s) { return s->config.publisher == publisher; });
}

std::vector<RecoverySessionInfo> RecoveryService::sessions() const {
  std::vector<RecoverySessionInfo> out;
  for (const auto& s : sessions_) {
    out.push_back(RecoverySessionInfo{s->config.session, s->config.publisher, s->config.device, s->ep->qpn(),
                                      s->ep->state(), s->config.channels, s->counters, s->ep->path()});
  }
  return out;
}

int RecoveryService::do_work(std::uint64_t now_ns) {
  int work = 0;
  std::array<RcEndpoint::Completion, 16> done{};
  for (auto& sp : sessions_) {
    Session& s = *sp;
    const std::size_t n = s.ep->poll(done);
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i].kind == RcEndpoint::Completion::Kind::kReceived) {
        s.waiting.push_back(done[i]);
      } else if (done[i].kind == RcEndpoint::Completion::Kind::kError) {
        s.counters->errors.add();
      }
    }
    work += static_cast<int>(n);
    if (s.ep->failed()) continue;
    const std::uint64_t timeout = s.config.limits.silence_timeout_ns;
    if (timeout != 0 && s.counters->report.reports.get() != 0 && now_ns > s.counters->report.last_report_ns.get() + timeout) {
      s.counters->silenced.set(1);
      s.ep->fail();  // the subscriber went away without closing: free its name
      continue;
    }
    if (now_ns >= s.next_rearm_check_ns) {
      s.next_rearm_check_ns = now_ns + verbs::kRcCheckIntervalNs;
      // A failure leaves it MIGRATED: it ends as it would have without the re-arm.
      if (const verbs::Result<bool> r = s.ep->rearm(); r.ok() && *r) s.counters->path_rearms.add();
    }
    if (s.streaming && stream_snapshot(s)) ++work;
    // One reply per request needs one send slot (a snapshot streams on).
    while (!s.streaming && !s.waiting.empty() && s.ep->free_send_slots() > 0) {
      const RcEndpoint::Completion c = s.waiting.front();
      s.waiting.pop_front();
      serve(s, c.bytes, now_ns);
      s.ep->repost(c.slot);
      ++work;
    }
  }
  return work;
}

void RecoveryService::send_error(Session& s, Status status, std::string_view message) {
  const auto out = s.ep->send_buffer();
  const std::size_t n = recovery::encode_error_reply(status, message, out);
  if (n != 0 && s.ep->post_send(n)) s.count_reply(status, n);
}

void RecoveryService::serve(Session& s, std::span<const std::uint8_t> bytes, std::uint64_t now_ns) {
  s.counters->requests.add();
  recovery::Request q;
  const char* error = nullptr;
  if (!recovery::decode_request(bytes, q, &error)) {
    send_error(s, Status::kMalformed, error);
    return;
  }
  if (q.kind == recovery::RequestKind::kReport) {
    RecoverySessionCounters& c = *s.counters;
    c.report.reports.add();
    c.report.last_report_ns.set(now_ns);
    c.report.queued.set(q.report.queued);
    c.report.dropped.set(q.report.dropped);
    c.report.conflated.set(q.report.conflated);
    c.report.gaps.set(q.report.gaps);
    c.report.unrecoverable.set(q.report.unrecoverable);
    c.report.ring_full_drops.set(q.report.ring_full_drops);
    c.report.other_session_frames.set(q.report.other_session_frames);
  } else if (q.kind == recovery::RequestKind::kRetransmit) {
    s.counters->retransmit_requests.add();
    retransmit(s, q.retransmit, now_ns);
  } else {
    s.counters->snapshot_requests.add();
    snapshot(s, q.snapshot, now_ns);
  }
}

void RecoveryService::retransmit(Session& s, const recovery::RetransmitRequest& q, std::uint64_t now_ns) {
  recovery::RetransmitReplyHead h;
  h.request_id = q.request_id;
  h.channel = q.channel;
  h.status = Status::kOk;
  const RangeLookup* found = nullptr;
  RangeLookup lookup;
  const std::uint32_t capped = std::min(q.count, s.config.limits.max_messages);
  Publisher* pub = find_(s.config.publisher);
  const RetransmitRing* ring = pub == nullptr ? nullptr : pub->ring(static_cast<std::uint16_t>(q.channel));
  if (!s.entitled(q.channel)) {
    h.status = Status::kNotEntitled;
  } else if (pub == nullptr) {
    h.status = Status::kUnknownSession;
  } else if (ring == nullptr || q.channel > 0xffff) {
    h.status = Status::kUnknownChannel;
  } else {
    h.session = pub->session();
    h.oldest_sequence = ring->oldest_seq();
    h.next_sequence = ring->next_seq();
    if (q.session != pub->session()) {
      h.status = Status::kUnknownSession;
    } else if (q.count == 0 || q.from_sequence == 0 || q.from_sequence >= std::max<std::uint64_t>(ring->next_seq(), 1)) {
      h.status = Status::kInvalidRange;
    } else if (const std::uint64_t wait = s.bucket.take(capped, now_ns); wait != 0) {
      h.status = Status::kThrottled;
      h.retry_after_ns = wait;
    } else {
      lookup = ring->lookup(q.from_sequence, capped);
      h.status = lookup.status == RangeStatus::kOk ? Status::kOk
                 : lookup.status == RangeStatus::kRangeGone ? Status::kRangeGone
                                                            : Status::kInvalidRange;
      found = &lookup;
    }
  }
  // Whole frames, as many as one reply holds.
  s.batch.clear();
  if (found != nullptr && h.status == Status::kOk) {
    std::size_t room = s.config.limits.reply_bytes - recovery::kReplyOverheadBytes;
    for (const auto& f : found->frames) {
      const std::size_t cost = recovery::frame_cost(f.size());
      if (cost > room) break;
      room -= cost;
      s.batch.push_back(f);
    }
  }
  const auto out = s.ep->send_buffer();
  const std::size_t n = recovery::encode_retransmit_reply(h, s.batch, flags::kRetransmission, out);
  if (n == 0 || !s.ep->post_send(n)) {
    s.counters->errors.add();
    return;
  }
  s.count_reply(h.status, n);
  s.counters->frames_sent.add(s.batch.size());
}

void RecoveryService::snapshot(Session& s, const recovery::SnapshotRequest& q, std::uint64_t now_ns) {
  recovery::SnapshotReplyHead h;
  h.request_id = q.request_id;
  h.channel = q.channel;
  h.last = true;
  Publisher* pub = find_(s.config.publisher);
  const SnapshotStore* store = pub == nullptr ? nullptr : pub->snapshot(static_cast<std::uint16_t>(q.channel));
  if (!s.entitled(q.channel)) {
    h.status = Status::kNotEntitled;
  } else if (pub == nullptr) {
    h.status = Status::kUnknownSession;
  } else if (store == nullptr || q.channel > 0xffff) {
    h.status = Status::kUnknownChannel;
  } else if (const std::uint64_t wait = s.bucket.take(std::max<std::size_t>(store->slots_used(), 1), now_ns); wait != 0) {
    h.session = pub->session();
    h.status = Status::kThrottled;
    h.retry_after_ns = wait;
  } else {
    // Captured now, in one go: one consistent state as of last_sequence.
    build_snapshot_frames(*store, static_cast<std::uint16_t>(q.channel), pub->session(), kMaxFrameBytes, s.snap);
    h.status = Status::kOk;
    h.session = pub->session();
    h.last_sequence = s.snap.last_sequence;
    h.last = false;
    s.snap_head = h;
    s.next_frame = 0;
    s.streaming = true;
    stream_snapshot(s);
    return;
  }
  const auto out = s.ep->send_buffer();
  const std::size_t n = recovery::encode_snapshot_reply(h, {}, out);
  if (n == 0 || !s.ep->post_send(n)) {
    s.counters->errors.add();
    return;
  }
  s.count_reply(h.status, n);
}

bool RecoveryService::stream_snapshot(Session& s) {
  bool sent = false;
  while (s.streaming && s.ep->free_send_slots() > 0) {
    s.batch.clear();
    std::size_t room = s.config.limits.reply_bytes - recovery::kReplyOverheadBytes;
    while (s.next_frame < s.snap.frame_count()) {
      const auto f = s.snap.frame(s.next_frame);
      const std::size_t cost = recovery::frame_cost(f.size());
      if (cost > room) break;
      room -= cost;
      s.batch.push_back(f);
      ++s.next_frame;
    }
    s.snap_head.last = s.next_frame == s.snap.frame_count();
    const auto out = s.ep->send_buffer();
    const std::size_t n = recovery::encode_snapshot_reply(s.snap_head, s.batch, out);
    if (n == 0 || !s.ep->post_send(n)) {
      s.counters->errors.add();
      s.streaming = false;
      return sent;
    }
    sent = true;
    s.counters->frames_sent.add(s.batch.size());
    s.counters->bytes_sent.add(n);
    ++s.snap_head.part;
    if (s.snap_head.last) {
      s.streaming = false;
      s.counters->snapshots_sent.add();
      s.count_reply(Status::kOk, 0);
    }
  }
  return sent;
}

}  // namespace qpgate::feed
