// Feed frames: the UD payload of one multicast packet (docs/protocol.md
// Part 2, which is normative; the offsets below must match its tables).
//
//   frame   = frame header (32 B) | message* ; frame_length <= channel size <= 4096
//   message = message header (12 B) | protobuf body ; packed, no padding
//
// Header views (like wire/headers.h) are the only code that knows a field's
// byte offset. `parse_frame` validates a whole frame once, so a ParsedFrame's
// messages can then be walked without further checks. `FramePacker` appends
// messages into a frame buffer until it is full and stamps the header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "feed/le.h"
#include "wire/result.h"
#include "wire/rx_counters.h"

namespace qpgate::feed {

inline constexpr std::uint8_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderBytes = 32;
inline constexpr std::size_t kMessageHeaderBytes = 12;
inline constexpr std::size_t kDefaultFrameBytes = 1024;  // IB MTU 1024: rxe and most RoCE NICs on 1500 B Ethernet
inline constexpr std::size_t kMaxFrameBytes = 4096;      // IB MTU 4096
inline constexpr std::size_t kMinFrameBytes = 128;       // smallest size a channel may be configured with
inline constexpr std::size_t kMaxBodyBytes = kMaxFrameBytes - kFrameHeaderBytes - kMessageHeaderBytes;

constexpr bool valid_frame_size(std::size_t n) { return n >= kMinFrameBytes && n <= kMaxFrameBytes; }

// Frame flags (byte 1).
namespace flags {
inline constexpr std::uint8_t kRetransmission = 0x01;  // re-sent from the ring over RC
inline constexpr std::uint8_t kSnapshot = 0x02;        // snapshot frame: messages are not in the live sequence
inline constexpr std::uint8_t kHeartbeat = 0x04;       // no messages; first_seq = next sequence
inline constexpr std::uint8_t kEndOfSession = 0x08;    // no messages; first_seq = next sequence; session ends
inline constexpr std::uint8_t kKnown = 0x0f;
inline constexpr std::uint8_t kControl = kHeartbeat | kEndOfSession;
}  // namespace flags

// The message-type codes of qpgate.marketdata.v1.MessageType (proto is the
// source of truth; a test checks these against the golden vectors).
enum class MessageType : std::uint16_t {
  kUnspecified = 0,
  kHeartbeat = 1,
  kInstrumentDefinition = 2,
  kQuote = 3,
  kTrade = 4,
  kBookLevelUpdate = 5,
  kTradingStatus = 6,
  kSnapshotBegin = 7,
  kSnapshotEnd = 8,
};

// Message header action byte (BOOK_LEVEL_UPDATE; 0 for every other type),
// the numbers of BookLevelUpdate.Action.
enum class BookAction : std::uint8_t { kNone = 0, kAdd = 1, kModify = 2, kDelete = 3 };

// Conflation key of a BOOK_LEVEL_UPDATE: bit 8 = side (0 bid, 1 ask), bits 0-7 = level.
constexpr std::uint16_t book_key(bool ask, std::uint8_t level) {
  return static_cast<std::uint16_t>((ask ? 0x100 : 0) | level);
}

template <class Byte>
class ViewBase {
 public:
  explicit ViewBase(Byte* p) : p_(p) {}
  Byte* data() const { return p_; }
  static constexpr bool kWritable = !std::is_const_v<Byte>;

 protected:
  Byte* p_;
};

// Frame header, 32 bytes, little-endian.
//   0 version u8 | 1 flags u8 | 2 channel u16 | 4 session u32
//   8 first_seq u64 | 16 send_time_ns u64
//  24 message_count u16 | 26 frame_length u16 | 28 reserved u32 (0)
template <class Byte>
class FrameHeaderT : public ViewBase<Byte> {
  using ViewBase<Byte>::p_;

 public:
  using ViewBase<Byte>::ViewBase;
  using ViewBase<Byte>::kWritable;
  std::uint8_t version() const { return p_[0]; }
  std::uint8_t flags() const { return p_[1]; }
  std::uint16_t channel() const { return load_le<std::uint16_t>(p_ + 2); }
  std::uint32_t session() const { return load_le<std::uint32_t>(p_ + 4); }
  std::uint64_t first_seq() const { return load_le<std::uint64_t>(p_ + 8); }
  std::uint64_t send_time_ns() const { return load_le<std::uint64_t>(p_ + 16); }
  std::uint16_t message_count() const { return load_le<std::uint16_t>(p_ + 24); }
  std::uint16_t frame_length() const { return load_le<std::uint16_t>(p_ + 26); }
  std::uint32_t reserved() const { return load_le<std::uint32_t>(p_ + 28); }
  bool is_control() const { return (flags() & flags::kControl) != 0; }
  // The sequence after this frame's last message (= first_seq for control frames).
  std::uint64_t end_seq() const { return first_seq() + message_count(); }

  void set_version(std::uint8_t v) const requires kWritable { p_[0] = v; }
  void set_flags(std::uint8_t v) const requires kWritable { p_[1] = v; }
  void set_channel(std::uint16_t v) const requires kWritable { store_le(p_ + 2, v); }
  void set_session(std::uint32_t v) const requires kWritable { store_le(p_ + 4, v); }
  void set_first_seq(std::uint64_t v) const requires kWritable { store_le(p_ + 8, v); }
  void set_send_time_ns(std::uint64_t v) const requires kWritable { store_le(p_ + 16, v); }
  void set_message_count(std::uint16_t v) const requires kWritable { store_le(p_ + 24, v); }
  void set_frame_length(std::uint16_t v) const requires kWritable { store_le(p_ + 26, v); }
  void set_reserved(std::uint32_t v) const requires kWritable { store_le(p_ + 28, v); }
};

// Message header, 12 bytes, little-endian.
//   0 length u16 (header + body) | 2 type u16 | 4 instrument_id u32
//   8 key u16 | 10 action u8 | 11 reserved u8 (0)
template <class Byte>
class MessageHeaderT : public ViewBase<Byte> {
  using ViewBase<Byte>::p_;

 public:
  using ViewBase<Byte>::ViewBase;
  using ViewBase<Byte>::kWritable;
  std::uint16_t length() const { return load_le<std::uint16_t>(p_); }
  std::uint16_t type() const { return load_le<std::uint16_t>(p_ + 2); }
  std::uint32_t instrument_id() const { return load_le<std::uint32_t>(p_ + 4); }
  std::uint16_t key() const { return load_le<std::uint16_t>(p_ + 8); }
  std::uint8_t action() const { return p_[10]; }
  std::uint8_t reserved() const { return p_[11]; }

  void set(std::uint16_t length, std::uint16_t type, std::uint32_t instrument_id, std::uint16_t key,
           std::uint8_t action) const requires kWritable {
    store_le(p_, length);
    store_le(p_ + 2, type);
    store_le(p_ + 4, instrument_id);
    store_le(p_ + 8, key);
    p_[10] = action;
    p_[11] = 0;
  }
};

using FrameHeaderView = FrameHeaderT<const std::uint8_t>;
using FrameHeaderRef = FrameHeaderT<std::uint8_t>;
using MessageHeaderView = MessageHeaderT<const std::uint8_t>;
using MessageHeaderRef = MessageHeaderT<std::uint8_t>;

// Why a buffer was not accepted as a feed frame; one value per reason, each
// counted under its name (FrameCounters).
enum class FrameError : std::uint8_t {
  kTruncatedHeader,         // fewer than 32 bytes
  kBadVersion,              // version != 1
  kUnknownFlags,            // a flag bit outside 0x0f
  kReservedNotZero,         // frame header bytes 28-31 or a message header byte 11 not zero
  kBadFrameLength,          // frame_length < 32 or > 4096
  kTruncatedFrame,          // frame_length > the bytes received
  kTrailingBytes,           // bytes received beyond frame_length
  kZeroSession,             // session 0 (never used)
  kZeroSequence,            // first_seq 0 (sequences start at 1)
  kSequenceOverflow,        // first_seq + message_count overflows u64
  kBadControlFrame,         // heartbeat/end-of-session with messages, both flags, or with the snapshot flag
  kEmptyFrame,              // no messages and not a heartbeat/end-of-session
  kTruncatedMessageHeader,  // 1..11 bytes left where a message header is due
  kZeroLengthMessage,       // message length 0
  kMessageTooShort,         // message length 1..11 (shorter than its own header)
  kMessageOverrun,          // message length runs past frame_length
  kCountMismatch,           // message_count disagrees with the messages found
  kBadMessageType,          // message type 0
};

inline constexpr std::size_t kFrameErrorCount = static_cast<std::size_t>(FrameError::kBadMessageType) + 1;

constexpr std::string_view frame_error_name(FrameError e) {
  switch (e) {
    case FrameError::kTruncatedHeader: return "truncated_header";
    case FrameError::kBadVersion: return "bad_version";
    case FrameError::kUnknownFlags: return "unknown_flags";
    case FrameError::kReservedNotZero: return "reserved_not_zero";
    case FrameError::kBadFrameLength: return "bad_frame_length";
    case FrameError::kTruncatedFrame: return "truncated_frame";
    case FrameError::kTrailingBytes: return "trailing_bytes";
    case FrameError::kZeroSession: return "zero_session";
    case FrameError::kZeroSequence: return "zero_sequence";
    case FrameError::kSequenceOverflow: return "sequence_overflow";
    case FrameError::kBadControlFrame: return "bad_control_frame";
    case FrameError::kEmptyFrame: return "empty_frame";
    case FrameError::kTruncatedMessageHeader: return "truncated_message_header";
    case FrameError::kZeroLengthMessage: return "zero_length_message";
    case FrameError::kMessageTooShort: return "message_too_short";
    case FrameError::kMessageOverrun: return "message_overrun";
    case FrameError::kCountMismatch: return "count_mismatch";
    case FrameError::kBadMessageType: return "bad_message_type";
  }
  return "unknown";
}

// One message of a validated frame.
struct Message {
  MessageHeaderView header{nullptr};
  std::uint64_t seq = 0;                  // first_seq + index (meaningless in snapshot frames)
  std::span<const std::uint8_t> bytes;    // header + body
  std::span<const std::uint8_t> body;     // the protobuf bytes

  MessageType type() const { return static_cast<MessageType>(header.type()); }
  std::uint32_t instrument_id() const { return header.instrument_id(); }
  std::uint16_t key() const { return header.key(); }
  BookAction action() const { return static_cast<BookAction>(header.action()); }
};

// A frame that passed parse_frame: every message lies inside `bytes` and the
// lengths sum exactly to frame_length.
class ParsedFrame {
 public:
  class Iterator {
   public:
    Iterator(const std::uint8_t* p, std::uint64_t seq) : p_(p), seq_(seq) {}
    Message operator*() const;
    Iterator& operator++() {
      p_ += MessageHeaderView(p_).length();
      ++seq_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return p_ == o.p_; }

   private:
    const std::uint8_t* p_;
    std::uint64_t seq_;
  };

  explicit ParsedFrame(std::span<const std::uint8_t> bytes) : bytes_(bytes), header_(bytes.data()) {}
  FrameHeaderView header() const { return header_; }
  std::span<const std::uint8_t> bytes() const { return bytes_; }
  std::uint16_t message_count() const { return header_.message_count(); }
  Iterator begin() const { return {bytes_.data() + kFrameHeaderBytes, header_.first_seq()}; }
  Iterator end() const { return {bytes_.data() + bytes_.size(), 0}; }

 private:
  std::span<const std::uint8_t> bytes_;  // exactly frame_length bytes
  FrameHeaderView header_;
};

enum class ParseMode : std::uint8_t {
  kExact,   // the buffer is one frame (a UD payload): trailing bytes are an error
  kPrefix,  // the buffer starts with a frame (frames back to back): trailing bytes are the next frame
};

wire::Result<ParsedFrame, FrameError> parse_frame(std::span<const std::uint8_t> bytes,
                                                  ParseMode mode = ParseMode::kExact);

// Named frame counters (/metrics): accepted data, snapshot and control frames,
// and one counter per FrameError. Single writer, any reader.
struct FrameCounters {
  wire::RxCounter accepted;
  wire::RxCounter heartbeats;
  std::array<wire::RxCounter, kFrameErrorCount> rejected;

  void count(const wire::Result<ParsedFrame, FrameError>& r) {
    if (!r.ok()) {
      rejected[static_cast<std::size_t>(r.error())].inc();
    } else if (r->header().is_control()) {
      heartbeats.inc();
    } else {
      accepted.inc();
    }
  }
  std::uint64_t rejected_count(FrameError e) const { return rejected[static_cast<std::size_t>(e)].get(); }

  template <class Fn>
  void for_each(Fn&& fn) const {
    fn(std::string_view("accepted"), accepted.get());
    fn(std::string_view("heartbeats"), heartbeats.get());
    for (std::size_t i = 0; i < kFrameErrorCount; ++i) {
      fn(frame_error_name(static_cast<FrameError>(i)), rejected[i].get());
    }
  }
};

// The fixed-header fields of one message to append.
struct MessageFields {
  MessageType type = MessageType::kUnspecified;
  std::uint32_t instrument_id = 0;
  std::uint16_t key = 0;
  BookAction action = BookAction::kNone;
};

enum class AppendStatus : std::uint8_t {
  kOk,
  kFrameFull,  // does not fit in what is left: finish this frame and append to a new one
  kTooLarge,   // would not fit even in an empty frame of this size: refused
  kBadType,    // type 0 is never sent
};

constexpr std::string_view append_status_name(AppendStatus s) {
  switch (s) {
    case AppendStatus::kOk: return "ok";
    case AppendStatus::kFrameFull: return "frame_full";
    case AppendStatus::kTooLarge: return "too_large";
    case AppendStatus::kBadType: return "bad_type";
  }
  return "unknown";
}

// Builds frames of one channel in its own buffer of `frame_bytes`.
//   start(...) → append()* → finish(first_seq, send_time) → (send / keep) → start(...)
// finish() returns a view of the frame that stays valid until the next start().
class FramePacker {
 public:
  // frame_bytes must satisfy valid_frame_size(); it is clamped to that range.
  explicit FramePacker(std::size_t frame_bytes = kDefaultFrameBytes);

  void start(std::uint16_t channel, std::uint32_t session, std::uint8_t frame_flags = 0);
  AppendStatus append(const MessageFields& m, std::span<const std::uint8_t> body);
  // Reserves a message of `body_bytes` and returns its body to fill in place
  // (e.g. a protobuf encoder writing straight into the frame).
  wire::Result<std::span<std::uint8_t>, AppendStatus> reserve(const MessageFields& m, std::size_t body_bytes);
  std::span<const std::uint8_t> finish(std::uint64_t first_seq, std::uint64_t send_time_ns);

  std::size_t frame_bytes() const { return buf_.size(); }
  std::size_t size() const { return used_; }
  std::uint16_t message_count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Largest body that still fits in this frame.
  std::size_t body_room() const;
  // Largest body that fits in an empty frame of this size.
  std::size_t max_body_bytes() const { return buf_.size() - kFrameHeaderBytes - kMessageHeaderBytes; }

 private:
  std::vector<std::uint8_t> buf_;
  std::size_t used_ = kFrameHeaderBytes;
  std::uint16_t count_ = 0;
};

// Writes a heartbeat or end-of-session frame (32 bytes, no messages) into
// `out` (at least kFrameHeaderBytes) and returns it.
std::span<const std::uint8_t> encode_control_frame(std::span<std::uint8_t> out, std::uint8_t control_flag,
                                                   std::uint16_t channel, std::uint32_t session,
                                                   std::uint64_t next_seq, std::uint64_t send_time_ns);

// Sets the RETRANSMISSION flag of a copy of a frame about to be re-sent.
inline void mark_retransmission(std::span<std::uint8_t> frame) {
  FrameHeaderRef h(frame.data());
  h.set_flags(static_cast<std::uint8_t>(h.flags() | flags::kRetransmission));
}

}  // namespace qpgate::feed
