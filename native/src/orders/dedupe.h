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
// Open addressing with linear probing over a power-of-two array; it grows
// (one allocation, rehash) only when more than half full, so size it for a
// day's ids and the hot path never allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "orders/types.h"

namespace qpgate::orders {

enum class ResponseKind : std::uint8_t { kEmpty = 0, kAck, kReject, kCancelAck, kReplaceAck };

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
  explicit DedupeTable(std::size_t expected_ids = 1 << 16);

  DedupeEntry* find(std::uint32_t session, std::uint64_t client_order_id) noexcept;
  // Inserts a new entry (the key must not be present) and returns it.
  DedupeEntry& insert(std::uint32_t session, std::uint64_t client_order_id);
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return entries_.size(); }
  std::uint64_t growths() const noexcept { return growths_; }

 private:
  std::size_t home(std::uint32_t session, std::uint64_t id) const noexcept;
  void grow();

  std::vector<DedupeEntry> entries_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  std::uint64_t growths_ = 0;
};

}  // namespace qpgate::orders
