// The feed's own path, no JS: a qpgate::feed::Publisher on one soft device
// (--pub-addr) and a qpgate::feed::Subscriber on another (--sub-addr, a
// forked process), both busy-polling, one channel on line A (--group), on
// loopback. The sender is paced: tick i is due at t0 + i / --rate (CLOCK_MONOTONIC,
// shared by both processes), each tick is one PUBLISH call of one message
// (12-byte header + --body bytes, the due time in the body), and latency
// is measured from the due time (and, apart, from the publish call) to the moment the subscriber reads the
// message out of its fromEngine ring — so a sender that falls behind shows
// the delay (no coordinated omission). --rate 0 sends as fast as the
// publisher's send slots allow (back-pressure: kRetry), due time = the
// publish call. Ticks due in one loop pass are published together and leave
// in one frame on the next do_work, as on the engine's duty cycle.
//
// Only ticks published after a warm-up (--warmup s) are measured: by the
// publish time, not the due time, so an offered rate above what the path
// carries still measures --seconds of sending (its latency then grows with
// the backlog, as it would for a real feed). Prints one
// `RESULT {json}` line (bench/transport/bench_common.h).
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <atomic>
#include <cinttypes>
#include <memory>
#include <vector>

#include "bench_common.h"
#include "engine/clock.h"
#include "engine/spsc_ring.h"
#include "feed/feed_records.h"
#include "feed/frame.h"
#include "feed/le.h"
#include "feed/publisher.h"
#include "feed/subscriber.h"
#include "verbs/soft/soft_device.h"

using namespace qpgate;
using engine::monotonic_ns;

namespace {

constexpr std::uint16_t kChannel = 1;

// Shared between the sender and the subscriber process (MAP_SHARED).
struct Shared {
  std::atomic<std::uint64_t> measure_from{0};  // ticks published at or after this are measured; 0 = not yet
  std::atomic<int> ready{0};
  std::atomic<int> stop{0};
  std::atomic<int> done{0};
  std::uint64_t received = 0;  // measured ticks delivered
  std::uint64_t gap_messages = 0;
  std::uint64_t first_ns = 0, last_ns = 0;
  std::uint64_t latency_sum_ns = 0;
  std::uint64_t ring_full_drops = 0, rejected = 0;
  metrics::LatencyHistogram latency;  // scheduled send -> read by the subscriber
  // publish() call -> read: the part after the sender got to the tick (what
  // a ping-pong tool measures); latency - transit is the sender's own lag.
  metrics::LatencyHistogram transit;
  std::uint64_t transit_sum_ns = 0;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_feed_native[%d]: %s\n", getpid(), what.c_str());
  std::_Exit(1);
}

std::unique_ptr<verbs::soft::SoftDevice> open_device(const std::string& address) {
  verbs::soft::SoftDeviceOptions o;
  o.address_or_name = address;
  o.net.probe_ipv4_id = false;
  auto d = verbs::soft::open_soft_device(o);
  if (!d.ok()) die("open_soft_device " + address + ": " + d.error().message);
  return std::move(d).value();
}

// The fromEngine ring's bytes (8-byte aligned): the subscriber writes
// records, the same thread reads them back, as the engine and JS would.
constexpr std::int64_t kRingCapacity = 1 << 22;
std::vector<std::uint64_t> ring_memory() {
  return std::vector<std::uint64_t>(static_cast<std::size_t>(engine::RingView::total_length(kRingCapacity)) / 8 + 1, 0);
}

void run_sub(const bench::Args& a, std::uint32_t group, Shared& sh) {
  bench::pin_cpu(static_cast<int>(a.num("sub-cpu", 0)));
  auto dev = open_device(a.str("sub-addr", "127.78.0.2"));
  feed::SubscriberConfig c;
  c.id = 1;
  feed::SubscriberChannelConfig ch;
  ch.id = kChannel;
  ch.group_a = group;
  c.channels.push_back(ch);
  c.max_frame_bytes = static_cast<std::size_t>(a.num("frame", feed::kDefaultFrameBytes));
  c.recv_slots = static_cast<std::uint32_t>(a.num("recv-slots", 1024));
  auto s = feed::Subscriber::create(*dev, c);
  if (!s.ok()) die("Subscriber::create: " + s.error().message);
  auto sub = std::move(s).value();
  auto memory = ring_memory();
  engine::RingView view(reinterpret_cast<std::byte*>(memory.data()), kRingCapacity);
  engine::SpscProducer producer(view);
  engine::SpscConsumer consumer(view);
  sh.ready.store(1);

  auto on_record = [&](std::int32_t type, const std::byte* payload, std::int32_t length) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(payload);
    if (type == feed::records::kFeedGap) {
      sh.gap_messages += feed::load_le<std::uint64_t>(p + 16);
      return true;
    }
    if (type != feed::records::kFeedFrame) return true;
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t from = sh.measure_from.load(std::memory_order_relaxed);
    const std::uint16_t skip = feed::load_le<std::uint16_t>(p + 18);
    auto parsed = feed::parse_frame(std::span<const std::uint8_t>(p + feed::records::kFrameRecordHeaderBytes,
                                                                   static_cast<std::size_t>(length) -
                                                                       feed::records::kFrameRecordHeaderBytes));
    if (!parsed.ok()) {
      ++sh.rejected;
      return true;
    }
    std::uint16_t index = 0;
    for (const feed::Message m : *parsed) {
      if (index++ < skip || m.body.size() < 16) continue;
      const std::uint64_t due = feed::load_le<std::uint64_t>(m.body.data());
      const std::uint64_t called = feed::load_le<std::uint64_t>(m.body.data() + 8);
      if (from == 0 || called < from) continue;
      const std::uint64_t lat = now > due ? now - due : 0;
      sh.latency.record(lat);
      sh.latency_sum_ns += lat;
      const std::uint64_t transit = now > called ? now - called : 0;
      sh.transit.record(transit);
      sh.transit_sum_ns += transit;
      if (sh.received == 0) sh.first_ns = now;
      sh.last_ns = now;
      ++sh.received;
    }
    return true;
  };
  while (sh.stop.load(std::memory_order_relaxed) == 0) {
    const std::uint64_t now = monotonic_ns();
    dev->do_work(static_cast<std::int64_t>(now));
    sub->do_work(now, producer);
    producer.publish();
    consumer.read(on_record);
  }
  sh.ring_full_drops = sub->stats()->ring_full_drops.get();
  sh.done.store(1);
}

// The message of one tick: header + body; the body starts with the due time
// and the time of the publish() call.
void write_tick(std::uint8_t* out, std::size_t body, std::uint32_t instrument, std::uint64_t due, std::uint64_t called) {
  feed::MessageHeaderRef(out).set(static_cast<std::uint16_t>(feed::kMessageHeaderBytes + body),
                                  static_cast<std::uint16_t>(feed::MessageType::kQuote), instrument, 0, 0);
  feed::store_le<std::uint64_t>(out + feed::kMessageHeaderBytes, due);
  feed::store_le<std::uint64_t>(out + feed::kMessageHeaderBytes + 8, called);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Args a(argc, argv);
  const double rate = a.real("rate", 0);
  const double seconds = a.real("seconds", 1.0);
  const double warmup = a.real("warmup", 0.2);
  const auto body = static_cast<std::size_t>(a.num("body", 36));
  const auto frame = static_cast<std::size_t>(a.num("frame", feed::kDefaultFrameBytes));
  auto group = verbs::ipv4_parse(a.str("group", "239.78.0.1"));
  if (!group) die("--group: not an IPv4 address");
  if (body < 16 || body > 512) die("--body 16..512");
  signal(SIGPIPE, SIG_IGN);

  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) die("mmap");
  auto* sh = new (mem) Shared();
  const pid_t kid = fork();
  if (kid < 0) die("fork");
  if (kid == 0) {
    run_sub(a, *group, *sh);
    std::_Exit(0);
  }
  for (int i = 0; i < 5000 && sh->ready.load() == 0; ++i) usleep(1000);
  if (sh->ready.load() == 0) die("the subscriber did not start");

  bench::pin_cpu(static_cast<int>(a.num("sender-cpu", 1)));
  auto dev = open_device(a.str("pub-addr", "127.78.0.1"));
  feed::PublisherConfig pc;
  feed::PublisherChannelConfig ch;
  ch.id = kChannel;
  ch.group_a = *group;
  ch.frame_bytes = frame;
  pc.channels.push_back(ch);
  pc.send_slots = static_cast<std::uint32_t>(a.num("send-slots", 256));
  auto p = feed::Publisher::create(*dev, pc, monotonic_ns());
  if (!p.ok()) die("Publisher::create: " + p.error().message);
  auto pub = std::move(p).value();

  // Unpaced: up to 32 frames' worth of ticks per pass (do_work posts them in
  // one batch, the device sends them in one sendmmsg, like the C anchor's
  // 32 datagrams per call); paced: every tick due.
  const std::size_t tick_bytes = feed::kMessageHeaderBytes + body;
  const std::size_t per_frame = (frame - feed::kFrameHeaderBytes) / tick_bytes;
  std::vector<std::uint8_t> tick(tick_bytes, 0x5a);
  const double interval_ns = rate > 0 ? 1e9 / rate : 0;
  const std::uint64_t t0 = monotonic_ns();
  const std::uint64_t measure_from = t0 + static_cast<std::uint64_t>(warmup * 1e9);
  const std::uint64_t end = measure_from + static_cast<std::uint64_t>(seconds * 1e9);
  sh->measure_from.store(measure_from);
  std::uint64_t i = 0, sent_measured = 0, retries = 0;
  std::uint64_t measured_first = 0, measured_last = 0;
  for (;;) {
    const std::uint64_t now = monotonic_ns();
    if (now >= end) break;
    std::size_t n = 0;
    for (;;) {
      std::uint64_t due;
      if (rate > 0) {
        due = t0 + static_cast<std::uint64_t>(static_cast<double>(i) * interval_ns);
        if (due > now) break;
      } else {
        if (n >= 32 * per_frame) break;
        due = now;
      }
      const std::uint64_t called = monotonic_ns();
      write_tick(tick.data(), body, static_cast<std::uint32_t>(1 + i % 1000), due, called);
      const auto st = pub->publish(kChannel, tick, 1, due);
      if (st == feed::PublishStatus::kRetry) {
        ++retries;
        break;  // back-pressure: the tick stays due, latency keeps growing from its due time
      }
      if (st != feed::PublishStatus::kOk) die("publish refused a tick");
      if (called >= measure_from) {
        if (sent_measured == 0) measured_first = now;
        measured_last = now;
        ++sent_measured;
      }
      ++i;
      ++n;
    }
    pub->do_work(monotonic_ns());
    dev->do_work(static_cast<std::int64_t>(monotonic_ns()));
  }
  // Drain: pending frames out, then give the subscriber time to read them.
  for (int k = 0; k < 2000; ++k) {
    pub->do_work(monotonic_ns());
    dev->do_work(static_cast<std::int64_t>(monotonic_ns()));
  }
  usleep(200'000);
  sh->stop.store(1);
  int st = 0;
  waitpid(kid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || sh->done.load() == 0) die("the subscriber failed");

  const auto& ps = *pub->stats();
  const double send_window = static_cast<double>(measured_last - measured_first) / 1e9;
  const double recv_window = static_cast<double>(sh->last_ns - sh->first_ns) / 1e9;
  const double loss =
      sent_measured > 0 ? 1.0 - static_cast<double>(sh->received) / static_cast<double>(sent_measured) : 1.0;
  const double frames = static_cast<double>(ps.channels[0].frames.get());
  const double transit_mean_us =
      sh->received > 0 ? static_cast<double>(sh->transit_sum_ns) / static_cast<double>(sh->received) / 1000.0 : 0;
  const double mean_us = sh->received > 0 ? static_cast<double>(sh->latency_sum_ns) / static_cast<double>(sh->received) / 1000.0 : 0;
  std::printf(
      "RESULT {\"bench\":\"feed_native\",\"rate\":%.0f,\"body\":%zu,\"frame\":%zu,\"clock\":\"CLOCK_MONOTONIC\","
      "\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"sent_per_s\":%.0f,\"recv_per_s\":%.0f,\"loss\":%.6f,"
      "\"gap_messages\":%" PRIu64 ",\"ring_full_drops\":%" PRIu64 ",\"rejected\":%" PRIu64 ",\"retries\":%" PRIu64
      ",\"ticks_per_frame\":%.2f,\"datagram_full\":%zu,\"seconds\":%.3f,%s,\"transit_p50\":%.3f,\"transit_p99\":%.3f,\"transit_mean\":%.3f}\n",
      rate, body, frame, sent_measured, sh->received, send_window > 0 ? static_cast<double>(sent_measured) / send_window : 0,
      recv_window > 0 ? static_cast<double>(sh->received) / recv_window : 0, loss, sh->gap_messages, sh->ring_full_drops,
      sh->rejected, retries, frames > 0 ? static_cast<double>(ps.channels[0].messages.get()) / frames : 0,
      feed::kFrameHeaderBytes + per_frame * tick_bytes + 24, send_window, bench::latency_json(sh->latency, mean_us).c_str(),
      bench::percentile_us(sh->transit, 50), bench::percentile_us(sh->transit, 99), transit_mean_us);
  return 0;
}
