// Where the order handler puts what one input produced: encoded messages for
// sessions, market-data events for the feed, and what happened to each
// order (order_events.h). The caller owns it and
// reuses it (clear() keeps the memory), so after warm-up nothing allocates;
// a sweep bigger than any before grows it once rather than losing a fill.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "orders/codec.h"
#include "orders/order_events.h"
#include "orders/order_book.h"

namespace qpgate::orders {

struct TradeEvent {  // for the feed's Trade
  std::uint32_t instrument_id;
  std::uint64_t trade_id;
  std::int64_t price;
  std::int64_t quantity;
  Side aggressor_side;
};

struct OutMessage {
  std::uint32_t session;   // destination
  std::uint32_t offset;    // into OutBuffer::bytes()
  std::uint32_t length;
  std::uint64_t app_seq;   // 0 = not sequenced (Welcome)
};

class OutBuffer {
 public:
  explicit OutBuffer(std::size_t bytes = 64 * 1024, std::size_t messages = 512) {
    bytes_.reserve(bytes);
    messages_.reserve(messages);
    levels_.reserve(messages);
    trades_.reserve(messages);
    order_events_.reserve(messages);
  }

  void clear() noexcept {
    bytes_.clear();
    messages_.clear();
    levels_.clear();
    trades_.clear();
    order_events_.clear();
    durable_position_ = 0;
  }

  std::span<const OutMessage> messages() const noexcept { return messages_; }
  std::span<const std::uint8_t> bytes_of(const OutMessage& m) const noexcept {
    return {bytes_.data() + m.offset, m.length};
  }
  std::span<const LevelChange> level_changes() const noexcept { return levels_; }
  std::span<const TradeEvent> trades() const noexcept { return trades_; }
  std::span<const OrderEvent> order_events() const noexcept { return order_events_; }
  // Send nothing (messages or feed events) before the journal's
  // durable_position() reaches this.
  std::uint64_t durable_position() const noexcept { return durable_position_; }

  // Producer side (the handler).
  void add(std::uint32_t session, std::uint64_t app_seq, const OrderMessage& message) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + kMaxEncodedBytes);
    const std::size_t n = encode(message, std::span<std::uint8_t>{bytes_.data() + at, kMaxEncodedBytes});
    bytes_.resize(at + n);
    messages_.push_back(OutMessage{session, static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(n), app_seq});
  }
  void add_level(const LevelChange& c) { levels_.push_back(c); }
  void add_trade(const TradeEvent& t) { trades_.push_back(t); }
  void add_order_event(const OrderEvent& e) { order_events_.push_back(e); }
  void require_durable(std::uint64_t position) noexcept {
    if (position > durable_position_) durable_position_ = position;
  }

 private:
  std::vector<std::uint8_t> bytes_;
  std::vector<OutMessage> messages_;
  std::vector<LevelChange> levels_;
  std::vector<TradeEvent> trades_;
  std::vector<OrderEvent> order_events_;
  std::uint64_t durable_position_ = 0;
};

}  // namespace qpgate::orders
