// Per-channel gap detection on live frames (docs/protocol.md 2.7): the next
// expected sequence, and what each arriving frame means for it. Snapshot
// frames are not live and must not be passed in.
#pragma once

#include <cstdint>
#include <string_view>

#include "feed/frame.h"

namespace qpgate::feed {

enum class SeqVerdict : std::uint8_t {
  kFirst,          // first frame seen: the detector synchronised on it (a snapshot is needed unless first_seq == 1)
  kInOrder,        // first_seq == expected (heartbeats: next_seq == expected)
  kDuplicate,      // entirely before expected: drop
  kOverlap,        // starts before expected, ends after: deliver from message `skip` on
  kGap,            // starts after expected: [gap_from, gap_from + gap_count) is missing; frame delivered
  kSessionChange,  // a new session: everything known is void; resynchronise (snapshot) and deliver
};

constexpr std::string_view seq_verdict_name(SeqVerdict v) {
  switch (v) {
    case SeqVerdict::kFirst: return "first";
    case SeqVerdict::kInOrder: return "in_order";
    case SeqVerdict::kDuplicate: return "duplicate";
    case SeqVerdict::kOverlap: return "overlap";
    case SeqVerdict::kGap: return "gap";
    case SeqVerdict::kSessionChange: return "session_change";
  }
  return "unknown";
}

struct SeqResult {
  SeqVerdict verdict = SeqVerdict::kFirst;
  std::uint64_t gap_from = 0;   // kGap
  std::uint64_t gap_count = 0;  // kGap
  std::uint16_t skip = 0;       // kOverlap: messages at the head already seen
};

class GapDetector {
 public:
  // A frame of `count` messages from first_seq (count 0 and first_seq = next
  // sequence for heartbeat / end-of-session frames).
  SeqResult on_frame(std::uint32_t session, std::uint64_t first_seq, std::uint16_t count);
  SeqResult on_frame(FrameHeaderView h) { return on_frame(h.session(), h.first_seq(), h.message_count()); }

  // After a snapshot or a recovery: continue at next_seq of `session`.
  void resync(std::uint32_t session, std::uint64_t next_seq);

  bool synced() const { return session_ != 0; }
  std::uint32_t session() const { return session_; }
  std::uint64_t expected() const { return expected_; }

  struct Counters {
    std::uint64_t in_order = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t overlaps = 0;
    std::uint64_t gaps = 0;
    std::uint64_t gap_messages = 0;
    std::uint64_t session_changes = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  std::uint32_t session_ = 0;
  std::uint64_t expected_ = 0;
  Counters counters_;
};

}  // namespace qpgate::feed
