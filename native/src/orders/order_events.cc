#include "orders/order_events.h"

#include <algorithm>

#include "feed/le.h"

namespace qpgate::orders {

// One event, 96 bytes (docs/protocol.md 3.7):
//    0 u8 kind   1 u8 side   2 u8 time_in_force   3 u8 cancel_reason
//    4 u32 session   8 u32 instrument_id   12 u32 zero
//   16 u64 order_id   24 u64 client_order_id   32 u64 orig_client_order_id
//   40 u64 account   48 i64 price   56 i64 quantity   64 i64 leaves
//   72 u64 trade_id   80 u64 app_seq   88 u64 released_ns (CLOCK_MONOTONIC)
void encode_order_events(std::uint32_t service_id, std::span<const OrderEvent> events, std::uint64_t released_ns,
                         std::uint8_t* out) noexcept {
  using feed::store_le;
  store_le<std::uint32_t>(out, service_id);
  store_le<std::uint32_t>(out + 4, static_cast<std::uint32_t>(events.size()));
  std::uint8_t* p = out + order_event_record::kHeaderBytes;
  for (const OrderEvent& e : events) {
    p[0] = static_cast<std::uint8_t>(e.kind);
    p[1] = static_cast<std::uint8_t>(e.side);
    p[2] = static_cast<std::uint8_t>(e.time_in_force);
    p[3] = static_cast<std::uint8_t>(e.cancel_reason);
    store_le<std::uint32_t>(p + 4, e.session);
    store_le<std::uint32_t>(p + 8, e.instrument_id);
    store_le<std::uint32_t>(p + 12, 0);
    store_le<std::uint64_t>(p + 16, e.order_id);
    store_le<std::uint64_t>(p + 24, e.client_order_id);
    store_le<std::uint64_t>(p + 32, e.orig_client_order_id);
    store_le<std::uint64_t>(p + 40, e.account);
    store_le<std::int64_t>(p + 48, e.price);
    store_le<std::int64_t>(p + 56, e.quantity);
    store_le<std::int64_t>(p + 64, e.leaves);
    store_le<std::uint64_t>(p + 72, e.trade_id);
    store_le<std::uint64_t>(p + 80, e.app_seq);
    store_le<std::uint64_t>(p + 88, released_ns);
    p += order_event_record::kEventBytes;
  }
}

std::size_t OrderEventQueue::release(std::uint64_t durable_position, const OrderEventSink& sink) {
  std::size_t taken = 0;
  while (head_ < queue_.size() && queue_[head_].durable <= durable_position) {
    batch_.clear();
    std::size_t i = head_;
    while (i < queue_.size() && queue_[i].durable <= durable_position &&
           batch_.size() < order_event_record::kMaxPerRecord) {
      batch_.push_back(queue_[i].event);
      ++i;
    }
    if (!sink(batch_)) break;
    taken += i - head_;
    head_ = i;
  }
  if (head_ == queue_.size()) {
    clear();  // drained: reuse the storage from its start
  } else if (head_ >= 4096 && head_ * 2 >= queue_.size()) {
    // Never drained under a steady load: drop the consumed half so the storage stays bounded.
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  return taken;
}

}  // namespace qpgate::orders
