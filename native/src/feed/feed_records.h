// The feed's engine records: their types and payloads (docs/protocol.md 2.11
// is normative; src/native/engine.ts has the same type numbers, src/feed/
// records.ts reads and writes the same bytes). Little-endian.
//
// FEED_PUBLISH (toEngine):
//    0 u32 publisher id | 4 u16 channel | 6 u16 message count
//    8 u64 enqueue time, CLOCK_MONOTONIC ns (JS: process.hrtime.bigint())
//   16 messages: 12-byte message header + protobuf body each, packed
//
// FEED_FRAME (fromEngine), 40 bytes + the frame:
//    0 u32 subscriber id | 4 u16 channel | 6 u8 line (0 A, 1 B, 2 RC) | 7 u8 frame flags
//    8 u64 first_seq | 16 u16 message count | 18 u16 skip (leading messages already delivered)
//   20 u32 session | 24 u64 send_time_ns (publisher, CLOCK_REALTIME)
//   32 u64 receive time (CLOCK_REALTIME ns, when the completion was polled)
//   40 the frame, frame_length bytes
//
// FEED_GAP (fromEngine), 24 bytes:
//    0 u32 subscriber id | 4 u16 channel | 6 u16 0 | 8 u64 from_seq | 16 u64 count
//
// FEED_SESSION (fromEngine), 24 bytes:
//    0 u32 subscriber id | 4 u16 channel | 6 u16 0 | 8 u32 old session (0: first seen)
//   12 u32 new session | 16 u64 next expected sequence
#pragma once

#include <cstdint>

namespace qpgate::feed::records {

// Record types (the ring's int32 `type`; every type of the engine: gateway/engine_agents.h).
// toEngine: messages for one channel of one publisher.
inline constexpr std::int32_t kFeedPublish = 16;
// fromEngine: one live frame delivered in order by a subscriber.
inline constexpr std::int32_t kFeedFrame = 17;
// fromEngine: a range lost on every line and not recovered.
inline constexpr std::int32_t kFeedGap = 18;
// fromEngine: a channel's session changed (or was first seen).
inline constexpr std::int32_t kFeedSession = 19;

inline constexpr std::int32_t kPublishHeaderBytes = 16;
inline constexpr std::int32_t kFrameRecordHeaderBytes = 40;
inline constexpr std::int32_t kGapRecordBytes = 24;
inline constexpr std::int32_t kSessionRecordBytes = 24;

}  // namespace qpgate::feed::records
