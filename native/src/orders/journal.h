// The order journal: an append-only file of what the order handler accepted
// (and of the risk words clients' atomics changed, records.h), written before
// any answer goes out, replayed at start.
//
// File: a 16-byte header, then records.
//   header:  "QPGJRNL1" | u32 version (1) | u32 CRC-32 of the first 12 bytes
//   record:  u32 payload length | u32 CRC-32 | u16 type | u16 reserved (0) | payload
// Little-endian. The CRC (zlib's crc32) covers the length, type, reserved
// and payload: everything but itself, so a flipped bit anywhere in a record,
// its length included, is caught.
//
// Durability (SyncPolicy): appends go to a buffer; sync() writes it and calls
// fdatasync. durable_position() is the file offset known to be on disk; the
// caller holds every answer that depends on a record until durable_position()
// has passed that record's end (OutBuffer::durable_position), so nothing is
// acknowledged that a restart could forget.
//   kEveryRecord: sync inside append(): every answer is durable when handed back.
//   kGroupCommit (default): sync after `group_max_records`, or at poll() once the
//     oldest unsynced record is `group_max_delay_us` old (0 = at the next poll,
//     i.e. once per engine duty cycle, covering the whole batch of inputs).
//   kNoSync: write(2) at poll, never fdatasync: survives a process crash
//     (SIGKILL: the page cache keeps what was written), not a power loss. The
//     addon's default ('none'): the ack path pays no fdatasync, which costs
//     milliseconds per group on virtual disks.
// With `sync_thread` (the live service's setting), kEveryRecord and
// kGroupCommit do not fdatasync on the caller's thread: when a sync is due
// they write(2) and ask a JournalSyncer (journal_syncer.h) to sync up to
// there, and durable_position() follows its watermark at poll(). The engine
// never blocks on the disk; answers wait in their queues instead. sync() (a
// flush: shutdown, tests) still waits until everything is durable.
//
// Opening replays: every complete record is handed to the visitor in order.
// A bad record with nothing valid after it is a torn tail (a crash in the
// middle of a write): it is truncated, reported in stats, never applied. A
// bad record followed by a valid one is corruption in the middle: open()
// fails with its offset and refuses to start. (Under kGroupCommit a crash can
// tear several unsynced records; none of them was acknowledged, and the error
// names the offset should an operator choose to truncate there.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "orders/journal_syncer.h"

namespace qpgate::orders {

enum class SyncPolicy : std::uint8_t { kEveryRecord = 0, kGroupCommit = 1, kNoSync = 2 };

struct JournalConfig {
  std::string path;
  SyncPolicy sync = SyncPolicy::kGroupCommit;
  std::uint32_t group_max_records = 64;
  std::uint32_t group_max_delay_us = 0;
  std::size_t buffer_bytes = 1 << 20;  // appends beyond this force a write
  bool sync_thread = false;            // fdatasync on a JournalSyncer thread (see above)
};

inline constexpr std::size_t kJournalHeaderBytes = 16;
inline constexpr std::size_t kRecordHeaderBytes = 12;
inline constexpr std::uint32_t kMaxRecordPayload = 4096;

struct JournalStats {
  std::uint64_t records_replayed = 0;
  std::uint64_t torn_tail_bytes = 0;     // truncated at open
  std::uint64_t torn_tail_offset = 0;
  std::uint64_t records_appended = 0;
  std::uint64_t syncs = 0;
  std::uint64_t bytes_written = 0;
};

// Called for each valid record at open; returns false and sets `error` to refuse.
using ReplayVisitor =
    std::function<bool(std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t offset, std::string& error)>;

class Journal {
 public:
  // Opens (creating if absent), validates and replays. nullptr + `error` on failure.
  static std::unique_ptr<Journal> open(const JournalConfig& config, const ReplayVisitor& visitor, std::string& error);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one record; returns the file offset of its end (what must be
  // durable before answers depending on it go out), 0 if the journal has failed.
  std::uint64_t append(std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t now_ns);
  // Group commit / no-sync writes when due. Returns true if durable_position() advanced.
  bool poll(std::uint64_t now_ns);
  // Writes and fdatasyncs everything appended (fsync-less under kNoSync).
  bool sync();
  // write(2)s what append() buffered, without fdatasync: the file then holds
  // every record appended (for replay_written). False once the journal has failed.
  bool write_out();
  // Replays, read-only, the records of the journal file at `path` up to `end`
  // (the live journal's written_position(): whole records it has checked or
  // written), as open() does, without touching the file the live journal
  // owns. False + `error` if they cannot be read or the visitor refuses one.
  static bool replay_written(const std::string& path, std::uint64_t end, const ReplayVisitor& visitor,
                             std::string& error);

  std::uint64_t appended_position() const noexcept { return appended_; }
  std::uint64_t written_position() const noexcept { return written_; }
  std::uint64_t durable_position() const noexcept { return durable_; }
  bool failed() const noexcept { return failed_; }
  const std::string& failure() const noexcept { return failure_; }
  const JournalStats& stats() const noexcept { return stats_; }
  const JournalConfig& config() const noexcept { return config_; }

 private:
  Journal(const JournalConfig& config, int fd, std::uint64_t end);
  bool write_buffer();
  // Writes and starts a sync (hands it to the syncer, or syncs here).
  bool begin_sync();
  // Takes the syncer's watermark (and its failure). True if durable_ advanced.
  bool follow_syncer();

  JournalConfig config_;
  int fd_;
  std::vector<std::uint8_t> buffer_;
  std::uint64_t written_;    // file offset after the last write(2)
  std::uint64_t appended_;   // file offset after the last append
  std::uint64_t durable_;    // file offset known on disk
  std::uint32_t pending_records_ = 0;
  std::uint64_t oldest_pending_ns_ = 0;
  bool failed_ = false;
  std::string failure_;
  JournalStats stats_;
  std::unique_ptr<JournalSyncer> syncer_;  // with sync_thread (and a policy that syncs)
};

}  // namespace qpgate::orders
