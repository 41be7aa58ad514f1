#include "feed/subscriber.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "engine/record_types.h"
#include "feed/feed_records.h"
#include "feed/subscriber_channel.h"

namespace qpgate::feed {

std::string validate(const SubscriberConfig& c) {
  if (c.channels.empty()) return "a subscriber needs at least one channel";
  if (!limits::max_frame_bytes.holds(c.max_frame_bytes)) return limits::max_frame_bytes.refusal(c.max_frame_bytes);
  if (!limits::recv_slots.holds(c.recv_slots)) return limits::recv_slots.refusal(c.recv_slots);
  for (std::size_t i = 0; i < c.channels.size(); ++i) {
    const auto& ch = c.channels[i];
    const std::string name = "channel " + std::to_string(ch.id);
    if (!verbs::ipv4_is_multicast(ch.group_a)) return name + ": groupA must be an IPv4 multicast address";
    if (ch.group_b != 0 && !verbs::ipv4_is_multicast(ch.group_b)) return name + ": groupB must be an IPv4 multicast address";
    if (ch.group_b == ch.group_a) return name + ": groupB must differ from groupA";
    for (std::size_t j = 0; j < i; ++j) {
      const auto& o = c.channels[j];
      if (o.id == ch.id) return name + " is subscribed twice";
      for (std::uint32_t g : {ch.group_a, ch.group_b}) {
        if (g != 0 && (g == o.group_a || g == o.group_b)) return name + ": a group is shared with channel " + std::to_string(o.id);
      }
    }
  }
  if (c.recovery.enabled) {
    const auto& r = c.recovery;
    if (r.reply_bytes < 2 * kMaxFrameBytes || r.reply_bytes > (1u << 24)) return "recovery.replyBytes must be 8192..16777216";
    if (r.recv_slots < 1 || r.recv_slots > 1024) return "recovery.recvSlots must be 1..1024";
    if (r.max_request_messages == 0) return "recovery.maxRequestMessages must be at least 1";
    if (r.buffer_frames == 0) return "recovery.bufferFrames must be at least 1";
    if (r.request_timeout_ns < 1'000'000) return "recovery.requestTimeoutMs must be at least 1";
    if (r.request_attempts < 1) return "recovery.requestAttempts must be at least 1";
  }
  return "";
}

verbs::Result<std::unique_ptr<Subscriber>> Subscriber::create(verbs::Device& device, const SubscriberConfig& config,
                                                              verbs::Device* alternate) {
  if (std::string e = validate(config); !e.empty()) return verbs::Error{EINVAL, "feed subscriber: " + e};
  if (alternate == &device) return verbs::Error{EINVAL, "feed subscriber: the alternate device is the device itself"};
  std::unique_ptr<Subscriber> s(new Subscriber(config));
  s->devices_ = {&device, alternate};
  if (config.recovery.enabled) {
    auto rc = RecoveryClient::create(device, config.recovery);
    if (!rc.ok()) return verbs::Error{rc.error().code, "feed subscriber: recovery connection: " + rc.error().message};
    s->recovery_ = std::move(rc).value();
  }
  s->make_channels();
  s->slot_bytes_ = (kGrhBytes + config.max_frame_bytes + 63) & ~std::size_t{63};
  if (verbs::Status st = s->add_receiver(device, true, alternate == nullptr); !st.ok()) {
    return verbs::Error{st.code(), "feed subscriber: " + std::string(st.message())};
  }
  if (alternate != nullptr) {
    if (verbs::Status st = s->add_receiver(*alternate, false, true); !st.ok()) {
      return verbs::Error{st.code(), "feed subscriber: the alternate device: " + std::string(st.message())};
    }
  }
  return s;
}

// A UD QP on `device`, its receive slots posted, attached to the channels' A
// groups (line_a) and B groups (line_b).
verbs::Status Subscriber::add_receiver(verbs::Device& device, bool line_a, bool line_b) {
  UdEndpointConfig ec;
  ec.buffer_bytes = slot_bytes_ * config_.recv_slots;
  ec.send_wr = 1;
  ec.recv_wr = config_.recv_slots;
  ec.qkey = config_.qkey;
  auto ep = make_ud_endpoint(device, ec);
  if (!ep.ok()) return ep.error();
  Receiver& r = receivers_.emplace_back();
  r.ep = std::move(ep).value();
  r.to_repost.reserve(config_.recv_slots);
  r.wrs.resize(config_.recv_slots);
  r.sges.resize(config_.recv_slots);
  for (std::uint32_t i = 0; i < config_.recv_slots; ++i) r.to_repost.push_back(i);
  post_receives(r);
  for (const auto& c : channels_) {
    for (std::uint32_t g : {line_a ? c->config.group_a : 0, line_b ? c->config.group_b : 0}) {
      if (g == 0) continue;
      if (verbs::Status st = r.ep->qp->attach_mcast(group_gid(g)); !st.ok()) {
        return verbs::Error{st.error().code, "attach_mcast(" + verbs::ipv4_to_string(g) + "): " + st.error().message};
      }
    }
  }
  return {};
}

Subscriber::Subscriber(const SubscriberConfig& config)
    : config_(config), stats_(std::make_shared<SubscriberStats>(config.channels.size())) {}

Subscriber::~Subscriber() = default;  // each endpoint destroys its QP (leaving the groups) first

void Subscriber::make_channels() {
  for (std::size_t i = 0; i < config_.channels.size(); ++i) {
    stats_->channels[i].id = config_.channels[i].id;
    channels_.push_back(
        std::make_unique<Channel>(config_.channels[i], stats_->channels[i], *stats_, config_.id, recovery_.get()));
  }
}

void Subscriber::report(std::uint64_t now_ns) {
  const std::uint64_t interval = config_.recovery.report_interval_ns;
  if (interval == 0 || !recovery_->connected()) return;
  if (now_ns >= next_report_ns_) {
    recovery::SubscriberReport r;
    r.queued = consumer_->queued.load(std::memory_order_relaxed);
    r.dropped = consumer_->dropped.load(std::memory_order_relaxed);
    r.conflated = consumer_->conflated.load(std::memory_order_relaxed);
    for (const auto& c : stats_->channels) {
      r.gaps += c.gaps.get();
      r.unrecoverable += c.unrecoverable.get();
      r.other_session_frames += c.other_session_frames.get();
    }
    r.ring_full_drops = stats_->ring_full_drops.get();
    if (recovery_->send(r)) next_report_ns_ = now_ns + interval;
  }
  if (deadline_ns_ == 0 || next_report_ns_ < deadline_ns_) deadline_ns_ = next_report_ns_;
}

verbs::Status Subscriber::connect_recovery(const verbs::RcPeer& gateway) {
  if (!recovery_) return verbs::Error{EINVAL, "feed subscriber: no recovery connection configured"};
  if (recovery_->connected() || recovery_->failed()) return verbs::Error{EALREADY, "feed subscriber: the recovery connection was already made"};
  if (verbs::Status st = recovery_->connect(gateway); !st.ok()) return st;
  const std::uint64_t now = monotonic_ns();
  for (auto& c : channels_) c->on_connected(now);
  return {};
}

verbs::Result<verbs::RcPeer> Subscriber::renew_recovery(std::uint8_t device) {
  if (!recovery_) return verbs::Error{EINVAL, "feed subscriber: no recovery connection configured"};
  if (device >= devices_.size() || devices_[device] == nullptr) {
    return verbs::Error{EINVAL, "feed subscriber: no alternate device to renew the recovery connection on"};
  }
  auto rc = RecoveryClient::create(*devices_[device], config_.recovery, recovery_->shared_counters());
  if (!rc.ok()) return verbs::Error{rc.error().code, "feed subscriber: recovery connection: " + rc.error().message};
  for (auto& c : channels_) c->set_client(rc->get());
  recovery_ = std::move(rc).value();
  recovery_device_ = device;
  return recovery_->local();
}

const Arbiter* Subscriber::arbiter(std::uint16_t channel) const {
  for (const auto& c : channels_) {
    if (c->config.id == channel) return &c->arbiter;
  }
  return nullptr;
}

int Subscriber::post_receives(Receiver& r) {
  if (r.to_repost.empty()) return 0;
  const std::size_t n = r.to_repost.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t slot = r.to_repost[i];
    r.sges[i] = r.ep->sge(slot * slot_bytes_, static_cast<std::uint32_t>(slot_bytes_));
    r.wrs[i] = verbs::RecvWr{};
    r.wrs[i].wr_id = slot;
    r.wrs[i].sg_list = std::span<const verbs::Sge>(&r.sges[i], 1);
  }
  const verbs::PostRecvResult posted = r.ep->qp->post_recv(std::span<const verbs::RecvWr>(r.wrs.data(), n));
  // Anything not posted (the QP went to error) stays out: counted as errors.
  if (!posted.ok()) stats_->recv_errors.add(n - posted.posted());
  r.to_repost.clear();
  return static_cast<int>(n);
}

// One receive completion: the datagram's group picks the channel and line,
// its frame goes to that channel's arbiter (counted on the way).
void Subscriber::on_completion(Receiver& r, const verbs::Wc& wc, std::uint64_t now_ns, std::uint64_t received_at) {
  if (wc.opcode != verbs::WcOpcode::RECV && wc.status == verbs::WcStatus::IBV_WC_SUCCESS) return;
  if (wc.wr_id >= config_.recv_slots) return;  // the one send WR never used
  const auto slot = static_cast<std::uint32_t>(wc.wr_id);
  r.to_repost.push_back(slot);
  if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) {
    stats_->recv_errors.add();
    return;
  }
  stats_->received.add();
  const std::uint8_t* buf = r.ep->at(slot * slot_bytes_);
  if (wc.byte_len < kGrhBytes) return;
  const std::uint32_t dst = (std::uint32_t{buf[36]} << 24) | (std::uint32_t{buf[37]} << 16) |
                            (std::uint32_t{buf[38]} << 8) | std::uint32_t{buf[39]};
  Channel* ch = nullptr;
  Line line = Line::kA;
  for (auto& c : channels_) {
    if (c->config.group_a == dst) {
      ch = c.get();
      break;
    }
    if (c->config.group_b != 0 && c->config.group_b == dst) {
      ch = c.get();
      line = Line::kB;
      break;
    }
  }
  if (ch == nullptr) {
    stats_->unknown_group.add();
    return;
  }
  const std::span<const std::uint8_t> payload(buf + kGrhBytes, wc.byte_len - kGrhBytes);
  const auto parsed = parse_frame(payload);
  ch->counters.frame_counters.count(parsed);
  if (!parsed.ok()) return;
  if (parsed->header().channel() != ch->config.id) {
    ch->counters.frame_counters.rejected[static_cast<std::size_t>(FrameError::kReservedNotZero)].inc();
    return;
  }
  if ((parsed->header().flags() & flags::kSnapshot) != 0) {
    stats_->snapshot_frames.add();
    return;
  }
  if (!parsed->header().is_control()) ch->counters.line_frames(static_cast<std::size_t>(line)).add();
  ch->receive_time_ns = received_at;
  const auto before = ch->arbiter.counters();
  ch->arbiter.on_frame(line, *parsed, now_ns, *ch);
  const auto& after = ch->arbiter.counters();
  const auto li = static_cast<std::size_t>(line);
  ch->counters.duplicates.add(after.line[li].duplicates - before.line[li].duplicates);
  ch->counters.heartbeats.add(after.line[li].heartbeats - before.line[li].heartbeats);
  ch->counters.other_session_frames.add(after.line[li].other_session_frames - before.line[li].other_session_frames);
}

// Up to 4 x 32 completions of one receiver, its slots posted again.
int Subscriber::poll(Receiver& r, std::uint64_t now_ns) {
  std::array<verbs::Wc, 32> wcs;
  int work = 0;
  for (int round = 0; round < 4; ++round) {
    auto n = r.ep->cq->poll(wcs);
    if (!n.ok() || *n == 0) break;
    const std::uint64_t received_at = qpgate::realtime_ns();
    for (std::size_t i = 0; i < *n; ++i) on_completion(r, wcs[i], now_ns, received_at);
    work += static_cast<int>(*n);
    if (*n < wcs.size()) break;
  }
  return work + post_receives(r);
}

int Subscriber::do_work(std::uint64_t now_ns, engine::SpscProducer& out) {
  int work = 0;
  for (auto& c : channels_) {
    c->out = &out;
    c->now_ns = now_ns;
  }
  for (Receiver& r : receivers_) work += poll(r, now_ns);
  // Holes waiting for the other line: declare them lost once they waited long enough.
  deadline_ns_ = 0;
  for (auto& c : channels_) {
    c->receive_time_ns = qpgate::realtime_ns();
    c->arbiter.poll(now_ns, *c);
    // A hole may be open (held frames, or a heartbeat ahead of us): come
    // back when it is due even if nothing else arrives.
    if (c->arbiter.held() > 0 || work > 0) {
      const std::uint64_t d = now_ns + c->config.arbiter.max_wait_ns + 1;
      if (deadline_ns_ == 0 || d < deadline_ns_) deadline_ns_ = d;
    }
  }
  if (recovery_) {
    // Replies first (they unblock held frames), then what each channel needs next.
    work += recovery_->poll([&](const recovery::Reply& r) {
      const std::uint32_t ch = r.kind == recovery::ReplyKind::kSnapshot ? r.snapshot.channel : r.retransmit.channel;
      for (auto& c : channels_) {
        if (c->config.id == ch && r.kind != recovery::ReplyKind::kError) {
          c->receive_time_ns = qpgate::realtime_ns();
          c->on_reply(r);
          return;
        }
      }
      recovery_->counters().stale_replies.add();  // an ErrorReply, or a channel we did not ask about
    });
  }
  // What each channel needs next: records owed to a full fromEngine, recovery requests, held frames.
  for (auto& c : channels_) {
    c->pump();
    const std::uint64_t d = c->deadline();
    if (d != 0 && (deadline_ns_ == 0 || d < deadline_ns_)) deadline_ns_ = d;
  }
  if (recovery_) {
    report(now_ns);
    recovery_->rearm_when_due(now_ns);
  }
  for (auto& c : channels_) c->out = nullptr;
  return work;
}

}  // namespace qpgate::feed
