// A price-time priority limit order book for one instrument.
//
// Price levels live in a dense array over the instrument's price band, one
// slot per tick, with a bitmap of non-empty levels per side. Order-entry
// instruments have a bounded band (the collar and the instrument's band keep
// prices within a few thousand ticks of the reference), so the array is small
// and: finding a price's level is one subtraction and division, inserting a
// new level moves nothing (a tree or sorted vector would allocate or shift),
// and the next best level after one empties is a scan of the bitmap, 64
// levels per word, usually in the same word. Each level is a FIFO of pooled
// order nodes linked by index (time priority). Nothing allocates after
// construction.
//
// The book matches and keeps state; it does not know sessions, risk or
// messages. What happens is reported to a BookListener, in order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "orders/order_pool.h"
#include "orders/types.h"

namespace qpgate::orders {

enum class SelfMatchPolicy : std::uint8_t {
  kCancelNewest = 0,  // the aggressing order's remainder is cancelled; the resting order stays (default)
  kCancelOldest = 1,  // the resting order is cancelled; the aggressor keeps matching
  kCancelBoth = 2,
};

struct BookConfig {
  std::uint32_t instrument_id = 0;
  std::int64_t tick_size = 1;   // price mantissas are multiples of this
  std::int64_t min_price = 1;   // the band the book can hold, inclusive, tick multiples
  std::int64_t max_price = 100000;
  SelfMatchPolicy self_match = SelfMatchPolicy::kCancelNewest;
};

enum class LevelAction : std::uint8_t { kAdd = 1, kModify = 2, kDelete = 3 };  // = BookLevelUpdate.Action

// A price level's new content (for the feed's BookLevelUpdate).
struct LevelChange {
  std::uint32_t instrument_id;
  Side side;
  LevelAction action;
  std::int64_t price;
  std::int64_t quantity;  // total open quantity at the price (0 on delete)
  std::uint32_t order_count;
};

class BookListener {
 public:
  virtual ~BookListener() = default;
  // A match: `aggressor` and `resting` already show their leaves after it.
  virtual void on_trade(const OrderNode& aggressor, const OrderNode& resting, std::int64_t price,
                        std::int64_t quantity) = 0;
  // A resting order removed by self-match prevention (kCancelOldest/kCancelBoth),
  // before its slot is released; `cancelled` is its open quantity.
  virtual void on_self_match_cancel(const OrderNode& resting, std::int64_t cancelled) = 0;
  // A resting order that was filled completely, before its slot is released.
  virtual void on_resting_done(const OrderNode& resting) = 0;
  virtual void on_level(const LevelChange& change) = 0;
};

// What became of an order handed to add() or replace().
struct MatchOutcome {
  bool rested = false;               // now resting in the book
  bool self_match_cancelled = false; // its remainder was cancelled by self-match prevention
  std::int64_t unmatched = 0;        // open quantity not resting (IOC rest or SMP), to be cancelled by the caller
};

struct LevelView {
  std::int64_t price;
  std::int64_t quantity;
  std::uint32_t order_count;
};

class OrderBook {
 public:
  OrderBook(const BookConfig& config, OrderPool& pool);

  const BookConfig& config() const noexcept { return config_; }
  bool price_in_band(std::int64_t price) const noexcept;  // inside the band and a tick multiple

  // The node at `slot` is filled in (side, price, leaves, account, ...) and not
  // resting. Matches it, then rests a DAY remainder. Filled resting orders are
  // released to the pool; the aggressor's slot stays the caller's unless rested.
  MatchOutcome add(std::uint32_t slot, BookListener& listener);

  // Removes a resting order; returns its open quantity. The slot stays allocated.
  std::int64_t cancel(std::uint32_t slot, BookListener& listener);

  // New price and/or open quantity for a resting order. Same price and a
  // smaller quantity keeps its place; otherwise it goes to the back of the new
  // level, and matches first if the new price crosses.
  MatchOutcome replace(std::uint32_t slot, std::int64_t new_price, std::int64_t new_quantity, bool& priority_kept,
                       BookListener& listener);

  // Would an order of `account` on `side` at `price` meet its own account's
  // order first? (Self-match prevention rejects it up front then.)
  bool would_self_match_first(Side side, std::int64_t price, std::uint64_t account) const noexcept;

  // Best `out.size()` levels of a side, best first; returns how many.
  std::size_t top(Side side, std::span<LevelView> out) const noexcept;
  bool best(Side side, LevelView& out) const noexcept;
  std::uint32_t resting_orders() const noexcept { return resting_; }

 private:
  struct Level {
    std::int64_t quantity = 0;
    std::uint32_t count = 0;
    std::uint32_t head = kNoSlot;
    std::uint32_t tail = kNoSlot;
  };
  struct SideBook {
    std::vector<Level> levels;
    std::vector<std::uint64_t> bitmap;  // bit i: levels[i] has orders
    std::int64_t best = -1;             // index of the best level, -1 = empty
  };

  std::size_t index_of(std::int64_t price) const noexcept {
    return static_cast<std::size_t>((price - config_.min_price) / config_.tick_size);
  }
  std::int64_t price_of(std::size_t index) const noexcept {
    return config_.min_price + static_cast<std::int64_t>(index) * config_.tick_size;
  }
  SideBook& side_book(Side s) noexcept { return s == Side::kBuy ? bids_ : asks_; }
  const SideBook& side_book(Side s) const noexcept { return s == Side::kBuy ? bids_ : asks_; }

  MatchOutcome match_and_rest(std::uint32_t slot, BookListener& listener);
  void link_back(std::uint32_t slot);
  void unlink(std::uint32_t slot);
  void emit_level(Side side, std::size_t index, std::uint32_t count_before, BookListener& listener);
  // Next non-empty level at or worse than `from` (bids: downwards, asks: upwards).
  std::int64_t next_level(Side side, std::int64_t from) const noexcept;
  void refresh_best(Side side) noexcept;

  BookConfig config_;
  OrderPool& pool_;
  SideBook bids_;
  SideBook asks_;
  std::uint32_t resting_ = 0;
};

}  // namespace qpgate::orders
