// What the order handler did to each order, for a handler plugged in from
// JS (src/orders/handler.ts): accepted, replaced, filled, cancelled — in the
// gateway's processing order, each once, after the journal has it.
//
// The handler reports one OrderEvent per step into the OutBuffer (live and
// replay alike; the service ignores those of a replay, so a restart hands JS
// only what was accepted since). The service queues them behind the
// journal's durable position like every answer, and hands the durable ones
// to a sink once per duty cycle — the order agent writes them into the
// fromEngine ring as kOrderEvents records (docs/protocol.md 3.7).
//
// A JS handler that falls behind is the order handler falling behind: the
// queued events count towards the service's back-pressure bound, so
// receives stop being re-posted and clients meet RNR NAKs. Nothing is
// dropped, and events are only queued while a sink is attached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "orders/types.h"

namespace qpgate::orders {

enum class OrderEventKind : std::uint8_t {
  kAccepted = 1,   // Ack sent: a new order, at its full quantity
  kReplaced = 2,   // ReplaceAck sent: price and quantity are the new ones
  kFilled = 3,     // one side of a trade: quantity traded, leaves after it
  kCancelled = 4,  // CancelAck sent (requested or unsolicited: see cancel_reason)
};

struct OrderEvent {
  OrderEventKind kind = OrderEventKind::kAccepted;
  Side side = Side::kUnspecified;
  TimeInForce time_in_force = TimeInForce::kUnspecified;
  CancelReason cancel_reason = CancelReason::kUnspecified;
  std::uint32_t session = 0;
  std::uint32_t instrument_id = 0;
  std::uint64_t order_id = 0;          // the gateway's
  std::uint64_t client_order_id = 0;   // of the request (a fill's: the order's)
  std::uint64_t orig_client_order_id = 0;  // cancel/replace: the order acted on; else = client_order_id
  std::uint64_t account = 0;
  std::int64_t price = 0;              // accepted/replaced: limit; filled: trade price; cancelled: limit
  std::int64_t quantity = 0;           // accepted/replaced: order quantity; filled: traded; cancelled: cancelled
  std::int64_t leaves = 0;             // open quantity after this step
  std::uint64_t trade_id = 0;          // filled only
  std::uint64_t app_seq = 0;           // of the answer sent to the session
};

// fromEngine record layout (little-endian): a header, then `count` events.
namespace order_event_record {
// The record type (the ring's int32 `type`; src/native/engine.ts has the same number).
inline constexpr std::int32_t kOrderEvents = 24;
inline constexpr std::size_t kHeaderBytes = 8;   // u32 service id, u32 count
inline constexpr std::size_t kEventBytes = 96;  // see encode_order_events() in order_events.cc
inline constexpr std::size_t kMaxPerRecord = 64;
}  // namespace order_event_record

// Writes `events` as one record body into `out` (kHeaderBytes + n * kEventBytes
// bytes), each stamped with `released_ns`.
void encode_order_events(std::uint32_t service_id, std::span<const OrderEvent> events, std::uint64_t released_ns,
                         std::uint8_t* out) noexcept;

// Takes a batch of durable events; false = no room now (keep them for the next cycle).
using OrderEventSink = std::function<bool(std::span<const OrderEvent> events)>;

// FIFO of events waiting for the journal (and for room in the sink). After
// warm-up nothing allocates: the storage is reused once drained.
class OrderEventQueue {
 public:
  void push(const OrderEvent& e, std::uint64_t durable) { queue_.push_back({e, durable}); }
  // Hands the durable events to `sink` in batches of at most kMaxPerRecord;
  // returns how many it took.
  std::size_t release(std::uint64_t durable_position, const OrderEventSink& sink);
  std::size_t size() const noexcept { return queue_.size() - head_; }
  void clear() noexcept {
    queue_.clear();
    head_ = 0;
  }

 private:
  struct Queued {
    OrderEvent event;
    std::uint64_t durable;
  };
  std::vector<Queued> queue_;
  std::size_t head_ = 0;
  std::vector<OrderEvent> batch_;
};

}  // namespace qpgate::orders
