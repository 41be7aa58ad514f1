// Record types carried by the engine's rings (the int32 `type` of a record,
// see spsc_ring.h). Positive; -1 is the ring's padding. src/native/engine.ts
// has the same numbers under the same names.
//
// Routing: the command agent (command_agent.h) reads toEngine and hands each
// record to the handler registered for its type (ECHO is its own); JS routes
// fromEngine records by type to the handlers subscribed for it
// (Engine.onRecord in src/native/engine.ts). Payload layouts of the feed
// records are in docs/protocol.md 2.11; all their integers are little-endian.
#pragma once

#include <cstdint>

namespace qpgate::engine::record_type {

// toEngine: payload bytes to send back. fromEngine: the same bytes followed
// by the engine's receive time, uint64 CLOCK_MONOTONIC ns, host byte order.
inline constexpr std::int32_t kEcho = 1;

// Types below this bound are dispatched through a flat table (O(1)).
inline constexpr std::int32_t kMaxRoutedType = 64;

// ---- feed (native/src/feed/feed_agent.h; docs/protocol.md 2.11)
// toEngine: messages for one channel of one publisher.
inline constexpr std::int32_t kFeedPublish = 16;
// fromEngine: one live frame delivered in order by a subscriber.
inline constexpr std::int32_t kFeedFrame = 17;
// fromEngine: a range lost on every line (unrecoverable until recovery lands).
inline constexpr std::int32_t kFeedGap = 18;
// fromEngine: a channel's session changed (or was first seen).
inline constexpr std::int32_t kFeedSession = 19;

// ---- orders (native/src/orders/order_events.h; docs/protocol.md 3.7)
// fromEngine: durable order events of one order service (accepted, replaced,
// filled, cancelled), for a JS order handler.
inline constexpr std::int32_t kOrderEvents = 24;

}  // namespace qpgate::engine::record_type
