#include "feed/gap_detector.h"

namespace qpgate::feed {

void GapDetector::resync(std::uint32_t session, std::uint64_t next_seq) {
  session_ = session;
  expected_ = next_seq;
}

SeqResult GapDetector::on_frame(std::uint32_t session, std::uint64_t first_seq, std::uint16_t count) {
  SeqResult r;
  const std::uint64_t end = first_seq + count;
  if (session_ == 0 || session != session_) {
    r.verdict = session_ == 0 ? SeqVerdict::kFirst : SeqVerdict::kSessionChange;
    if (session_ != 0) ++counters_.session_changes;
    session_ = session;
    expected_ = end;
    return r;
  }
  if (first_seq == expected_) {
    r.verdict = SeqVerdict::kInOrder;
    ++counters_.in_order;
    expected_ = end;
  } else if (first_seq > expected_) {
    r.verdict = SeqVerdict::kGap;
    r.gap_from = expected_;
    r.gap_count = first_seq - expected_;
    ++counters_.gaps;
    counters_.gap_messages += r.gap_count;
    expected_ = end;
  } else if (end <= expected_) {
    r.verdict = SeqVerdict::kDuplicate;  // includes a heartbeat behind us (count 0)
    ++counters_.duplicates;
  } else {
    r.verdict = SeqVerdict::kOverlap;
    r.skip = static_cast<std::uint16_t>(expected_ - first_seq);
    ++counters_.overlaps;
    expected_ = end;
  }
  return r;
}

}  // namespace qpgate::feed
