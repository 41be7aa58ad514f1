// An asynchronous event (ibv_async_event): something that happened to a QP,
// CQ, SRQ, port or the device outside any work request — a QP went to the
// error state, an SRQ fell below its limit, a CQ overflowed, a port went down.
// They reach JS as events and metrics (engine/device_events_agent.h, src/native/verbs.ts).
#pragma once

#include <cstdint>

#include "verbs/types.h"

namespace qpgate::verbs {

// Which kind of object `element_id` names (ibv_async_event's union member).
enum class EventElement : std::uint8_t { DEVICE, PORT, QP, CQ, SRQ };

struct AsyncEvent {
  EventType event_type = EventType::DEVICE_FATAL;
  EventElement element = EventElement::DEVICE;
  std::uint32_t element_id = 0;  // QPN, CQ handle, SRQ handle or port number
  std::uint64_t context = 0;     // the qp_context/cq_context given at creation

  bool operator==(const AsyncEvent&) const = default;
};

// The element kind an event type is about (QP_FATAL → QP, PORT_ERR → PORT).
EventElement event_element_of(EventType e);

}  // namespace qpgate::verbs
