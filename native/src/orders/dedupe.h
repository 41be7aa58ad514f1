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
// table never grows: it holds at most `capacity` ids, in an array of twice
// that many slots (linear probing stays short at half full) mapped at
// construction with untouched pages, so memory is taken as ids arrive and
// no rehash ever runs on the engine thread. insert() refuses once the
// table is full; the handler also caps each session's share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "orders/siphash.h"
#include "orders/types.h"

namespace qpgate::orders {

enum class ResponseKind : std::uint8_t { kEmpty = 0, kAck, kReject, kCancelAck, kReplaceAck };

// All zero bytes is an empty entry (the table's pages start zeroed).
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
  // std::bad_alloc if the address space for 2 x capacity slots cannot be mapped.
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

 private:
  std::size_t home(std::uint32_t session, std::uint64_t id) const noexcept;

  DedupeEntry* entries_ = nullptr;
  std::size_t slots_ = 0;  // a power of two, >= 2 x capacity_
  std::size_t mask_ = 0;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  SipKey key_;
};

}  // namespace qpgate::orders
