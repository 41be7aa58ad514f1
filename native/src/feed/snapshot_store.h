// A channel's snapshot: the latest message for every snapshot key, in
// fixed-size slots of one contiguous region that can be registered as a
// memory region and read by RDMA READ (docs/protocol.md 2.9 is normative for
// the layout).
//
// Snapshot key = (message type, instrument id, message header key): the latest
// InstrumentDefinition, TradingStatus, Quote and Trade of each instrument, and
// the latest BookLevelUpdate of each (instrument, side, level). Each slot
// keeps the sequence of the message it holds, so a late joiner merges a
// snapshot with buffered live frames key by key: a live message applies when
// its sequence is greater than the slot's.
//
// Every slot is a seqlock with its version at both ends: the writer makes the
// trailing copy odd first and the leading copy even last, so a reader that
// copies the slot from low to high addresses — a CPU, or an RDMA READ —
// detects a copy that raced an update (check_slot) and reads it again.
//
// One writer (the engine thread of the channel); any number of readers, local
// (read_slot) or remote (raw bytes + check_slot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include "feed/feed_limits.h"
#include "feed/frame.h"
#include "feed/slot_index.h"

namespace qpgate::feed {

namespace snapshot_layout {
inline constexpr std::uint32_t kMagic = 0x4e535051;  // "QPSN" little-endian
inline constexpr std::uint16_t kLayoutVersion = 1;
inline constexpr std::size_t kRegionHeaderBytes = 64;
// Region header offsets.
inline constexpr std::size_t kMagicOffset = 0;           // u32
inline constexpr std::size_t kLayoutVersionOffset = 4;   // u16
inline constexpr std::size_t kChannelOffset = 6;         // u16
inline constexpr std::size_t kSessionOffset = 8;         // u32
inline constexpr std::size_t kSlotBytesOffset = 12;      // u32
inline constexpr std::size_t kSlotCountOffset = 16;      // u32
inline constexpr std::size_t kSlotsUsedOffset = 24;      // u64
inline constexpr std::size_t kLastSequenceOffset = 32;   // u64
// Slot offsets.
inline constexpr std::size_t kSlotHeaderBytes = 32;
inline constexpr std::size_t kVersionOffset = 0;         // u64, also in the last 8 bytes of the slot
inline constexpr std::size_t kSequenceOffset = 8;        // u64
inline constexpr std::size_t kInstrumentOffset = 16;     // u32
inline constexpr std::size_t kTypeOffset = 20;           // u16
inline constexpr std::size_t kKeyOffset = 22;            // u16
inline constexpr std::size_t kMessageLengthOffset = 24;  // u16
inline constexpr std::size_t kSlotTrailerBytes = 8;      // the version again
inline constexpr std::size_t kMinSlotBytes = 128;
inline constexpr std::size_t kMaxSlotBytes = 4096;
inline constexpr std::size_t kDefaultSlotBytes = 256;

constexpr bool valid_slot_bytes(std::size_t n) {
  return n >= kMinSlotBytes && n <= kMaxSlotBytes && n % 64 == 0;
}
// Bytes of message (header + body) a slot of `slot_bytes` holds.
constexpr std::size_t message_capacity(std::size_t slot_bytes) {
  return slot_bytes - kSlotHeaderBytes - kSlotTrailerBytes;
}
}  // namespace snapshot_layout

// Whether a message type is kept in the snapshot.
constexpr bool is_snapshot_type(MessageType t) {
  return t == MessageType::kInstrumentDefinition || t == MessageType::kQuote || t == MessageType::kTrade ||
         t == MessageType::kBookLevelUpdate || t == MessageType::kTradingStatus;
}

enum class SlotCheck : std::uint8_t {
  kOk,
  kEmpty,         // never written (version 0) or cleared
  kBeingWritten,  // leading version odd: the writer was inside the slot
  kTorn,          // leading and trailing versions differ: the copy raced an update
  kCorrupt,       // consistent versions but impossible contents (wrong slot size, bad length)
};

constexpr std::string_view slot_check_name(SlotCheck c) {
  switch (c) {
    case SlotCheck::kOk: return "ok";
    case SlotCheck::kEmpty: return "empty";
    case SlotCheck::kBeingWritten: return "being_written";
    case SlotCheck::kTorn: return "torn";
    case SlotCheck::kCorrupt: return "corrupt";
  }
  return "unknown";
}

// A consistent slot's contents (views into the checked copy).
struct SlotContents {
  std::uint64_t version = 0;
  std::uint64_t seq = 0;                // sequence of the message held
  std::span<const std::uint8_t> message;  // message header + protobuf body, as it was in the frame
  MessageHeaderView header() const { return MessageHeaderView(message.data()); }
};

// The reader-side check, for a copy of one slot's bytes (slot_bytes long)
// however it was obtained (RDMA READ, read_slot, memcpy). kTorn and
// kBeingWritten mean: read the slot again.
SlotCheck check_slot(std::span<const std::uint8_t> slot_copy, SlotContents* out = nullptr);

struct SnapshotConfig {
  std::size_t slot_bytes = snapshot_layout::kDefaultSlotBytes;
  std::size_t slot_count = limits::snapshot_slots.fallback;  // feed_config_limits.def
};

enum class ApplyResult : std::uint8_t {
  kStored,
  kNotKept,    // a type the snapshot does not keep (heartbeat, snapshot markers)
  kTooLarge,   // message larger than a slot holds
  kFull,       // a new key and no free slot
  kStale,      // older than (or as old as) what the slot holds
};

class SnapshotStore {
 public:
  // Allocates and zeroes the region (every page touched). Throws std::bad_alloc.
  SnapshotStore(std::uint16_t channel, std::uint32_t session, SnapshotConfig config = {});
  // What the constructor allocates for `config`: the region, one staging
  // slot and the index (apply() never allocates).
  static std::size_t reserved_bytes(const SnapshotConfig& config);
  std::size_t reserved_bytes() const { return region_bytes_ + slot_bytes_ + SlotIndex::table_bytes(slot_count_); }
  ~SnapshotStore();
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  // Applies one message of a live frame (seq = its sequence).
  ApplyResult apply(const Message& m);
  // Applies every message of a live data frame; returns how many were stored.
  std::size_t apply_frame(const ParsedFrame& f);
  // A new session: every slot is cleared (through the seqlock) and forgotten.
  void reset(std::uint32_t session);

  // The region to register as a memory region (region header + slots).
  std::span<std::uint8_t> region() { return {base_, region_bytes_}; }
  std::span<const std::uint8_t> region() const { return {base_, region_bytes_}; }
  std::size_t slot_bytes() const { return slot_bytes_; }
  std::size_t slot_count() const { return slot_count_; }
  std::size_t slots_used() const { return index_.size(); }
  std::size_t slot_offset(std::size_t i) const {
    return snapshot_layout::kRegionHeaderBytes + i * slot_bytes_;
  }
  std::uint64_t last_sequence() const;

  // Local consistent read of slot i into `out` (slot_bytes long), retrying a
  // torn read up to `max_tries` times. Returns the final check.
  SlotCheck read_slot(std::size_t i, std::span<std::uint8_t> out, SlotContents* contents = nullptr,
                      int max_tries = 64) const;

  // Low-level seqlock steps of one slot, for tests that stop a writer half-way
  // (as an RDMA READ might see it). apply() is begin + payload + end.
  void write_begin(std::size_t slot);
  void write_payload(std::size_t slot, std::span<const std::uint64_t> words);  // slot_bytes/8 - 2 words
  void write_end(std::size_t slot);

  struct Counters {
    std::uint64_t stored = 0;
    std::uint64_t not_kept = 0;
    std::uint64_t too_large = 0;
    std::uint64_t full = 0;
    std::uint64_t stale = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  // Slot header words of an image (offsets 8..31: sequence, instrument, type, key, length, reserved).
  static constexpr std::size_t kHeaderImageWords = (snapshot_layout::kSlotHeaderBytes - 8) / 8;
  static std::size_t image_words(std::size_t message_bytes);
  std::size_t held_length(std::size_t slot) const;
  std::uint64_t* words(std::size_t slot) const;
  void store_header_word(std::size_t offset, std::uint64_t v);

  std::uint16_t channel_;
  std::size_t slot_bytes_;
  std::size_t slot_count_;
  std::size_t region_bytes_;
  std::unique_ptr<std::uint64_t[]> staging_;                // one slot image, built before the seqlock write
  SlotIndex index_;  // packed key → slot
  std::uint8_t* base_;  // 64-byte aligned, zeroed; allocated last, so a throw before it leaks nothing
  Counters counters_;
};

}  // namespace qpgate::feed
