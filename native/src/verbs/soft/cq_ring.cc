#include "verbs/soft/cq_ring.h"

#include <string>

namespace qpgate::verbs::soft {

CqRing::CqRing(std::uint32_t depth, std::uint32_t handle, std::uint64_t context, AsyncEventQueue* events)
    : ring_(depth == 0 ? 1 : depth), handle_(handle), context_(context), events_(events) {}

bool CqRing::push(const Wc& wc) {
  if (overflowed_ || count_ == ring_.size()) {
    ++lost_;
    if (!overflowed_) {
      overflowed_ = true;
      if (events_ != nullptr) events_->push(EventType::CQ_ERR, handle_, context_);
    }
    return false;
  }
  const auto tail = static_cast<std::uint32_t>((head_ + count_) % ring_.size());
  ring_[tail] = wc;
  ++count_;
  return true;
}

Result<std::size_t> CqRing::poll(std::span<Wc> out) {
  std::size_t n = 0;
  while (n < out.size() && count_ > 0) {
    out[n++] = ring_[head_];
    head_ = static_cast<std::uint32_t>((head_ + 1) % ring_.size());
    --count_;
  }
  if (n == 0 && overflowed_) {
    return Error{EOVERFLOW, "CQ " + std::to_string(handle_) + " overflowed (depth " + std::to_string(ring_.size()) +
                                "): " + std::to_string(lost_) + " completions were lost"};
  }
  return n;
}

}  // namespace qpgate::verbs::soft
