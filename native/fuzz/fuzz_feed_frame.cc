// fuzz_feed_frame: arbitrary bytes into the feed frame parser, with the
// invariants that make a parsed frame safe to act on:
//   - every message view lies inside the frame, and the frame inside the input;
//   - message lengths sum exactly to frame_length, and there are message_count of them;
//   - re-packing the parsed fields reproduces the frame byte for byte;
//   - the ring, gap detector, arbiter and snapshot store accept what the parser accepted.
// The input is tried as one UD payload (exact) and as frames back to back (prefix).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "feed/arbiter.h"
#include "feed/frame.h"
#include "feed/gap_detector.h"
#include "feed/retransmit_ring.h"
#include "feed/snapshot_store.h"

namespace {

using namespace qpgate::feed;  // NOLINT(google-build-using-namespace)

void check(bool ok) {
  if (!ok) std::abort();
}

struct NullSink : ArbiterSink {
  void deliver(Line, const ParsedFrame& f, std::uint16_t skip) override { check(skip <= f.message_count()); }
  void gap(std::uint64_t, std::uint64_t count) override { check(count > 0); }
  void session_change(std::uint32_t, std::uint32_t, std::uint64_t) override {}
};

void check_frame(const ParsedFrame& f, std::span<const std::uint8_t> in) {
  const FrameHeaderView h = f.header();
  check(f.bytes().data() == in.data() && f.bytes().size() == h.frame_length() && f.bytes().size() <= in.size());
  std::size_t total = kFrameHeaderBytes;
  std::uint16_t n = 0;
  for (const Message& m : f) {
    check(m.bytes.data() >= in.data() && m.bytes.data() + m.bytes.size() <= f.bytes().data() + f.bytes().size());
    check(m.body.data() == m.bytes.data() + kMessageHeaderBytes && m.body.size() + kMessageHeaderBytes == m.bytes.size());
    check(m.seq == h.first_seq() + n);
    check(m.header.type() != 0);
    total += m.bytes.size();
    ++n;
  }
  check(n == h.message_count() && total == h.frame_length());

  // Round trip through the fields.
  std::vector<std::uint8_t> out;
  if (h.is_control()) {
    out.resize(kFrameHeaderBytes);
    encode_control_frame(out, h.flags(), h.channel(), h.session(), h.first_seq(), h.send_time_ns());
  } else {
    FramePacker p(kMaxFrameBytes);
    p.start(h.channel(), h.session(), h.flags());
    for (const Message& m : f) {
      check(p.append({m.type(), m.instrument_id(), m.key(), m.action()}, m.body) == AppendStatus::kOk);
    }
    const auto b = p.finish(h.first_seq(), h.send_time_ns());
    out.assign(b.begin(), b.end());
  }
  check(out.size() == f.bytes().size() && std::memcmp(out.data(), f.bytes().data(), out.size()) == 0);
  check(parse_frame(out).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  FrameCounters counters;
  const auto exact = parse_frame(in);
  counters.count(exact);
  if (exact.ok()) {
    check(exact->bytes().size() == size);
    check_frame(*exact, in);
  }

  // Back to back, as frames inside a recovery reply would be.
  static RetransmitRing ring({.max_frames = 64, .max_bytes = 16384});
  static SnapshotStore store(1, 1, {.slot_bytes = 128, .slot_count = 64});
  GapDetector gaps;
  Arbiter arbiter({.window_frames = 4, .max_wait_ns = 10});
  NullSink sink;
  std::span<const std::uint8_t> rest = in;
  std::uint64_t now = 1;
  while (!rest.empty()) {
    const auto f = parse_frame(rest, ParseMode::kPrefix);
    counters.count(f);
    if (!f.ok()) break;
    check_frame(*f, rest);
    const bool snapshot = (f->header().flags() & flags::kSnapshot) != 0;
    if (!snapshot) {
      (void)gaps.on_frame(f->header());
      arbiter.on_frame((now & 1) ? Line::kA : Line::kB, *f, now, sink);
      arbiter.poll(now += 7, sink);
      (void)ring.append(f->bytes());
      (void)store.apply_frame(*f);
    }
    rest = rest.subspan(f->bytes().size());
  }
  const auto r = ring.lookup(ring.oldest_seq(), 10);
  for (const auto& fr : r.frames) check(parse_frame(fr).ok());
  std::vector<std::uint8_t> slot(store.slot_bytes());
  for (std::size_t i = 0; i < store.slots_used(); ++i) check(store.read_slot(i, slot) == SlotCheck::kOk);
  return 0;
}
