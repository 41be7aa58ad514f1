#include "feed/publisher.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <string>

#include "common/clock.h"
#include "engine/node_buffer.h"
#include "verbs/source_gid.h"

namespace qpgate::feed {

struct Publisher::Channel {
  Channel(const PublisherChannelConfig& c, std::uint32_t session, PublisherReservation::Channel& memory,
          PublisherChannelCounters& channel_counters)
      : config(c), seq(c.id, session), packer(c.frame_bytes), ring(std::move(memory.ring)),
        snapshot(std::move(memory.snapshot)), counters(channel_counters) {
    snapshot->reset(session);  // reserved before the session was drawn; no slot used yet
  }
  PublisherChannelConfig config;
  ChannelSequence seq;
  FramePacker packer;
  std::unique_ptr<RetransmitRing> ring;     // null once release_channel_memory() took it
  std::unique_ptr<SnapshotStore> snapshot;  // likewise
  PublisherChannelCounters& counters;
  verbs::AddressHandle* ah[2] = {nullptr, nullptr};
  std::uint64_t last_send_ns = 0;
  // Enqueue stamps of records whose last message is in the open frame.
  std::array<std::uint64_t, 512> stamps{};
  std::size_t stamp_count = 0;
};

// A frame is what the wire format allows (frame.h), and a ring holds the largest one.
static_assert(limits::frame_bytes.minimum == kMinFrameBytes && limits::frame_bytes.maximum == kMaxFrameBytes);
static_assert(limits::frame_bytes.fallback == kDefaultFrameBytes);
static_assert(limits::ring_bytes.minimum >= kMaxFrameBytes);

std::string validate(const PublisherConfig& c) {
  if (c.channels.empty()) return "a publisher needs at least one channel";
  if (!limits::send_slots.holds(c.send_slots)) return limits::send_slots.refusal(c.send_slots);
  for (std::size_t i = 0; i < c.channels.size(); ++i) {
    const PublisherChannelConfig& ch = c.channels[i];
    const std::string name = "channel " + std::to_string(ch.id);
    if (!limits::frame_bytes.holds(ch.frame_bytes)) return name + ": " + limits::frame_bytes.refusal(ch.frame_bytes);
    if (!verbs::ipv4_is_multicast(ch.group_a)) return name + ": groupA must be an IPv4 multicast address";
    if (ch.group_b != 0 && !verbs::ipv4_is_multicast(ch.group_b)) return name + ": groupB must be an IPv4 multicast address";
    if (ch.group_b == ch.group_a) return name + ": groupB must differ from groupA";
    if (ch.heartbeat_ns % 1'000'000 != 0 || !limits::heartbeat_ms.holds(ch.heartbeat_ns / 1'000'000)) {
      return name + ": " + limits::heartbeat_ms.refusal(ch.heartbeat_ns / 1'000'000) + " (whole milliseconds)";
    }
    if (!limits::ring_frames.holds(ch.ring.max_frames)) return name + ": " + limits::ring_frames.refusal(ch.ring.max_frames);
    if (!limits::ring_bytes.holds(ch.ring.max_bytes)) return name + ": " + limits::ring_bytes.refusal(ch.ring.max_bytes);
    if (!limits::snapshot_slots.holds(ch.snapshot.slot_count)) return name + ": " + limits::snapshot_slots.refusal(ch.snapshot.slot_count);
    if (!snapshot_layout::valid_slot_bytes(ch.snapshot.slot_bytes)) return name + ": snapshot slot size must be a multiple of 64 in 128..4096";
    for (std::size_t j = 0; j < i; ++j) {
      if (c.channels[j].id == ch.id) return name + " is configured twice";
    }
  }
  return "";
}

namespace {

std::size_t send_slot_size(const PublisherConfig& config) {
  std::size_t slot_bytes = 0;
  for (const auto& ch : config.channels) slot_bytes = std::max(slot_bytes, ch.frame_bytes);
  return (slot_bytes + 63) & ~std::size_t{63};
}

// The send side's endpoint: the send slots, two SENDs (lines A and B) each.
UdEndpointConfig endpoint_config(const PublisherConfig& config, std::size_t slot_bytes) {
  UdEndpointConfig ec;
  ec.buffer_bytes = slot_bytes * config.send_slots;
  ec.send_wr = config.send_slots * 2;
  ec.recv_wr = 1;
  ec.qkey = config.qkey;
  return ec;
}

bool reservation_fits(const PublisherConfig& config, const PublisherReservation& m) {
  if (m.channels.size() != config.channels.size() || m.send_slots.size() != send_slot_bytes(config)) return false;
  for (const auto& c : m.channels) {
    if (c.ring == nullptr || c.snapshot == nullptr) return false;
  }
  return true;
}

// Runs `make` (an allocation), turning std::bad_alloc into an ENOMEM naming `what`.
template <typename Make>
verbs::Status reserve_part(const std::string& what, std::size_t bytes, Make&& make) {
  try {
    make();
    return {};
  } catch (const std::bad_alloc& e) {
    return verbs::Error{ENOMEM, "feed publisher: " + what + ": out of memory reserving " + format_bytes(bytes) + " (" +
                                    e.what() + ")"};
  }
}

std::uint64_t read_u64_file(const char* path, bool* ok) {
  std::FILE* f = std::fopen(path, "r");
  *ok = false;
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  *ok = std::fscanf(f, "%llu", &v) == 1;  // "max" reads as not ok: no limit
  std::fclose(f);
  return v;
}

std::size_t mem_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return SIZE_MAX;
  char line[256];
  std::size_t kb = SIZE_MAX;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long v = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
      kb = static_cast<std::size_t>(v);
      break;
    }
  }
  std::fclose(f);
  return kb == SIZE_MAX ? SIZE_MAX : kb * 1024;
}

}  // namespace

std::size_t reserved_bytes(const PublisherChannelConfig& ch) {
  return RetransmitRing::reserved_bytes(ch.ring) + SnapshotStore::reserved_bytes(ch.snapshot);
}

std::size_t send_slot_bytes(const PublisherConfig& config) { return send_slot_size(config) * config.send_slots; }

std::size_t reserved_bytes(const PublisherConfig& config) {
  std::size_t total = send_slot_bytes(config);
  for (const auto& ch : config.channels) total += reserved_bytes(ch);
  return total;
}

std::string format_bytes(std::size_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, kUnits[unit]);
  return text;
}

std::size_t available_memory_bytes() {
  std::size_t available = mem_available_bytes();
  bool max_ok = false;
  bool current_ok = false;
  const std::uint64_t max = read_u64_file("/sys/fs/cgroup/memory.max", &max_ok);
  const std::uint64_t current = read_u64_file("/sys/fs/cgroup/memory.current", &current_ok);
  if (max_ok && current_ok) available = std::min<std::size_t>(available, max > current ? max - current : 0);
  return available;
}

verbs::Result<PublisherReservation> reserve(const PublisherConfig& config, int numa_node) {
  if (std::string e = validate(config); !e.empty()) return verbs::Error{EINVAL, "feed publisher: " + e};
  const std::size_t wanted = reserved_bytes(config);
  if (const std::size_t available = available_memory_bytes(); wanted > available) {
    return verbs::Error{ENOMEM, "feed publisher: reserving " + format_bytes(wanted) + " but the host has " +
                                    format_bytes(available) + " available (MemAvailable, cgroup memory.max)"};
  }
  const engine::PreferredNodeScope on_node(numa_node);  // every page below is touched while it holds
  PublisherReservation m;
  m.channels.resize(config.channels.size());
  for (std::size_t i = 0; i < config.channels.size(); ++i) {
    const PublisherChannelConfig& ch = config.channels[i];
    const std::string name = "channel " + std::to_string(ch.id);
    verbs::Status st = reserve_part(name + ": the retransmission ring", RetransmitRing::reserved_bytes(ch.ring),
                                    [&] { m.channels[i].ring = std::make_unique<RetransmitRing>(ch.ring); });
    if (st.ok()) {
      st = reserve_part(name + ": the snapshot store", SnapshotStore::reserved_bytes(ch.snapshot),
                        [&] { m.channels[i].snapshot = std::make_unique<SnapshotStore>(ch.id, 0, ch.snapshot); });
    }
    if (!st.ok()) return st.error();
  }
  const std::size_t send = send_slot_bytes(config);
  if (verbs::Status st = reserve_part("the send slots", send, [&] { m.send_slots.assign(send, 0); }); !st.ok()) {
    return st.error();
  }
  return m;
}

verbs::Result<std::unique_ptr<Publisher>> Publisher::create(verbs::Device& device, const PublisherConfig& config,
                                                            std::uint64_t now_ns, verbs::Device* alternate) {
  auto memory = reserve(config);
  if (!memory.ok()) return memory.error();
  return create(device, config, std::move(memory).value(), now_ns, alternate);
}

verbs::Result<std::unique_ptr<Publisher>> Publisher::create(verbs::Device& device, const PublisherConfig& config,
                                                            PublisherReservation memory, std::uint64_t now_ns,
                                                            verbs::Device* alternate) {
  if (std::string e = validate(config); !e.empty()) return verbs::Error{EINVAL, "feed publisher: " + e};
  if (!reservation_fits(config, memory)) {
    return verbs::Error{EINVAL, "feed publisher: the reservation was not made for this config (reserve(config))"};
  }
  if (alternate == &device) return verbs::Error{EINVAL, "feed publisher: the alternate device is the device itself"};
  const std::size_t slot_bytes = send_slot_size(config);
  auto ep = make_ud_endpoint(device, endpoint_config(config, slot_bytes), std::move(memory.send_slots));
  if (!ep.ok()) return verbs::Error{ep.error().code, "feed publisher: " + ep.error().message};
  std::unique_ptr<Publisher> p(new Publisher(config, std::move(ep).value(), memory, now_ns));
  p->slot_bytes_ = slot_bytes;
  if (alternate != nullptr) {
    if (verbs::Status st = p->open_alternate(*alternate); !st.ok()) {
      return verbs::Error{st.code(), "feed publisher: the alternate device: " + std::string(st.message())};
    }
  }
  if (verbs::Status st = p->make_address_handles(device, alternate); !st.ok()) {
    return verbs::Error{st.code(), "feed publisher: " + std::string(st.message())};
  }
  return p;
}

verbs::Status Publisher::open_alternate(verbs::Device& alternate) {
  auto ep = make_ud_endpoint_over(alternate, endpoint_config(config_, slot_bytes_), ep_->memory);
  if (!ep.ok()) return ep.error();
  alternate_ep_ = std::move(ep).value();
  return {};
}

// Each channel's A (and B) address handle on the PD of the endpoint its line leaves from.
verbs::Status Publisher::make_address_handles(verbs::Device& device, verbs::Device* alternate) {
  auto source = verbs::choose_source_gid(device);
  if (!source.ok()) return source.error();
  // Line B leaves from the alternate device's GID when there is one; else
  // from the device's alternate address when it has one (a soft device with
  // two addresses: verbs/soft/path_nets.h); else with line A.
  std::uint8_t line_b_source = source->index;
  if (alternate != nullptr) {
    auto alt = verbs::choose_source_gid(*alternate);
    if (!alt.ok()) return verbs::Error{alt.error().code, "the alternate device: " + alt.error().message};
    line_b_source = alt->index;
  } else if (const std::optional<verbs::SourceGid> second = verbs::choose_alternate_gid(device, *source)) {
    line_b_source = second->index;
  }
  const std::uint8_t line_sources[2] = {source->index, line_b_source};
  for (auto& c : channels_) {
    const std::uint32_t groups[2] = {c->config.group_a, c->config.group_b};
    for (int line = 0; line < 2; ++line) {
      if (groups[line] == 0) continue;
      verbs::AhAttr attr;
      attr.dgid = group_gid(groups[line]);
      attr.sgid_index = line_sources[line];  // IPv4 groups leave from an IPv4-mapped GID (rxe's index 0 is link-local IPv6)
      attr.hop_limit = config_.hop_limit;
      auto ah = line_endpoint(line).pd->create_ah(attr);
      if (!ah.ok()) return verbs::Error{ah.error().code, "create_ah: " + ah.error().message};
      c->ah[line] = ah.value().get();
      ahs_.push_back(std::move(ah).value());
    }
  }
  return {};
}

Publisher::Publisher(const PublisherConfig& config, std::unique_ptr<UdEndpoint> ep, PublisherReservation& memory,
                     std::uint64_t now_ns)
    : config_(config), ep_(std::move(ep)), stats_(std::make_shared<PublisherStats>(config.channels.size())) {
  session_ = new_session_id(config.previous_session);
  stats_->session.set(session_);
  stats_->reserved_bytes.set(reserved_bytes(config));
  for (std::size_t i = 0; i < config.channels.size(); ++i) {
    PublisherChannelCounters& counters = stats_->channels[i];
    counters.id = config.channels[i].id;
    counters.next_seq.set(1);
    counters.reserved_bytes.set(reserved_bytes(config.channels[i]));
    auto c = std::make_unique<Channel>(config.channels[i], session_, memory.channels[i], counters);
    c->packer.start(c->config.id, session_);
    c->last_send_ns = now_ns;
    channels_.push_back(std::move(c));
  }
  slots_.resize(config.send_slots);
  free_slots_ = slots_.size();
}

Publisher::~Publisher() {
  // The QPs first (their WQEs point at the AHs and the slots), the one over
  // ep_'s memory before ep_; then the AHs.
  alternate_ep_.reset();
  ep_.reset();
  ahs_.clear();
}

Publisher::Channel* Publisher::find(std::uint16_t id) {
  for (auto& c : channels_) {
    if (c->config.id == id) return c.get();
  }
  return nullptr;
}

const Publisher::Channel* Publisher::find(std::uint16_t id) const {
  for (const auto& c : channels_) {
    if (c->config.id == id) return c.get();
  }
  return nullptr;
}

const RetransmitRing* Publisher::ring(std::uint16_t channel) const {
  const Channel* c = find(channel);
  return c == nullptr ? nullptr : c->ring.get();
}

const SnapshotStore* Publisher::snapshot(std::uint16_t channel) const {
  const Channel* c = find(channel);
  return c == nullptr ? nullptr : c->snapshot.get();
}

PublisherReservation Publisher::release_channel_memory() {
  PublisherReservation m;
  if (!closed_) return m;
  for (auto& c : channels_) m.channels.push_back({std::move(c->ring), std::move(c->snapshot)});
  return m;
}

std::size_t Publisher::slots_needed(const Channel& c, std::size_t bytes, std::uint16_t count) const {
  // Every frame but the last, with the next one, holds more than a payload:
  // frames <= 2 * bytes / payload + 1; never more than one per message. Plus
  // the open frame, which is sent when the first message does not fit.
  const std::size_t payload = c.config.frame_bytes - kFrameHeaderBytes;
  return std::min<std::size_t>(count, 2 * bytes / payload + 1) + 1;
}

PublishStatus Publisher::publish(std::uint16_t channel, std::span<const std::uint8_t> messages, std::uint16_t count,
                                 std::uint64_t enqueue_ns) {
  Channel* c = find(channel);
  if (c == nullptr || closed_) {
    stats_->rejected_records.add();
    return PublishStatus::kUnknownChannel;
  }
  // Validate everything first: all or nothing.
  const std::size_t max_body = c->packer.max_body_bytes();
  std::size_t off = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (messages.size() - off < kMessageHeaderBytes) {
      stats_->rejected_records.add();
      return PublishStatus::kMalformed;
    }
    const MessageHeaderView h(messages.data() + off);
    const std::size_t len = h.length();
    if (len < kMessageHeaderBytes || len > messages.size() - off || h.type() == 0 || h.reserved() != 0) {
      stats_->rejected_records.add();
      return PublishStatus::kMalformed;
    }
    if (len - kMessageHeaderBytes > max_body) {
      stats_->rejected_records.add();
      return PublishStatus::kTooLarge;
    }
    off += len;
  }
  if (off != messages.size() || count == 0) {
    stats_->rejected_records.add();
    return PublishStatus::kMalformed;
  }
  const std::size_t needed = slots_needed(*c, messages.size(), count);
  if (needed > slots_.size()) {
    stats_->rejected_records.add();
    return PublishStatus::kTooLarge;
  }
  if (free_slots_ < needed) {
    post();
    reap();
    if (free_slots_ < needed) {
      stats_->retries.add();
      return PublishStatus::kRetry;
    }
  }
  // The clock is read only when a frame fills here (most records end in the
  // open frame, which do_work sends with the duty cycle's time).
  std::uint64_t now = 0;
  const auto clock = [&now] { return now != 0 ? now : (now = qpgate::monotonic_ns()); };
  off = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const MessageHeaderView h(messages.data() + off);
    const std::size_t len = h.length();
    MessageFields f;
    f.type = static_cast<MessageType>(h.type());
    f.instrument_id = h.instrument_id();
    f.key = h.key();
    f.action = static_cast<BookAction>(h.action());
    const auto body = messages.subspan(off + kMessageHeaderBytes, len - kMessageHeaderBytes);
    AppendStatus st = c->packer.append(f, body);
    if (st == AppendStatus::kFrameFull) {
      send_data_frame(*c, clock());
      st = c->packer.append(f, body);
    }
    off += len;  // kOk: validated above
  }
  if (c->stamp_count == c->stamps.size()) send_data_frame(*c, clock());  // cannot happen with <= 340 messages a frame
  if (c->packer.empty()) {
    // Everything went out already (cannot happen: the last message is in the open frame).
    if (stamp_count_ < kMaxStamps) stamps_[stamp_count_++] = enqueue_ns;
  } else {
    c->stamps[c->stamp_count++] = enqueue_ns;
  }
  stats_->records.add();
  return PublishStatus::kOk;
}

void Publisher::send_data_frame(Channel& c, std::uint64_t now_ns) {
  if (c.packer.empty()) return;
  const std::uint64_t first = c.seq.claim(c.packer.message_count());
  const auto frame = c.packer.finish(first, qpgate::realtime_ns());
  const std::size_t slot = send_frame(c, frame, now_ns);
  if (slot != kNoSlot) {
    unkept_[unkept_count_++] = Unkept{&c, slot, frame.size()};
  } else {  // kept now, after the frames before it
    keep_posted_frames();
    keep(c, frame);
  }
  c.counters.frames.add();
  c.counters.messages.add(c.packer.message_count());
  c.counters.bytes.add(frame.size());
  c.counters.next_seq.set(c.seq.next());
  // The records whose last message is in this frame are posted with it.
  for (std::size_t i = 0; i < c.stamp_count; ++i) {
    if (stamp_count_ == kMaxStamps) post();
    stamps_[stamp_count_++] = c.stamps[i];
  }
  c.stamp_count = 0;
  c.packer.start(c.config.id, session_);
}

void Publisher::send_control(Channel& c, std::uint8_t flag, std::uint64_t now_ns) {
  std::array<std::uint8_t, kFrameHeaderBytes> buf{};
  const auto frame = encode_control_frame(buf, flag, c.config.id, session_, c.seq.next(), qpgate::realtime_ns());
  send_frame(c, frame, now_ns);
  if (flag == flags::kHeartbeat) c.counters.heartbeats.add();
}

void Publisher::keep(Channel& c, std::span<const std::uint8_t> frame) {
  c.ring->append(frame);
  c.snapshot->apply_frame(ParsedFrame(frame));
  c.counters.ring_frames.set(c.ring->frames());
  c.counters.snapshot_slots.set(c.snapshot->slots_used());
}

void Publisher::keep_posted_frames() {
  for (std::size_t i = 0; i < unkept_count_; ++i) {
    const Unkept& u = unkept_[i];
    keep(*u.channel, std::span<const std::uint8_t>(ep_->at(u.slot * slot_bytes_), u.bytes));
  }
  unkept_count_ = 0;
}

std::size_t Publisher::send_frame(Channel& c, std::span<const std::uint8_t> frame, std::uint64_t now_ns) {
  if (free_slots_ == 0 || slots_[next_slot_].outstanding != 0) {
    post();
    // A slot is always free here: publish() checked the room; heartbeats
    // and close() reap first. Spin on completions only as a last resort.
    for (int tries = 0; tries < 1000 && (free_slots_ == 0 || slots_[next_slot_].outstanding != 0); ++tries) reap();
    if (free_slots_ == 0 || slots_[next_slot_].outstanding != 0) {
      stats_->post_errors.add();
      return kNoSlot;
    }
  }
  const std::size_t slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % slots_.size();
  --free_slots_;
  std::memcpy(ep_->at(slot * slot_bytes_), frame.data(), frame.size());
  for (int line = 0; line < 2; ++line) {
    verbs::AddressHandle* ah = c.ah[line];
    if (ah == nullptr) continue;
    if ((line_mask_ & (1u << line)) == 0) {
      stats_->suppressed.add();
      continue;
    }
    SendBatch& batch = line_batch(line);
    if (batch.count == kMaxBatch) post();
    verbs::Sge& s = batch.sges[batch.count];
    s = line_endpoint(line).sge(slot * slot_bytes_, static_cast<std::uint32_t>(frame.size()));
    verbs::SendWr& wr = batch.wrs[batch.count];
    wr = verbs::SendWr{};
    wr.wr_id = slot;
    wr.sg_list = std::span<const verbs::Sge>(&s, 1);
    wr.opcode = verbs::WrOpcode::SEND;
    wr.send_flags = verbs::SendFlag::SIGNALED;
    wr.ud.ah = ah;
    wr.ud.remote_qpn = verbs::kMulticastQpn;
    wr.ud.remote_qkey = config_.qkey;
    ++slots_[slot].outstanding;
    ++batch.count;
  }
  c.last_send_ns = now_ns;
  if (slots_[slot].outstanding == 0) {  // every line disabled: the slot was not used
    ++free_slots_;
    return kNoSlot;
  }
  return slot;
}

void Publisher::post() {
  post(batches_[0], *ep_);
  if (alternate_ep_) post(batches_[1], *alternate_ep_);
  if (stamp_count_ > 0) {
    const std::uint64_t now = qpgate::monotonic_ns();
    for (std::size_t i = 0; i < stamp_count_; ++i) {
      stats_->publish_latency.record(now > stamps_[i] ? now - stamps_[i] : 0);
    }
    stamp_count_ = 0;
  }
  keep_posted_frames();  // before any reap can free their slots
}

void Publisher::post(SendBatch& batch, UdEndpoint& ep) {
  if (batch.count == 0) return;
  const verbs::PostSendResult r = ep.qp->post_send(std::span<const verbs::SendWr>(batch.wrs.data(), batch.count));
  for (std::size_t i = r.posted(); i < batch.count; ++i) {
    // Not posted: the slot's SEND will never complete.
    Slot& s = slots_[batch.wrs[i].wr_id];
    if (--s.outstanding == 0) ++free_slots_;
    stats_->post_errors.add();
  }
  batch.count = 0;
}

int Publisher::reap() { return reap(*ep_) + (alternate_ep_ ? reap(*alternate_ep_) : 0); }

int Publisher::reap(UdEndpoint& ep) {
  std::array<verbs::Wc, 64> wcs;
  int reaped = 0;
  for (;;) {
    auto n = ep.cq->poll(wcs);
    if (!n.ok() || *n == 0) break;
    for (std::size_t i = 0; i < *n; ++i) {
      const verbs::Wc& wc = wcs[i];
      if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) stats_->send_errors.add();
      if (wc.wr_id < slots_.size()) {
        Slot& s = slots_[wc.wr_id];
        if (s.outstanding > 0 && --s.outstanding == 0) ++free_slots_;
      }
    }
    reaped += static_cast<int>(*n);
    if (*n < wcs.size()) break;
  }
  return reaped;
}

// When the channel's next heartbeat is due: its interval after its last
// frame. Compared with `now` rather than subtracting from it, because the
// engine's `now` (taken as its loop turn began) may be earlier than the
// clock read that started the channel: an unsigned `now - last_send` then
// wraps to a huge idle time and a heartbeat goes out at once.
std::uint64_t Publisher::heartbeat_due_ns(const Channel& c) {
  const std::uint64_t interval = c.config.heartbeat_ns;
  return c.last_send_ns > UINT64_MAX - interval ? UINT64_MAX : c.last_send_ns + interval;
}

int Publisher::do_work(std::uint64_t now_ns) {
  int work = reap();
  for (auto& c : channels_) {
    if (!c->packer.empty()) {
      send_data_frame(*c, now_ns);
      ++work;
    } else if (!closed_ && now_ns >= heartbeat_due_ns(*c)) {
      send_control(*c, flags::kHeartbeat, now_ns);
      ++work;
    }
  }
  post();
  return work;
}

std::uint64_t Publisher::next_deadline_ns() const {
  if (closed_) return 0;
  std::uint64_t d = UINT64_MAX;
  for (const auto& c : channels_) d = std::min(d, heartbeat_due_ns(*c));
  return d;
}

void Publisher::close(std::uint64_t now_ns) {
  if (closed_) return;
  reap();
  for (auto& c : channels_) {
    send_data_frame(*c, now_ns);
    send_control(*c, flags::kEndOfSession, now_ns);
  }
  post();
  closed_ = true;
}

}  // namespace qpgate::feed
