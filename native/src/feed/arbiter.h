// A/B line arbitration (docs/protocol.md 2.7), as CME MDP 3.0 feeds A and B:
// both lines carry identical frames; the first copy of a sequence wins and
// the other copy is dropped and counted. A frame that arrives ahead of the
// expected sequence is held (copied) in a bounded window for the other line to
// fill the hole; when the window overflows or the hole is older than
// max_wait_ns, the hole is declared lost on both lines (a gap to recover over
// RC) and the held frames are released in order.
//
// Single-threaded (the subscriber's engine thread). Heartbeat frames advance
// the known horizon (the publisher's next sequence) so a loss at the tail is
// seen too; end-of-session frames are treated as heartbeats.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "feed/frame.h"

namespace qpgate::feed {

enum class Line : std::uint8_t { kA = 0, kB = 1 };
inline constexpr std::size_t kLineCount = 2;
constexpr std::string_view line_name(Line l) { return l == Line::kA ? "a" : "b"; }

struct ArbiterConfig {
  std::size_t window_frames = 64;        // held out-of-order frames before the hole is declared lost
  std::uint64_t max_wait_ns = 1'000'000;  // how long a hole may wait for the other line
};

// What the arbiter tells its owner, in order.
class ArbiterSink {
 public:
  virtual ~ArbiterSink() = default;
  // A frame to process, once per sequence; its first `skip` messages were already delivered.
  virtual void deliver(Line line, const ParsedFrame& frame, std::uint16_t skip) = 0;
  // [from, from + count) was lost on both lines: recover it (retransmission or snapshot).
  virtual void gap(std::uint64_t from, std::uint64_t count) = 0;
  // A new session (old = 0 for the first frame ever): resynchronise from a
  // snapshot unless next_seq == 1.
  virtual void session_change(std::uint32_t old_session, std::uint32_t new_session, std::uint64_t next_seq) = 0;
};

class Arbiter {
 public:
  explicit Arbiter(ArbiterConfig config = {}) : config_(config) {}

  // A validated live frame from one line (snapshot frames are not live).
  void on_frame(Line line, const ParsedFrame& frame, std::uint64_t now_ns, ArbiterSink& sink);
  // Declares a hole lost once it has waited max_wait_ns. Call from the duty cycle.
  void poll(std::uint64_t now_ns, ArbiterSink& sink);

  std::uint32_t session() const { return session_; }
  std::uint64_t expected() const { return expected_; }
  std::size_t held() const { return held_.size(); }

  struct LineCounters {
    std::uint64_t won = 0;            // frames delivered from this line (directly or after being held)
    std::uint64_t duplicates = 0;     // copies dropped because the other line (or this one) was first
    std::uint64_t held = 0;           // frames that arrived ahead of a hole
    // Frames of the session it left: a restarted gateway's last ones, or,
    // if they keep coming, a second gateway publishing on the same group.
    std::uint64_t other_session_frames = 0;
    std::uint64_t heartbeats = 0;
  };
  struct Counters {
    LineCounters line[kLineCount];
    std::uint64_t gaps = 0;          // holes lost on both lines
    std::uint64_t gap_messages = 0;
    std::uint64_t session_changes = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Held {
    Line line;
    std::vector<std::uint8_t> bytes;
  };
  LineCounters& of(Line l) { return counters_.line[static_cast<std::size_t>(l)]; }
  void deliver(Line line, const ParsedFrame& f, ArbiterSink& sink);
  void drain(ArbiterSink& sink);
  void declare_lost(std::uint64_t up_to, ArbiterSink& sink);
  void update_timer(std::uint64_t now_ns);

  ArbiterConfig config_;
  std::uint32_t session_ = 0;
  std::uint32_t previous_session_ = 0;
  std::uint64_t expected_ = 0;
  std::uint64_t horizon_ = 0;      // highest next-sequence any frame or heartbeat has shown
  std::uint64_t wait_since_ = 0;   // when the current hole was first seen (0 = no hole)
  std::map<std::uint64_t, Held> held_;  // by first_seq
  Counters counters_;
};

}  // namespace qpgate::feed
