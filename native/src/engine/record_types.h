// Record types carried by the engine's rings (the int32 `type` of a record,
// see spsc_ring.h). Positive; -1 is the ring's padding. src/native/engine.ts
// has the same numbers under the same names.
//
// Routing: the command agent (command_agent.h) reads toEngine and hands each
// record to the handler registered for its type (ECHO is its own); JS routes
// fromEngine records by type to the handlers subscribed for it
// (Engine.onRecord in src/native/engine.ts).
#pragma once

#include <cstdint>

namespace qpgate::engine::record_type {

// toEngine: payload bytes to send back. fromEngine: the same bytes followed
// by the engine's receive time, uint64 CLOCK_MONOTONIC ns, host byte order.
inline constexpr std::int32_t kEcho = 1;

// fromEngine: one async event of an ibv device (DeviceEventsAgent), 24 bytes
// little-endian: u32 ibv_event_type, u32 element kind (verbs::EventElement:
// 0 device, 1 port, 2 QP, 3 CQ, 4 SRQ), u32 element id (port number, QPN,
// CQ or SRQ handle), u32 the device's kernel index (verbs::Device::index:
// QPNs are per device), u64 the element's context.
inline constexpr std::int32_t kDeviceEvent = 2;
inline constexpr std::int32_t kDeviceEventBytes = 24;

// Types below this bound are dispatched through a flat table (O(1)).
inline constexpr std::int32_t kMaxRoutedType = 64;

// The types of the engine's clients are theirs: the feed's in
// feed/feed_records.h, order entry's in orders/order_events.h. The gateway's
// engine builder (gateway/engine_agents.cc) checks they are distinct and
// below kMaxRoutedType.

}  // namespace qpgate::engine::record_type
