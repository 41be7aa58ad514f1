#include "feed/subscriber.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/clock.h"
#include "engine/record_types.h"
#include "feed/feed_records.h"

namespace qpgate::feed {

struct Subscriber::Channel final : ArbiterSink {
  Channel(const SubscriberChannelConfig& c, SubscriberChannelCounters& channel_counters, SubscriberStats& all,
          std::uint32_t subscriber_id)
      : config(c), arbiter(c.arbiter), counters(channel_counters), stats(all), subscriber(subscriber_id) {}

  void deliver(Line line, const ParsedFrame& frame, std::uint16_t skip) override {
    const FrameHeaderView h = frame.header();
    counters.frames.add();
    counters.messages.add(static_cast<std::uint64_t>(h.message_count() - skip));
    counters.expected.set(arbiter.expected());
    const std::uint64_t send = h.send_time_ns();
    counters.latency.record(receive_time_ns > send ? receive_time_ns - send : 0);
    const auto length = static_cast<std::int32_t>(records::kFrameRecordHeaderBytes + frame.bytes().size());
    std::byte* dst = out->claim(engine::record_type::kFeedFrame, length);
    if (dst == nullptr) {
      stats.ring_full_drops.add();
      return;
    }
    auto* p = reinterpret_cast<std::uint8_t*>(dst);
    store_le<std::uint32_t>(p + 0, subscriber);
    store_le<std::uint16_t>(p + 4, config.id);
    p[6] = static_cast<std::uint8_t>(line);
    p[7] = h.flags();
    store_le<std::uint64_t>(p + 8, h.first_seq());
    store_le<std::uint16_t>(p + 16, h.message_count());
    store_le<std::uint16_t>(p + 18, skip);
    store_le<std::uint32_t>(p + 20, h.session());
    store_le<std::uint64_t>(p + 24, send);
    store_le<std::uint64_t>(p + 32, receive_time_ns);
    std::memcpy(p + records::kFrameRecordHeaderBytes, frame.bytes().data(), frame.bytes().size());
  }

  void gap(std::uint64_t from, std::uint64_t count) override {
    counters.gaps.add();
    counters.unrecoverable.add(count);
    counters.expected.set(from + count);
    std::byte* dst = out->claim(engine::record_type::kFeedGap, records::kGapRecordBytes);
    if (dst == nullptr) {
      stats.ring_full_drops.add();
      return;
    }
    auto* p = reinterpret_cast<std::uint8_t*>(dst);
    store_le<std::uint32_t>(p + 0, subscriber);
    store_le<std::uint16_t>(p + 4, config.id);
    store_le<std::uint16_t>(p + 6, 0);
    store_le<std::uint64_t>(p + 8, from);
    store_le<std::uint64_t>(p + 16, count);
  }

  void session_change(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) override {
    if (old_session != 0) counters.session_changes.add();
    counters.session.set(new_session);
    counters.expected.set(next_seq);
    std::byte* dst = out->claim(engine::record_type::kFeedSession, records::kSessionRecordBytes);
    if (dst == nullptr) {
      stats.ring_full_drops.add();
      return;
    }
    auto* p = reinterpret_cast<std::uint8_t*>(dst);
    store_le<std::uint32_t>(p + 0, subscriber);
    store_le<std::uint16_t>(p + 4, config.id);
    store_le<std::uint16_t>(p + 6, 0);
    store_le<std::uint32_t>(p + 8, old_session);
    store_le<std::uint32_t>(p + 12, new_session);
    store_le<std::uint64_t>(p + 16, next_seq);
  }

  SubscriberChannelConfig config;
  Arbiter arbiter;
  SubscriberChannelCounters& counters;
  SubscriberStats& stats;
  std::uint32_t subscriber;
  // Set for the duration of do_work.
  engine::SpscProducer* out = nullptr;
  std::uint64_t receive_time_ns = 0;
};

std::string validate(const SubscriberConfig& c) {
  if (c.channels.empty()) return "a subscriber needs at least one channel";
  if (!valid_frame_size(c.max_frame_bytes)) return "maxFrameSize must be 128..4096";
  if (c.recv_slots < 4 || c.recv_slots > 16384) return "recvSlots must be 4..16384";
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
  return "";
}

verbs::Result<std::unique_ptr<Subscriber>> Subscriber::create(verbs::Device& device, const SubscriberConfig& config) {
  if (std::string e = validate(config); !e.empty()) return verbs::Error{EINVAL, "feed subscriber: " + e};
  std::unique_ptr<Subscriber> s(new Subscriber(config));
  s->slot_bytes_ = (kGrhBytes + config.max_frame_bytes + 63) & ~std::size_t{63};
  UdEndpointConfig ec;
  ec.buffer_bytes = s->slot_bytes_ * config.recv_slots;
  ec.send_wr = 1;
  ec.recv_wr = config.recv_slots;
  ec.qkey = config.qkey;
  auto ep = make_ud_endpoint(device, ec);
  if (!ep.ok()) return verbs::Error{ep.error().code, "feed subscriber: " + ep.error().message};
  s->ep_ = std::move(ep).value();
  for (std::uint32_t i = 0; i < config.recv_slots; ++i) s->to_repost_.push_back(i);
  s->post_receives();
  for (const auto& c : s->channels_) {
    for (std::uint32_t g : {c->config.group_a, c->config.group_b}) {
      if (g == 0) continue;
      if (verbs::Status st = s->ep_->qp->attach_mcast(group_gid(g)); !st.ok()) {
        return verbs::Error{st.error().code, "feed subscriber: attach_mcast(" + verbs::ipv4_to_string(g) + "): " + st.error().message};
      }
    }
  }
  return s;
}

Subscriber::Subscriber(const SubscriberConfig& config)
    : config_(config), stats_(std::make_shared<SubscriberStats>(config.channels.size())) {
  for (std::size_t i = 0; i < config.channels.size(); ++i) {
    stats_->channels[i].id = config.channels[i].id;
    channels_.push_back(std::make_unique<Channel>(config.channels[i], stats_->channels[i], *stats_, config.id));
  }
  to_repost_.reserve(config.recv_slots);
  recv_wrs_.resize(config.recv_slots);
  recv_sges_.resize(config.recv_slots);
}

Subscriber::~Subscriber() = default;  // the endpoint destroys the QP (leaving the groups) first

const Arbiter* Subscriber::arbiter(std::uint16_t channel) const {
  for (const auto& c : channels_) {
    if (c->config.id == channel) return &c->arbiter;
  }
  return nullptr;
}

int Subscriber::post_receives() {
  if (to_repost_.empty()) return 0;
  const std::size_t n = to_repost_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t slot = to_repost_[i];
    recv_sges_[i] = ep_->sge(slot * slot_bytes_, static_cast<std::uint32_t>(slot_bytes_));
    recv_wrs_[i] = verbs::RecvWr{};
    recv_wrs_[i].wr_id = slot;
    recv_wrs_[i].sg_list = std::span<const verbs::Sge>(&recv_sges_[i], 1);
  }
  const verbs::PostRecvResult r = ep_->qp->post_recv(std::span<const verbs::RecvWr>(recv_wrs_.data(), n));
  // Anything not posted (the QP went to error) stays out: counted as errors.
  if (!r.ok()) stats_->recv_errors.add(n - r.posted());
  to_repost_.clear();
  return static_cast<int>(n);
}

int Subscriber::do_work(std::uint64_t now_ns, engine::SpscProducer& out) {
  std::array<verbs::Wc, 32> wcs;
  int work = 0;
  for (auto& c : channels_) c->out = &out;
  for (int round = 0; round < 4; ++round) {
    auto n = ep_->cq->poll(wcs);
    if (!n.ok() || *n == 0) break;
    const std::uint64_t received_at = engine::realtime_ns();
    for (std::size_t i = 0; i < *n; ++i) {
      const verbs::Wc& wc = wcs[i];
      if (wc.opcode != verbs::WcOpcode::RECV && wc.status == verbs::WcStatus::IBV_WC_SUCCESS) continue;
      if (wc.wr_id >= config_.recv_slots) continue;  // the one send WR never used
      const auto slot = static_cast<std::uint32_t>(wc.wr_id);
      to_repost_.push_back(slot);
      if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) {
        stats_->recv_errors.add();
        continue;
      }
      stats_->received.add();
      const std::uint8_t* buf = ep_->at(slot * slot_bytes_);
      if (wc.byte_len < kGrhBytes) continue;
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
        continue;
      }
      const std::span<const std::uint8_t> payload(buf + kGrhBytes, wc.byte_len - kGrhBytes);
      const auto parsed = parse_frame(payload);
      ch->counters.frame_counters.count(parsed);
      if (!parsed.ok()) continue;
      if (parsed->header().channel() != ch->config.id) {
        ch->counters.frame_counters.rejected[static_cast<std::size_t>(FrameError::kReservedNotZero)].inc();
        continue;
      }
      if ((parsed->header().flags() & flags::kSnapshot) != 0) {
        stats_->snapshot_frames.add();
        continue;
      }
      if (!parsed->header().is_control()) ch->counters.line_frames[static_cast<std::size_t>(line)].add();
      ch->receive_time_ns = received_at;
      const auto before = ch->arbiter.counters();
      ch->arbiter.on_frame(line, *parsed, now_ns, *ch);
      const auto& after = ch->arbiter.counters();
      const auto li = static_cast<std::size_t>(line);
      ch->counters.duplicates.add(after.line[li].duplicates - before.line[li].duplicates);
      ch->counters.heartbeats.add(after.line[li].heartbeats - before.line[li].heartbeats);
      ch->counters.stale_session.add(after.line[li].stale_session - before.line[li].stale_session);
    }
    work += static_cast<int>(*n);
    if (*n < wcs.size()) break;
  }
  work += post_receives();
  // Holes waiting for the other line: declare them lost once they waited long enough.
  deadline_ns_ = 0;
  for (auto& c : channels_) {
    c->receive_time_ns = engine::realtime_ns();
    c->arbiter.poll(now_ns, *c);
    // A hole may be open (held frames, or a heartbeat ahead of us): come
    // back when it is due even if nothing else arrives.
    if (c->arbiter.held() > 0 || work > 0) {
      const std::uint64_t d = now_ns + c->config.arbiter.max_wait_ns + 1;
      if (deadline_ns_ == 0 || d < deadline_ns_) deadline_ns_ = d;
    }
    c->out = nullptr;
  }
  return work;
}

}  // namespace qpgate::feed
