// The agents of a gateway engine, added in the order one duty cycle runs
// them, with what each needs from the others handed in, in this one place:
//
//   1 commands      JS's records: ECHO; FEED_PUBLISH routed to 2 (built into
//                   every Engine, always first)
//   2 feed          publishers frame and post what the records of 1 brought;
//                   recovery sessions answer; subscribers deliver to JS
//   3 orders        order services: sessions, handler, journal; trades and
//                   book changes published on 2's publishers in this cycle
//   4 soft_devices  the soft backend: transmits what 2 and 3 posted (one
//                   sendmmsg per socket), then receives for the next cycle
//   5 device_events devices the hardware drives (ibv): their async events
//                   (port, QP, CQ, SRQ) taken, counted and kept for JS; the
//                   NIC sends what 2 and 3 posted by itself, and 2 and 3
//                   poll their own CQs
//
// So a record from JS leaves the host in the same cycle that read it, and an
// order's answer and its trade leave in the cycle that made them.
#pragma once

#include <cstdint>

#include "engine/device_events_agent.h"
#include "engine/engine.h"
#include "engine/record_types.h"
#include "engine/soft_device_agent.h"
#include "feed/feed_agent.h"
#include "feed/feed_records.h"
#include "orders/order_agent.h"
#include "orders/order_events.h"

namespace qpgate::gateway {

// Every record type of the engine's rings, by the name JS uses for it
// (src/native/engine.ts RecordType, checked against this table by its test).
struct NamedRecordType {
  const char* name;
  std::int32_t type;
};
inline constexpr NamedRecordType kRecordTypes[] = {
    {"echo", engine::record_type::kEcho},
    {"feedPublish", feed::records::kFeedPublish},
    {"feedFrame", feed::records::kFeedFrame},
    {"feedGap", feed::records::kFeedGap},
    {"feedSession", feed::records::kFeedSession},
    {"orderEvents", orders::order_event_record::kOrderEvents},
};

// Borrowed: the engine owns them, for as long as it lives.
struct EngineAgents {
  engine::CommandAgent* commands = nullptr;
  feed::FeedAgent* feed = nullptr;
  orders::OrderAgent* orders = nullptr;
  engine::SoftDeviceAgent* soft_devices = nullptr;
  engine::DeviceEventsAgent* device_events = nullptr;
};

// Before engine.start(), once per engine.
EngineAgents add_engine_agents(engine::Engine& engine);

}  // namespace qpgate::gateway
