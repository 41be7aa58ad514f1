#include "feed/arbiter.h"

#include <algorithm>

namespace qpgate::feed {

void Arbiter::deliver(Line line, const ParsedFrame& f, ArbiterSink& sink) {
  const std::uint64_t first = f.header().first_seq();
  const auto skip = static_cast<std::uint16_t>(expected_ > first ? expected_ - first : 0);
  expected_ = f.header().end_seq();
  ++of(line).won;
  sink.deliver(line, f, skip);
}

void Arbiter::drain(ArbiterSink& sink) {
  while (!held_.empty() && held_.begin()->first <= expected_) {
    auto node = held_.extract(held_.begin());
    const auto parsed = parse_frame(node.mapped().bytes);  // was valid when held
    if (parsed->header().end_seq() > expected_) {
      deliver(node.mapped().line, *parsed, sink);
    } else {
      ++of(node.mapped().line).duplicates;
    }
  }
}

void Arbiter::declare_lost(std::uint64_t up_to, ArbiterSink& sink) {
  if (up_to > expected_) {
    ++counters_.gaps;
    counters_.gap_messages += up_to - expected_;
    sink.gap(expected_, up_to - expected_);
    expected_ = up_to;
  }
  drain(sink);
}

void Arbiter::update_timer(std::uint64_t now_ns) {
  const bool hole = !held_.empty() || horizon_ > expected_;
  if (!hole) {
    wait_since_ = 0;
  } else if (wait_since_ == 0) {
    wait_since_ = std::max<std::uint64_t>(now_ns, 1);
  }
}

void Arbiter::on_frame(Line line, const ParsedFrame& f, std::uint64_t now_ns, ArbiterSink& sink) {
  const FrameHeaderView h = f.header();
  if (h.session() != session_) {
    if (h.session() == previous_session_) {
      ++of(line).other_session_frames;
      return;
    }
    if (session_ != 0) ++counters_.session_changes;
    const std::uint32_t old = session_;
    previous_session_ = session_;
    session_ = h.session();
    held_.clear();
    expected_ = h.first_seq();
    horizon_ = h.end_seq();
    wait_since_ = 0;
    sink.session_change(old, session_, expected_);
  }
  horizon_ = std::max(horizon_, h.end_seq());

  if (h.is_control()) {
    ++of(line).heartbeats;
  } else if (h.end_seq() <= expected_) {
    ++of(line).duplicates;
  } else if (h.first_seq() <= expected_) {
    const bool had_hole = wait_since_ != 0;
    deliver(line, f, sink);
    drain(sink);
    if (had_hole) wait_since_ = 0;  // the hole was filled; a next one gets its own time
  } else if (held_.contains(h.first_seq())) {
    ++of(line).duplicates;
  } else {
    ++of(line).held;
    held_.emplace(h.first_seq(), Held{line, std::vector<std::uint8_t>(f.bytes().begin(), f.bytes().end())});
    if (held_.size() > config_.window_frames) declare_lost(held_.begin()->first, sink);
  }
  update_timer(now_ns);
}

void Arbiter::poll(std::uint64_t now_ns, ArbiterSink& sink) {
  if (wait_since_ == 0 || now_ns - wait_since_ < config_.max_wait_ns) return;
  declare_lost(held_.empty() ? horizon_ : held_.begin()->first, sink);
  wait_since_ = 0;
  update_timer(now_ns);
}

}  // namespace qpgate::feed
