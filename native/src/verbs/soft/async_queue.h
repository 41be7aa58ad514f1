// The soft device's asynchronous event queue (what ibv_get_async_event
// reads). Bounded: when it is full the newest event is dropped and counted,
// never blocking the engine; dropped() says how many were lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "verbs/async_event.h"

namespace qpgate::verbs::soft {

class AsyncEventQueue {
 public:
  explicit AsyncEventQueue(std::size_t capacity = 1024) : capacity_(capacity) {}

  // False (and dropped() grows) when the queue is full.
  bool push(const AsyncEvent& e);
  bool push(EventType type, std::uint32_t element_id, std::uint64_t context = 0);
  std::optional<AsyncEvent> pop();

  std::size_t size() const { return q_.size(); }
  bool empty() const { return q_.empty(); }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t pushed() const { return pushed_; }

 private:
  std::size_t capacity_;
  std::deque<AsyncEvent> q_;
  std::uint64_t dropped_ = 0;
  std::uint64_t pushed_ = 0;
};

}  // namespace qpgate::verbs::soft
