// Order nodes, pre-allocated: the book links them into per-level intrusive
// lists by index, so adding, cancelling and matching never allocate. A slot
// is reused after release; holders of a slot index check order_id.
#pragma once

#include <cstdint>
#include <vector>

#include "orders/types.h"

namespace qpgate::orders {

inline constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;

struct OrderNode {
  std::uint64_t order_id = 0;         // gateway order id; 0 = free slot
  std::uint64_t client_order_id = 0;  // the NewOrder's id
  std::uint64_t account = 0;
  std::int64_t price = 0;
  std::int64_t leaves = 0;            // open quantity
  std::uint32_t session = 0;
  std::uint32_t instrument_id = 0;
  std::uint32_t prev = kNoSlot;       // neighbours in the price level's FIFO
  std::uint32_t next = kNoSlot;
  std::uint32_t session_prev = kNoSlot;  // neighbours among the session's open orders (cancel-on-disconnect)
  std::uint32_t session_next = kNoSlot;
  Side side = Side::kUnspecified;
  TimeInForce time_in_force = TimeInForce::kUnspecified;
  bool resting = false;               // linked into a book
};

class OrderPool {
 public:
  explicit OrderPool(std::uint32_t capacity) : nodes_(capacity) {
    free_.reserve(capacity);
    for (std::uint32_t i = capacity; i > 0; --i) free_.push_back(i - 1);
  }

  // kNoSlot when exhausted.
  std::uint32_t allocate() noexcept {
    if (free_.empty()) return kNoSlot;
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    nodes_[slot] = OrderNode{};
    return slot;
  }
  void release(std::uint32_t slot) noexcept {
    nodes_[slot].order_id = 0;
    nodes_[slot].resting = false;
    free_.push_back(slot);  // never grows past capacity: reserved above
  }

  OrderNode& operator[](std::uint32_t slot) noexcept { return nodes_[slot]; }
  const OrderNode& operator[](std::uint32_t slot) const noexcept { return nodes_[slot]; }
  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(nodes_.size()); }
  std::uint32_t in_use() const noexcept { return capacity() - static_cast<std::uint32_t>(free_.size()); }

 private:
  std::vector<OrderNode> nodes_;
  std::vector<std::uint32_t> free_;
};

}  // namespace qpgate::orders
