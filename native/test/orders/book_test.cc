// The limit order book: price-time priority, partial fills, sweeps, IOC,
// replace priority rules, self-match prevention, level events.
#include <gtest/gtest.h>

#include <vector>

#include "orders/order_book.h"

namespace qpgate::orders {
namespace {

struct Trade {
  std::uint64_t aggressor;
  std::uint64_t resting;
  std::int64_t price;
  std::int64_t quantity;
  std::int64_t aggressor_leaves;
  std::int64_t resting_leaves;
};

class Recorder : public BookListener {
 public:
  void on_trade(const OrderNode& a, const OrderNode& r, std::int64_t price, std::int64_t q) override {
    trades.push_back({a.order_id, r.order_id, price, q, a.leaves, r.leaves});
  }
  void on_self_match_cancel(const OrderNode& r, std::int64_t q) override { smp_cancelled.push_back({r.order_id, q}); }
  void on_resting_done(const OrderNode& r) override { done.push_back(r.order_id); }
  void on_level(const LevelChange& c) override { levels.push_back(c); }
  std::vector<Trade> trades;
  std::vector<std::pair<std::uint64_t, std::int64_t>> smp_cancelled;
  std::vector<std::uint64_t> done;
  std::vector<LevelChange> levels;
};

class BookTest : public ::testing::Test {
 protected:
  BookTest() : pool_(64), book_(BookConfig{1, 1, 1, 1000, SelfMatchPolicy::kCancelNewest}, pool_) {}

  std::uint32_t order(Side side, std::int64_t price, std::int64_t qty, std::uint64_t account,
                      TimeInForce tif = TimeInForce::kDay) {
    const std::uint32_t slot = pool_.allocate();
    OrderNode& n = pool_[slot];
    n.order_id = ++next_id_;
    n.side = side;
    n.price = price;
    n.leaves = qty;
    n.account = account;
    n.time_in_force = tif;
    return slot;
  }
  MatchOutcome add(Side side, std::int64_t price, std::int64_t qty, std::uint64_t account = 1,
                   TimeInForce tif = TimeInForce::kDay) {
    last_slot_ = order(side, price, qty, account, tif);
    return book_.add(last_slot_, rec_);
  }
  LevelView best(Side s) {
    LevelView v{0, 0, 0};
    book_.best(s, v);
    return v;
  }

  OrderPool pool_;
  OrderBook book_;
  Recorder rec_;
  std::uint64_t next_id_ = 0;
  std::uint32_t last_slot_ = kNoSlot;
};

TEST_F(BookTest, OrdersAtOnePriceFillInTimeOrder) {
  add(Side::kSell, 100, 5, 1);  // id 1
  add(Side::kSell, 100, 5, 2);  // id 2
  add(Side::kBuy, 100, 7, 3);   // id 3
  ASSERT_EQ(rec_.trades.size(), 2u);
  EXPECT_EQ(rec_.trades[0].resting, 1u);
  EXPECT_EQ(rec_.trades[0].quantity, 5);
  EXPECT_EQ(rec_.trades[1].resting, 2u);
  EXPECT_EQ(rec_.trades[1].quantity, 2);
  EXPECT_EQ(rec_.trades[1].resting_leaves, 3);
  EXPECT_EQ(best(Side::kSell).quantity, 3);
  EXPECT_EQ(best(Side::kSell).order_count, 1u);
}

TEST_F(BookTest, BetterPriceFillsBeforeEarlierWorsePrice) {
  add(Side::kSell, 101, 5, 1);  // earlier, worse
  add(Side::kSell, 100, 5, 2);  // later, better
  add(Side::kBuy, 101, 5, 3);
  ASSERT_EQ(rec_.trades.size(), 1u);
  EXPECT_EQ(rec_.trades[0].resting, 2u);
  EXPECT_EQ(rec_.trades[0].price, 100) << "trades at the resting order's price";
}

TEST_F(BookTest, PartialFillRestsTheRemainderAtItsLimit) {
  add(Side::kSell, 100, 3, 1);
  const MatchOutcome m = add(Side::kBuy, 102, 10, 2);
  EXPECT_TRUE(m.rested);
  EXPECT_EQ(best(Side::kBuy).price, 102);
  EXPECT_EQ(best(Side::kBuy).quantity, 7);
  EXPECT_EQ(book_.resting_orders(), 1u);
}

TEST_F(BookTest, AnAggressorSweepsSeveralLevelsBestFirst) {
  add(Side::kSell, 100, 2, 1);
  add(Side::kSell, 101, 2, 1);
  add(Side::kSell, 103, 2, 1);
  add(Side::kSell, 200, 2, 1);
  add(Side::kBuy, 103, 5, 2);
  ASSERT_EQ(rec_.trades.size(), 3u);
  EXPECT_EQ(rec_.trades[0].price, 100);
  EXPECT_EQ(rec_.trades[1].price, 101);
  EXPECT_EQ(rec_.trades[2].price, 103);
  EXPECT_EQ(rec_.trades[2].quantity, 1);
  EXPECT_EQ(best(Side::kSell).price, 103);
  EXPECT_EQ(best(Side::kSell).quantity, 1);
  LevelView top[4];
  ASSERT_EQ(book_.top(Side::kSell, top), 2u);
  EXPECT_EQ(top[1].price, 200);
}

TEST_F(BookTest, IocRemainderIsNotRested) {
  add(Side::kSell, 100, 2, 1);
  const MatchOutcome m = add(Side::kBuy, 100, 5, 2, TimeInForce::kIoc);
  EXPECT_FALSE(m.rested);
  EXPECT_EQ(m.unmatched, 3);
  EXPECT_EQ(book_.resting_orders(), 0u);
  LevelView v{};
  EXPECT_FALSE(book_.best(Side::kBuy, v));
}

TEST_F(BookTest, LevelEventsSayAddModifyDelete) {
  add(Side::kBuy, 50, 5, 1);
  add(Side::kBuy, 50, 5, 1);
  add(Side::kSell, 50, 10, 2);
  ASSERT_EQ(rec_.levels.size(), 3u);
  EXPECT_EQ(rec_.levels[0].action, LevelAction::kAdd);
  EXPECT_EQ(rec_.levels[1].action, LevelAction::kModify);
  EXPECT_EQ(rec_.levels[1].quantity, 10);
  EXPECT_EQ(rec_.levels[1].order_count, 2u);
  EXPECT_EQ(rec_.levels[2].action, LevelAction::kDelete) << "one event for the swept level, not one per order";
  EXPECT_EQ(rec_.levels[2].quantity, 0);
}

TEST_F(BookTest, ReplaceQuantityDownKeepsPriority) {
  add(Side::kSell, 100, 5, 1);
  const std::uint32_t first = last_slot_;
  add(Side::kSell, 100, 5, 2);
  bool kept = false;
  book_.replace(first, 100, 3, kept, rec_);
  EXPECT_TRUE(kept);
  add(Side::kBuy, 100, 3, 3);
  ASSERT_EQ(rec_.trades.size(), 1u);
  EXPECT_EQ(rec_.trades[0].resting, 1u);
}

TEST_F(BookTest, ReplaceQuantityUpLosesPriority) {
  add(Side::kSell, 100, 5, 1);
  const std::uint32_t first = last_slot_;
  add(Side::kSell, 100, 5, 2);
  bool kept = true;
  book_.replace(first, 100, 6, kept, rec_);
  EXPECT_FALSE(kept);
  add(Side::kBuy, 100, 5, 3);
  ASSERT_EQ(rec_.trades.size(), 1u);
  EXPECT_EQ(rec_.trades[0].resting, 2u) << "the replaced order went to the back";
}

TEST_F(BookTest, ReplacePriceChangeLosesPriorityAndMayTrade) {
  add(Side::kSell, 101, 5, 1);
  const std::uint32_t first = last_slot_;
  add(Side::kSell, 100, 5, 2);
  add(Side::kBuy, 99, 4, 3);
  const std::uint32_t bid = last_slot_;
  bool kept = true;
  const MatchOutcome m = book_.replace(bid, 100, 4, kept, rec_);  // now crosses
  EXPECT_FALSE(kept);
  EXPECT_FALSE(m.rested);
  ASSERT_EQ(rec_.trades.size(), 1u);
  EXPECT_EQ(rec_.trades[0].resting, 2u);
  book_.replace(first, 100, 5, kept, rec_);  // joins 100 behind order 2's remainder
  add(Side::kBuy, 100, 2, 3);
  ASSERT_EQ(rec_.trades.size(), 3u);
  EXPECT_EQ(rec_.trades[1].resting, 2u) << "order 2's remainder first";
  EXPECT_EQ(rec_.trades[2].resting, 1u) << "then the replaced order, behind it";
}

TEST_F(BookTest, SelfMatchCancelNewestStopsTheAggressor) {
  add(Side::kSell, 100, 2, 9);
  add(Side::kSell, 100, 2, 1);  // own
  const MatchOutcome m = add(Side::kBuy, 100, 5, 1);
  ASSERT_EQ(rec_.trades.size(), 1u);
  EXPECT_TRUE(m.self_match_cancelled);
  EXPECT_EQ(m.unmatched, 3);
  EXPECT_EQ(best(Side::kSell).quantity, 2) << "the resting own order stays";
  EXPECT_TRUE(book_.would_self_match_first(Side::kBuy, 100, 1));
  EXPECT_FALSE(book_.would_self_match_first(Side::kBuy, 99, 1));
}

TEST(BookSelfMatch, CancelOldestRemovesTheRestingOrderAndKeepsMatching) {
  OrderPool pool(16);
  OrderBook book(BookConfig{1, 1, 1, 1000, SelfMatchPolicy::kCancelOldest}, pool);
  Recorder rec;
  auto put = [&](std::uint64_t id, Side s, std::int64_t p, std::int64_t q, std::uint64_t acct) {
    const std::uint32_t slot = pool.allocate();
    pool[slot].order_id = id;
    pool[slot].side = s;
    pool[slot].price = p;
    pool[slot].leaves = q;
    pool[slot].account = acct;
    pool[slot].time_in_force = TimeInForce::kDay;
    return book.add(slot, rec);
  };
  put(1, Side::kSell, 100, 2, 1);  // own
  put(2, Side::kSell, 100, 2, 9);
  const MatchOutcome m = put(3, Side::kBuy, 100, 2, 1);
  ASSERT_EQ(rec.smp_cancelled.size(), 1u);
  EXPECT_EQ(rec.smp_cancelled[0].first, 1u);
  ASSERT_EQ(rec.trades.size(), 1u);
  EXPECT_EQ(rec.trades[0].resting, 2u);
  EXPECT_FALSE(m.self_match_cancelled);
  EXPECT_EQ(pool.in_use(), 1u) << "filled and cancelled resting slots are released; the done aggressor's is the caller's";
}

TEST_F(BookTest, NoAllocationAfterWarmUpAndSlotsReturnToThePool) {
  for (int i = 0; i < 20; ++i) add(Side::kSell, 100 + i, 1, 1);
  add(Side::kBuy, 1000, 20, 2, TimeInForce::kIoc);
  EXPECT_EQ(rec_.trades.size(), 20u);
  EXPECT_EQ(rec_.done.size(), 20u);
  EXPECT_EQ(pool_.in_use(), 1u) << "only the IOC aggressor, which the caller releases";
}

TEST_F(BookTest, PriceBandAndTicks) {
  OrderBook b(BookConfig{1, 5, 5, 100, SelfMatchPolicy::kCancelNewest}, pool_);
  EXPECT_TRUE(b.price_in_band(5));
  EXPECT_TRUE(b.price_in_band(100));
  EXPECT_FALSE(b.price_in_band(7));
  EXPECT_FALSE(b.price_in_band(0));
  EXPECT_FALSE(b.price_in_band(105));
}

}  // namespace
}  // namespace qpgate::orders
