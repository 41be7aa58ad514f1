#include "verbs/soft/async_queue.h"

namespace qpgate::verbs::soft {

bool AsyncEventQueue::push(const AsyncEvent& e) {
  if (q_.size() >= capacity_) {
    ++dropped_;
    return false;
  }
  q_.push_back(e);
  ++pushed_;
  return true;
}

bool AsyncEventQueue::push(EventType type, std::uint32_t element_id, std::uint64_t context) {
  return push(AsyncEvent{type, event_element_of(type), element_id, context});
}

std::optional<AsyncEvent> AsyncEventQueue::pop() {
  if (q_.empty()) return std::nullopt;
  AsyncEvent e = q_.front();
  q_.pop_front();
  return e;
}

}  // namespace qpgate::verbs::soft
