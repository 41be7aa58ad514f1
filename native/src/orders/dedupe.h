// Duplicate detection by (session, client order id), across restarts (the
// table is rebuilt by journal replay).
//
// A client order id is used once per session. The table keeps what the
// gateway first answered to each id (Ack, Reject, CancelAck, ReplaceAck),
// enough to encode that answer again. A resent request gets its original
// answer again -- same app_seq, same gateway order id, possible_resend = true
// -- rather than a DUPLICATE reject: a client resends precisely because it
// did not see the answer, and a DUPLICATE reject would tell it only "the
// gateway has something" and not whether that was an Ack or a Reject, nor
// the order id it needs to cancel. (FIX's PossResend works the same way.)
//
// Hostile clients: the slot of a key comes from SipHash-2-4 under a random
// per-table key (siphash.h), so ids cannot be chosen to collide, and the
// table never grows: it holds at most `capacity` ids, and no rehash ever
// runs on the engine thread. insert() refuses once the table is full; the
// handler also caps each session's share.
//
// No page fault on an order's path. The hash spreads ids over the whole
// table: in a table of 64-byte slots touched as ids landed, nearly every new
// id wrote to a page of its own until all were resident. On the 2-vCPU VM of
// bench/README.md a fault costs 10-17 us, and an order -> Ack round trip took
// 46 us at p50 where 29 us was the rest of it ("The duplicate table's page
// faults" there). So the table is
// two parts: an index of 4-byte slots (2 x capacity, linear probing stays
// short at half full), resident from construction, which the hash spreads
// over; and the 64-byte entries it points to, appended in the order ids
// arrive, so they fill pages one after the other, and populate_ahead()
// (an idle duty cycle's housekeeping) makes the next pages resident before
// an insert needs them (ahead_pages.h); memory follows the ids.
#pragma once

#include <cstddef>
#include <cstdint>

#include "orders/ahead_pages.h"
#include "orders/siphash.h"
#include "orders/types.h"

namespace qpgate::orders {

enum class ResponseKind : std::uint8_t { kEmpty = 0, kAck, kReject, kCancelAck, kReplaceAck };

// One id's first answer, written once, when the id is inserted.
struct DedupeEntry {
  std::uint64_t client_order_id = 0;
  std::uint64_t app_seq = 0;               // of the original answer
  std::uint64_t order_id = 0;              // Ack/CancelAck/ReplaceAck
  std::uint64_t orig_client_order_id = 0;  // CancelAck/ReplaceAck
  std::int64_t price = 0;                  // ReplaceAck
  std::int64_t quantity = 0;               // ReplaceAck: new quantity; CancelAck: cancelled quantity
  std::uint32_t session = 0;
  std::uint32_t slot = 0;                  // Ack: the order's pool slot (check order_id before use)
  ResponseKind kind = ResponseKind::kEmpty;
  RejectReason reason = RejectReason::kUnspecified;
  bool priority_kept = false;
};

class DedupeTable {
 public:
  // std::bad_alloc if the index (made resident here) or the entries cannot be mapped.
  DedupeTable(std::size_t capacity, const SipKey& key);
  ~DedupeTable();
  DedupeTable(const DedupeTable&) = delete;
  DedupeTable& operator=(const DedupeTable&) = delete;

  DedupeEntry* find(std::uint32_t session, std::uint64_t client_order_id) noexcept;
  // A new entry (the key must not be present), or nullptr when the table holds `capacity` ids.
  DedupeEntry* insert(std::uint32_t session, std::uint64_t client_order_id) noexcept;
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool full() const noexcept { return size_ >= capacity_; }

  // Makes the entries' pages resident up to kAheadEntries past the last
  // insert, at most kPopulateStepEntries of them per call (a bounded piece of
  // an idle duty cycle); returns the entries made resident (0: far enough ahead).
  std::size_t populate_ahead() noexcept;
  // Entries whose pages are resident (a multiple of a page's worth, at most capacity).
  std::size_t resident_entries() const noexcept { return resident_; }

  // The index slot an id's probe starts at (the layout; for tests).
  std::size_t home(std::uint32_t session, std::uint64_t id) const noexcept;

  static constexpr std::size_t kAheadEntries = 4096;         // 64 pages
  static constexpr std::size_t kPopulateStepEntries = 1024;  // 16 pages

 private:
  std::uint32_t* index_ = nullptr;  // entry number + 1 per slot; 0 = empty
  std::size_t slots_ = 0;  // a power of two, >= 2 x capacity_
  std::size_t mask_ = 0;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::size_t resident_ = 0;
  SipKey key_;
  AheadPages entry_pages_;
  DedupeEntry* entries_;

  void populate(std::size_t entries) noexcept;
};

}  // namespace qpgate::orders
