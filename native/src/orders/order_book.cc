#include "orders/order_book.h"

#include <algorithm>
#include <bit>

namespace qpgate::orders {

OrderBook::OrderBook(const BookConfig& config, OrderPool& pool) : config_(config), pool_(pool) {
  const auto levels = static_cast<std::size_t>((config_.max_price - config_.min_price) / config_.tick_size) + 1;
  for (SideBook* s : {&bids_, &asks_}) {
    s->levels.assign(levels, Level{});
    s->bitmap.assign((levels + 63) / 64, 0);
  }
}

bool OrderBook::price_in_band(std::int64_t price) const noexcept {
  return price >= config_.min_price && price <= config_.max_price && (price - config_.min_price) % config_.tick_size == 0;
}

std::int64_t OrderBook::next_level(Side side, std::int64_t from) const noexcept {
  const SideBook& sb = side_book(side);
  if (from < 0 || static_cast<std::size_t>(from) >= sb.levels.size()) return -1;
  auto word = static_cast<std::size_t>(from) / 64;
  const unsigned bit = static_cast<unsigned>(from % 64);
  if (side == Side::kBuy) {  // best bid = highest price: search downwards
    std::uint64_t w = sb.bitmap[word] & (bit == 63 ? ~0ULL : ((1ULL << (bit + 1)) - 1));
    while (true) {
      if (w != 0) return static_cast<std::int64_t>(word * 64 + 63 - static_cast<unsigned>(std::countl_zero(w)));
      if (word == 0) return -1;
      w = sb.bitmap[--word];
    }
  }
  std::uint64_t w = sb.bitmap[word] & (~0ULL << bit);  // best ask = lowest price: upwards
  while (true) {
    if (w != 0) return static_cast<std::int64_t>(word * 64 + static_cast<unsigned>(std::countr_zero(w)));
    if (++word == sb.bitmap.size()) return -1;
    w = sb.bitmap[word];
  }
}

void OrderBook::refresh_best(Side side) noexcept {
  SideBook& sb = side_book(side);
  if (sb.best < 0) return;
  sb.best = next_level(side, sb.best);
}

void OrderBook::link_back(std::uint32_t slot) {
  OrderNode& o = pool_[slot];
  SideBook& sb = side_book(o.side);
  const std::size_t i = index_of(o.price);
  Level& l = sb.levels[i];
  o.prev = l.tail;
  o.next = kNoSlot;
  if (l.tail != kNoSlot) {
    pool_[l.tail].next = slot;
  } else {
    l.head = slot;
  }
  l.tail = slot;
  l.quantity += o.leaves;
  ++l.count;
  o.resting = true;
  ++resting_;
  sb.bitmap[i / 64] |= 1ULL << (i % 64);
  const auto idx = static_cast<std::int64_t>(i);
  if (sb.best < 0 || (o.side == Side::kBuy ? idx > sb.best : idx < sb.best)) sb.best = idx;
}

void OrderBook::unlink(std::uint32_t slot) {
  OrderNode& o = pool_[slot];
  SideBook& sb = side_book(o.side);
  const std::size_t i = index_of(o.price);
  Level& l = sb.levels[i];
  if (o.prev != kNoSlot) {
    pool_[o.prev].next = o.next;
  } else {
    l.head = o.next;
  }
  if (o.next != kNoSlot) {
    pool_[o.next].prev = o.prev;
  } else {
    l.tail = o.prev;
  }
  o.prev = o.next = kNoSlot;
  l.quantity -= o.leaves;
  --l.count;
  o.resting = false;
  --resting_;
  if (l.count == 0) {
    sb.bitmap[i / 64] &= ~(1ULL << (i % 64));
    if (static_cast<std::int64_t>(i) == sb.best) refresh_best(o.side);
  }
}

void OrderBook::emit_level(Side side, std::size_t index, std::uint32_t count_before, BookListener& listener) {
  const Level& l = side_book(side).levels[index];
  LevelAction action = LevelAction::kModify;
  if (l.count == 0) {
    if (count_before == 0) return;
    action = LevelAction::kDelete;
  } else if (count_before == 0) {
    action = LevelAction::kAdd;
  }
  listener.on_level(LevelChange{config_.instrument_id, side, action, price_of(index), l.quantity, l.count});
}

MatchOutcome OrderBook::match_and_rest(std::uint32_t slot, BookListener& listener) {
  OrderNode& a = pool_[slot];
  const Side contra = opposite(a.side);
  SideBook& cb = side_book(contra);
  MatchOutcome out;
  while (a.leaves > 0 && cb.best >= 0) {
    const auto li = static_cast<std::size_t>(cb.best);
    const std::int64_t level_price = price_of(li);
    const bool crosses = a.side == Side::kBuy ? level_price <= a.price : level_price >= a.price;
    if (!crosses) break;
    Level& level = cb.levels[li];
    const std::uint32_t count_before = level.count;
    bool stop = false;
    std::uint32_t cur = level.head;
    while (cur != kNoSlot && a.leaves > 0) {
      OrderNode& r = pool_[cur];
      const std::uint32_t next = r.next;
      if (r.account == a.account) {
        if (config_.self_match == SelfMatchPolicy::kCancelNewest) {
          stop = true;
          break;
        }
        const std::int64_t cancelled = r.leaves;
        unlink(cur);
        listener.on_self_match_cancel(r, cancelled);
        pool_.release(cur);
        if (config_.self_match == SelfMatchPolicy::kCancelBoth) {
          stop = true;
          break;
        }
        cur = next;
        continue;
      }
      const std::int64_t q = std::min(a.leaves, r.leaves);
      a.leaves -= q;
      r.leaves -= q;
      level.quantity -= q;
      listener.on_trade(a, r, level_price, q);
      if (r.leaves == 0) {
        unlink(cur);
        listener.on_resting_done(r);
        pool_.release(cur);
      }
      cur = next;
    }
    emit_level(contra, li, count_before, listener);
    if (stop) {
      out.self_match_cancelled = true;
      break;
    }
  }
  if (a.leaves > 0) {
    if (!out.self_match_cancelled && a.time_in_force == TimeInForce::kDay) {
      const std::size_t i = index_of(a.price);
      const std::uint32_t before = side_book(a.side).levels[i].count;
      link_back(slot);
      emit_level(a.side, i, before, listener);
      out.rested = true;
    } else {
      out.unmatched = a.leaves;
    }
  }
  return out;
}

MatchOutcome OrderBook::add(std::uint32_t slot, BookListener& listener) { return match_and_rest(slot, listener); }

std::int64_t OrderBook::cancel(std::uint32_t slot, BookListener& listener) {
  OrderNode& o = pool_[slot];
  const std::size_t i = index_of(o.price);
  const std::uint32_t before = side_book(o.side).levels[i].count;
  const std::int64_t leaves = o.leaves;
  unlink(slot);
  emit_level(o.side, i, before, listener);
  return leaves;
}

MatchOutcome OrderBook::replace(std::uint32_t slot, std::int64_t new_price, std::int64_t new_quantity,
                                bool& priority_kept, BookListener& listener) {
  OrderNode& o = pool_[slot];
  const std::size_t i = index_of(o.price);
  if (new_price == o.price && new_quantity <= o.leaves) {
    Level& l = side_book(o.side).levels[i];
    l.quantity -= o.leaves - new_quantity;
    o.leaves = new_quantity;
    emit_level(o.side, i, l.count, listener);
    priority_kept = true;
    MatchOutcome out;
    out.rested = true;
    return out;
  }
  priority_kept = false;
  cancel(slot, listener);
  o.price = new_price;
  o.leaves = new_quantity;
  return match_and_rest(slot, listener);
}

bool OrderBook::would_self_match_first(Side side, std::int64_t price, std::uint64_t account) const noexcept {
  const SideBook& cb = side_book(opposite(side));
  if (cb.best < 0) return false;
  const std::int64_t level_price = price_of(static_cast<std::size_t>(cb.best));
  const bool crosses = side == Side::kBuy ? level_price <= price : level_price >= price;
  if (!crosses) return false;
  const std::uint32_t head = cb.levels[static_cast<std::size_t>(cb.best)].head;
  return head != kNoSlot && pool_[head].account == account;
}

std::size_t OrderBook::top(Side side, std::span<LevelView> out) const noexcept {
  const SideBook& sb = side_book(side);
  std::size_t n = 0;
  std::int64_t i = sb.best;
  while (i >= 0 && n < out.size()) {
    const Level& l = sb.levels[static_cast<std::size_t>(i)];
    out[n++] = LevelView{price_of(static_cast<std::size_t>(i)), l.quantity, l.count};
    i = next_level(side, side == Side::kBuy ? i - 1 : i + 1);
  }
  return n;
}

bool OrderBook::best(Side side, LevelView& out) const noexcept {
  LevelView v[1];
  if (top(side, v) == 0) return false;
  out = v[0];
  return true;
}

}  // namespace qpgate::orders
