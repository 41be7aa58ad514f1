// The checks NewOrder and Replace share (orders/order_checks.h), on their
// own: each refuses with its reason and says why in words a trader can act
// on, and lets through what it should.
#include "orders/order_checks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "orders/order_pool.h"

namespace qpgate::orders {
namespace {

// A book of tick 5 within [100, 10000], one resting sell at 1000 of account 7.
class OrderChecks : public ::testing::Test {
 protected:
  OrderChecks() : pool_(8), book_(BookConfig{1, 5, 100, 10000, SelfMatchPolicy::kCancelNewest}, pool_), collar_(CollarConfig{CollarMode::kTicks, 10, 1000}, 5) {
    const std::uint32_t slot = pool_.allocate();
    OrderNode& n = pool_[slot];
    n.order_id = 1;
    n.side = Side::kSell;
    n.price = 1000;
    n.leaves = 10;
    n.account = 7;
    n.time_in_force = TimeInForce::kDay;
    struct : BookListener {
      void on_trade(const OrderNode&, const OrderNode&, std::int64_t, std::int64_t) override {}
      void on_self_match_cancel(const OrderNode&, std::int64_t) override {}
      void on_resting_done(const OrderNode&) override {}
      void on_level(const LevelChange&) override {}
    } quiet;
    book_.add(slot, quiet);
  }

  CheckedInstrument ins() const { return CheckedInstrument{book_, collar_, 1000}; }
  std::string said() const { return why_.c_str(); }

  OrderPool pool_;
  OrderBook book_;
  PriceCollar collar_;
  RejectText why_;
};

TEST_F(OrderChecks, ShapeRefusesAPriceOffTheTickGridOrOutsideTheBand) {
  std::int64_t notional = 0;
  EXPECT_EQ(check_shape(ins(), OrderTerms{1, Side::kBuy, 1001, 1}, notional, why_), RejectReason::kInvalidPrice);
  EXPECT_EQ(said(), "price 1001 is not a multiple of tick 5 within [100, 10000]");
  EXPECT_EQ(check_shape(ins(), OrderTerms{1, Side::kBuy, 10005, 1}, notional, why_), RejectReason::kInvalidPrice);
  EXPECT_EQ(check_shape(ins(), OrderTerms{1, Side::kBuy, 95, 1}, notional, why_), RejectReason::kInvalidPrice);
}

TEST_F(OrderChecks, ShapeRefusesAQuantityOutsideOneToTheMaximumOrANotionalThatOverflows) {
  std::int64_t notional = 0;
  for (const std::int64_t q : {std::int64_t{0}, std::int64_t{-3}, std::int64_t{1001}}) {
    EXPECT_EQ(check_shape(ins(), OrderTerms{1, Side::kBuy, 1000, q}, notional, why_), RejectReason::kInvalidQuantity) << q;
    EXPECT_EQ(said(), "quantity " + std::to_string(q) + " is not in 1..1000");
  }
  const CheckedInstrument huge{book_, collar_, std::numeric_limits<std::int64_t>::max()};
  OrderBook wide(BookConfig{2, std::int64_t{1} << 40, std::int64_t{1} << 40, std::int64_t{1} << 41, SelfMatchPolicy::kCancelNewest}, pool_);  // two levels
  const CheckedInstrument overflow{wide, collar_, std::numeric_limits<std::int64_t>::max()};
  EXPECT_EQ(check_shape(overflow, OrderTerms{1, Side::kBuy, std::int64_t{1} << 40, std::int64_t{1} << 30}, notional, why_),
            RejectReason::kInvalidQuantity);
  EXPECT_EQ(check_shape(huge, OrderTerms{1, Side::kBuy, 1000, 7}, notional, why_), kPasses);
  EXPECT_EQ(notional, 7000);
}

TEST_F(OrderChecks, RiskRefusesAKilledAccountAndAnOrderPastTheCreditLimit) {
  const OrderTerms t{7, Side::kBuy, 1000, 5};
  EXPECT_EQ(check_risk(t, RiskView{1, 1'000'000, 0}, 5000, why_), RejectReason::kKillSwitch);
  EXPECT_EQ(said(), "account 7: kill switch is set");
  EXPECT_EQ(check_risk(t, RiskView{0, 10'000, 6'000}, 5000, why_), RejectReason::kCreditLimit);
  EXPECT_EQ(said(), "account 7: open notional 6000 + order notional 5000 exceeds credit limit 10000");
  EXPECT_EQ(check_risk(t, RiskView{0, 10'000, 5'000}, 5000, why_), kPasses) << "up to the limit itself";
  EXPECT_EQ(check_risk(t, RiskView{0, 10'000, std::numeric_limits<std::uint64_t>::max() - 10}, 5000, why_),
            RejectReason::kCreditLimit)
      << "an open notional that would wrap is over any limit";
}

TEST_F(OrderChecks, RiskNeverRefusesAReplaceThatLowersTheNotionalExceptOnTheKillSwitch) {
  const OrderTerms t{7, Side::kBuy, 1000, 1};
  EXPECT_EQ(check_risk(t, RiskView{0, 100, 50'000}, -4000, why_), kPasses) << "already over the limit, and it shrinks";
  EXPECT_EQ(check_risk(t, RiskView{1, 100, 50'000}, -4000, why_), RejectReason::kKillSwitch);
}

TEST_F(OrderChecks, BookRefusesAPriceOutsideTheCollarAndAFirstTradeAgainstTheAccountsOwnOrder) {
  // Reference 1000, ten ticks of 5: [950, 1050].
  EXPECT_EQ(check_book(ins(), OrderTerms{1, Side::kBuy, 1055, 1}, true, why_), RejectReason::kPriceCollar);
  EXPECT_EQ(said(), "buy price 1055 is above the collar bound 1050 (reference 1000)");
  EXPECT_EQ(check_book(ins(), OrderTerms{1, Side::kSell, 945, 1}, true, why_), RejectReason::kPriceCollar);
  EXPECT_EQ(said(), "sell price 945 is below the collar bound 950 (reference 1000)");
  EXPECT_EQ(check_book(ins(), OrderTerms{7, Side::kBuy, 1000, 1}, true, why_), RejectReason::kSelfMatch);
  EXPECT_EQ(said(), "would trade first against account 7's own resting order");
  EXPECT_EQ(check_book(ins(), OrderTerms{8, Side::kBuy, 1000, 1}, true, why_), kPasses) << "another account trades";
  EXPECT_EQ(check_book(ins(), OrderTerms{7, Side::kBuy, 995, 1}, true, why_), kPasses) << "below the own sell: no trade";
}

TEST_F(OrderChecks, BookLetsAReplaceThatKeepsItsPriceStayWhereItIs) {
  EXPECT_EQ(check_book(ins(), OrderTerms{7, Side::kBuy, 1055, 1}, false, why_), kPasses);
}

}  // namespace
}  // namespace qpgate::orders
