// Helpers for the live feed tests: soft devices on 127.x addresses driven by
// hand (no engine), a local fromEngine ring, and record decoding.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/record_types.h"
#include "engine/spsc_ring.h"
#include "feed/feed_records.h"
#include "feed/frame.h"
#include "feed/le.h"
#include "verbs/soft/soft_device.h"

namespace qpgate::feed::test {

inline std::unique_ptr<verbs::soft::SoftDevice> open_device(const char* address) {
  verbs::soft::SoftDeviceOptions o;
  o.address_or_name = address;
  o.net.probe_ipv4_id = false;
  auto d = verbs::soft::open_soft_device(o);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  return d.ok() ? std::move(d).value() : nullptr;
}

inline std::uint32_t ip4(const char* text) { return *verbs::ipv4_parse(text); }

// Messages as JS writes them into a PUBLISH record: header + body, packed.
inline void add_message(std::vector<std::uint8_t>& out, MessageType type, std::uint32_t instrument,
                        std::size_t body_bytes, std::uint8_t seed) {
  const std::size_t at = out.size();
  out.resize(at + kMessageHeaderBytes + body_bytes);
  MessageHeaderRef(out.data() + at)
      .set(static_cast<std::uint16_t>(kMessageHeaderBytes + body_bytes), static_cast<std::uint16_t>(type), instrument, 0, 0);
  for (std::size_t i = 0; i < body_bytes; ++i) out[at + kMessageHeaderBytes + i] = static_cast<std::uint8_t>(seed + i);
}

// A fromEngine ring in a vector, and the records read back.
struct LocalRing {
  explicit LocalRing(std::int64_t capacity = 1 << 20)
      : memory(static_cast<std::size_t>(engine::RingView::total_length(capacity)) / 8 + 1, 0),
        view(reinterpret_cast<std::byte*>(memory.data()), capacity),
        producer(view),
        consumer(view) {}
  std::vector<std::uint64_t> memory;
  engine::RingView view;
  engine::SpscProducer producer;
  engine::SpscConsumer consumer;
};

struct FrameRecord {
  std::uint32_t subscriber;
  std::uint16_t channel;
  std::uint8_t line;
  std::uint8_t flags;
  std::uint64_t first_seq;
  std::uint16_t count;
  std::uint16_t skip;
  std::uint32_t session;
  std::uint64_t send_time;
  std::uint64_t receive_time;
  std::vector<std::uint8_t> frame;
};
struct GapRecord {
  std::uint16_t channel;
  std::uint64_t from;
  std::uint64_t count;
};
struct SessionRecord {
  std::uint16_t channel;
  std::uint32_t old_session;
  std::uint32_t new_session;
  std::uint64_t next_seq;
};

// One record as the app met it, in ring order: the sequences a frame (past
// its skip) or a gap covers, [from, end), or a session change (new_session).
struct Delivery {
  enum Kind : std::uint8_t { kFrame, kGap, kSession } kind;
  std::uint64_t from = 0, end = 0;
  std::uint32_t new_session = 0;
};

struct Records {
  std::vector<FrameRecord> frames;
  std::vector<GapRecord> gaps;
  std::vector<SessionRecord> sessions;
  std::vector<Delivery> log;
  std::uint64_t messages = 0;

  void read(engine::SpscConsumer& c) {
    c.read([&](std::int32_t type, const std::byte* payload, std::int32_t length) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(payload);
      if (type == records::kFeedFrame) {
        FrameRecord r{load_le<std::uint32_t>(p), load_le<std::uint16_t>(p + 4), p[6], p[7],
                      load_le<std::uint64_t>(p + 8), load_le<std::uint16_t>(p + 16), load_le<std::uint16_t>(p + 18),
                      load_le<std::uint32_t>(p + 20), load_le<std::uint64_t>(p + 24), load_le<std::uint64_t>(p + 32),
                      std::vector<std::uint8_t>(p + records::kFrameRecordHeaderBytes, p + length)};
        messages += r.count - r.skip;
        if ((r.flags & flags::kSnapshot) == 0) log.push_back({Delivery::kFrame, r.first_seq + r.skip, r.first_seq + r.count});
        frames.push_back(std::move(r));
      } else if (type == records::kFeedGap) {
        gaps.push_back({load_le<std::uint16_t>(p + 4), load_le<std::uint64_t>(p + 8), load_le<std::uint64_t>(p + 16)});
        log.push_back({Delivery::kGap, gaps.back().from, gaps.back().from + gaps.back().count});
      } else if (type == records::kFeedSession) {
        sessions.push_back({load_le<std::uint16_t>(p + 4), load_le<std::uint32_t>(p + 8), load_le<std::uint32_t>(p + 12),
                            load_le<std::uint64_t>(p + 16)});
        log.push_back({Delivery::kSession, 0, 0, sessions.back().new_session});
      }
      return true;
    });
  }
  // Every delivered message's sequence, in delivery order.
  std::vector<std::uint64_t> sequences() const {
    std::vector<std::uint64_t> out;
    for (const auto& f : frames) {
      for (std::uint16_t i = f.skip; i < f.count; ++i) out.push_back(f.first_seq + i);
    }
    return out;
  }
  // Live and recovered messages' sequences, in delivery order (snapshot frames left out).
  std::vector<std::uint64_t> live_sequences() const {
    std::vector<std::uint64_t> out;
    for (const auto& f : frames) {
      if ((f.flags & flags::kSnapshot) != 0) continue;
      for (std::uint16_t i = f.skip; i < f.count; ++i) out.push_back(f.first_seq + i);
    }
    return out;
  }
};

// `seqs` is exactly first..last, in order.
inline void expect_contiguous(const std::vector<std::uint64_t>& seqs, std::uint64_t first, std::uint64_t last) {
  ASSERT_EQ(seqs.size(), last - first + 1);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(seqs[i], first + i) << "at delivery " << i;
  }
}

inline void spin_until(const std::function<bool()>& done, const std::function<void()>& step, int timeout_ms = 3000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done() && std::chrono::steady_clock::now() < until) {
    step();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace qpgate::feed::test
