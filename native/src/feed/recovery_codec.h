// The recovery messages (proto/qpgate/recovery/v1/recovery.proto) on the
// wire, with protozero: requests decoded by the gateway and encoded by the
// subscriber, replies the other way round. Decoding never allocates: frames
// in a reply are views into the receive buffer. Encoding writes straight
// into a registered send slot (a fixed-size buffer): the caller sizes the
// content so it fits (reply_overhead + frame_cost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace qpgate::feed::recovery {

// qpgate.recovery.v1.Status.
enum class Status : std::uint8_t {
  kUnspecified = 0,
  kOk = 1,
  kRangeGone = 2,
  kThrottled = 3,
  kNotEntitled = 4,
  kUnknownSession = 5,
  kInvalidRange = 6,
  kMalformed = 7,
  kUnknownChannel = 8,
};
inline constexpr std::size_t kStatusCount = 9;

constexpr std::string_view status_name(Status s) {
  switch (s) {
    case Status::kUnspecified: return "unspecified";
    case Status::kOk: return "ok";
    case Status::kRangeGone: return "range_gone";
    case Status::kThrottled: return "throttled";
    case Status::kNotEntitled: return "not_entitled";
    case Status::kUnknownSession: return "unknown_session";
    case Status::kInvalidRange: return "invalid_range";
    case Status::kMalformed: return "malformed";
    case Status::kUnknownChannel: return "unknown_channel";
  }
  return "unknown";
}

struct RetransmitRequest {
  std::uint32_t channel = 0;
  std::uint32_t session = 0;
  std::uint64_t from_sequence = 0;
  std::uint32_t count = 0;
  std::uint64_t request_id = 0;
};

struct SnapshotRequest {
  std::uint32_t channel = 0;
  std::uint64_t request_id = 0;
  // instrument_ids is accepted on the wire but a filtered snapshot is not
  // offered: every instrument of the channel is sent.
  std::uint32_t instrument_filters = 0;
};

struct SubscriberReport {
  std::uint64_t queued = 0;
  std::uint64_t dropped = 0;
  std::uint64_t conflated = 0;
  std::uint64_t gaps = 0;
  std::uint64_t unrecoverable = 0;
  std::uint64_t ring_full_drops = 0;
  std::uint64_t other_session_frames = 0;
};

enum class RequestKind : std::uint8_t { kNone, kRetransmit, kSnapshot, kReport };

struct Request {
  RequestKind kind = RequestKind::kNone;
  RetransmitRequest retransmit;
  SnapshotRequest snapshot;
  SubscriberReport report;
};

// Decodes one RecoveryRequest. On failure returns false and says why in
// `error` (a static string: no allocation).
bool decode_request(std::span<const std::uint8_t> bytes, Request& out, const char** error);

// Encoders return the bytes written, or 0 when `out` is too small.
std::size_t encode_request(const RetransmitRequest& r, std::span<std::uint8_t> out);
std::size_t encode_request(const SnapshotRequest& r, std::span<std::uint8_t> out);
std::size_t encode_request(const SubscriberReport& r, std::span<std::uint8_t> out);

struct RetransmitReplyHead {
  std::uint64_t request_id = 0;
  Status status = Status::kUnspecified;
  std::uint32_t channel = 0;
  std::uint32_t session = 0;
  std::uint64_t oldest_sequence = 0;
  std::uint64_t next_sequence = 0;
  std::uint64_t retry_after_ns = 0;
};

struct SnapshotReplyHead {
  std::uint64_t request_id = 0;
  Status status = Status::kUnspecified;
  std::uint32_t channel = 0;
  std::uint32_t session = 0;
  std::uint64_t last_sequence = 0;
  std::uint32_t part = 0;
  bool last = false;
  std::uint64_t retry_after_ns = 0;
};

// Bytes a reply needs besides its frames (envelope, nested length, scalars).
inline constexpr std::size_t kReplyOverheadBytes = 96;
// Bytes one frame of `length` adds to a reply (tag + length varint + bytes).
constexpr std::size_t frame_cost(std::size_t length) { return 1 + (length < 128 ? 1 : length < 16384 ? 2 : 3) + length; }

// Replies with frames; each returns the bytes written, 0 if out of room.
// encode_retransmit_reply ORs `frame_flag` into each frame's flags byte in
// the output (the ring's copies stay untouched).
std::size_t encode_retransmit_reply(const RetransmitReplyHead& head, std::span<const std::span<const std::uint8_t>> frames,
                                    std::uint8_t frame_flag, std::span<std::uint8_t> out);
std::size_t encode_snapshot_reply(const SnapshotReplyHead& head, std::span<const std::span<const std::uint8_t>> frames,
                                  std::span<std::uint8_t> out);
std::size_t encode_error_reply(Status status, std::string_view message, std::span<std::uint8_t> out);

// A decoded reply; frames are views into the decoded bytes.
enum class ReplyKind : std::uint8_t { kNone, kRetransmit, kSnapshot, kError };

struct Reply {
  static constexpr std::size_t kMaxFrames = 1024;
  ReplyKind kind = ReplyKind::kNone;
  RetransmitReplyHead retransmit;
  SnapshotReplyHead snapshot;
  Status error_status = Status::kUnspecified;
  std::string_view error_message;
  std::span<const std::uint8_t> frames[kMaxFrames];
  std::size_t frame_count = 0;
};

bool decode_reply(std::span<const std::uint8_t> bytes, Reply& out, const char** error);

}  // namespace qpgate::feed::recovery
