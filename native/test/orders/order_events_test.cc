// What a plugged-in (JS) order handler is told: one event per step of each
// order, in processing order, with the fields it needs to forward the order
// elsewhere; and the queue that holds them until the journal has them.
#include <gtest/gtest.h>

#include <cstring>

#include "feed/le.h"
#include "orders/order_events.h"
#include "support.h"

namespace qpgate::orders {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)

class OrderEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    handler_ = OrderHandler::open(small_config(dir_.file("journal")), error);
    ASSERT_NE(handler_, nullptr) << error;
  }
  std::vector<OrderEvent> events_of(std::uint32_t session, const OrderMessage& m) {
    out_.clear();
    handler_->on_message(session, bytes_of(m), 1, out_);
    return {out_.order_events().begin(), out_.order_events().end()};
  }

  TempDir dir_;
  std::unique_ptr<OrderHandler> handler_;
  OutBuffer out_;
};

TEST_F(OrderEventsTest, AcceptThenFillsOnBothSidesCarryTheOrdersFields) {
  const auto resting = events_of(kSessionB, sell(1, 100, 10));
  ASSERT_EQ(resting.size(), 1u);
  EXPECT_EQ(resting[0].kind, OrderEventKind::kAccepted);
  EXPECT_EQ(resting[0].session, kSessionB);
  EXPECT_EQ(resting[0].account, kAccountB);
  EXPECT_EQ(resting[0].instrument_id, kInstrument);
  EXPECT_EQ(resting[0].side, Side::kSell);
  EXPECT_EQ(resting[0].time_in_force, TimeInForce::kDay);
  EXPECT_EQ(resting[0].price, 100);
  EXPECT_EQ(resting[0].quantity, 10);
  EXPECT_EQ(resting[0].leaves, 10);
  EXPECT_EQ(resting[0].app_seq, 1u);
  const std::uint64_t sell_id = resting[0].order_id;
  EXPECT_NE(sell_id, 0u);

  const auto crossing = events_of(kSessionA, buy(1, 105, 4));
  ASSERT_EQ(crossing.size(), 3u) << "accepted, then the taker's fill, then the maker's";
  EXPECT_EQ(crossing[0].kind, OrderEventKind::kAccepted);
  EXPECT_EQ(crossing[0].leaves, 4) << "accepted before it matched";
  EXPECT_EQ(crossing[0].price, 105);
  const OrderEvent& taker = crossing[1];
  const OrderEvent& maker = crossing[2];
  EXPECT_EQ(taker.kind, OrderEventKind::kFilled);
  EXPECT_EQ(taker.order_id, crossing[0].order_id);
  EXPECT_EQ(taker.price, 100) << "a fill's price is the trade's";
  EXPECT_EQ(taker.quantity, 4);
  EXPECT_EQ(taker.leaves, 0);
  EXPECT_EQ(maker.kind, OrderEventKind::kFilled);
  EXPECT_EQ(maker.order_id, sell_id);
  EXPECT_EQ(maker.session, kSessionB);
  EXPECT_EQ(maker.leaves, 6);
  EXPECT_EQ(maker.app_seq, 2u);
  EXPECT_NE(taker.trade_id, 0u);
  EXPECT_EQ(taker.trade_id, maker.trade_id);
}

TEST_F(OrderEventsTest, ReplaceAndCancelNameTheOrderTheyActOn) {
  const std::uint64_t id = events_of(kSessionB, sell(1, 100, 10))[0].order_id;
  const auto replaced = events_of(kSessionB, Replace{2, 1, kInstrument, 110, 8});
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0].kind, OrderEventKind::kReplaced);
  EXPECT_EQ(replaced[0].order_id, id);
  EXPECT_EQ(replaced[0].client_order_id, 2u);
  EXPECT_EQ(replaced[0].orig_client_order_id, 1u);
  EXPECT_EQ(replaced[0].price, 110);
  EXPECT_EQ(replaced[0].quantity, 8);
  EXPECT_EQ(replaced[0].leaves, 8);

  const auto cancelled = events_of(kSessionB, Cancel{3, 1, kInstrument});
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(cancelled[0].kind, OrderEventKind::kCancelled);
  EXPECT_EQ(cancelled[0].cancel_reason, CancelReason::kRequested);
  EXPECT_EQ(cancelled[0].order_id, id);
  EXPECT_EQ(cancelled[0].client_order_id, 3u);
  EXPECT_EQ(cancelled[0].orig_client_order_id, 1u);
  EXPECT_EQ(cancelled[0].quantity, 8);
  EXPECT_EQ(cancelled[0].leaves, 0);
}

TEST_F(OrderEventsTest, UnsolicitedCancelsAndRejectsTellWhatHappened) {
  const auto ioc = events_of(kSessionA, buy(1, 100, 5, kAccountA, TimeInForce::kIoc));
  ASSERT_EQ(ioc.size(), 2u);
  EXPECT_EQ(ioc[0].kind, OrderEventKind::kAccepted);
  EXPECT_EQ(ioc[1].kind, OrderEventKind::kCancelled);
  EXPECT_EQ(ioc[1].cancel_reason, CancelReason::kIocRemainder);
  EXPECT_EQ(ioc[1].quantity, 5);

  EXPECT_TRUE(events_of(kSessionA, NewOrder{2, 99, Side::kBuy, 100, 1, TimeInForce::kDay, kAccountA}).empty())
      << "a rejected order never reached the book: no event";

  events_of(kSessionA, buy(3, 100, 2));
  out_.clear();
  handler_->on_disconnect(kSessionA, 2, out_);
  ASSERT_EQ(out_.order_events().size(), 1u);
  EXPECT_EQ(out_.order_events()[0].kind, OrderEventKind::kCancelled);
  EXPECT_EQ(out_.order_events()[0].cancel_reason, CancelReason::kDisconnect);
  EXPECT_EQ(out_.order_events()[0].client_order_id, 3u);
}

TEST(OrderEventQueue, ReleasesOnlyDurableEventsInOrderAndKeepsWhatTheSinkRefuses) {
  OrderEventQueue q;
  for (std::uint64_t i = 1; i <= 100; ++i) {
    OrderEvent e;
    e.order_id = i;
    q.push(e, i <= 70 ? 10 : 20);  // the first 70 durable at 10, the rest at 20
  }
  std::vector<std::uint64_t> seen;
  std::size_t batches = 0;
  const OrderEventSink take_all = [&](std::span<const OrderEvent> b) {
    EXPECT_LE(b.size(), order_event_record::kMaxPerRecord);
    ++batches;
    for (const OrderEvent& e : b) seen.push_back(e.order_id);
    return true;
  };
  EXPECT_EQ(q.release(9, take_all), 0u) << "nothing is durable yet";
  EXPECT_EQ(q.release(10, take_all), 70u);
  EXPECT_EQ(batches, 2u) << "64 + 6";
  bool refuse = true;
  const OrderEventSink full_once = [&](std::span<const OrderEvent> b) {
    if (refuse) {
      refuse = false;
      return false;
    }
    return take_all(b);
  };
  EXPECT_EQ(q.release(20, full_once), 0u) << "the ring was full: keep them";
  EXPECT_EQ(q.size(), 30u);
  EXPECT_EQ(q.release(20, full_once), 30u);
  ASSERT_EQ(seen.size(), 100u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
  EXPECT_EQ(q.size(), 0u);
}

TEST(OrderEventRecord, LayoutIsTheOneDocumented) {
  OrderEvent e;
  e.kind = OrderEventKind::kCancelled;
  e.side = Side::kSell;
  e.time_in_force = TimeInForce::kIoc;
  e.cancel_reason = CancelReason::kSelfMatch;
  e.session = 0x01020304;
  e.instrument_id = 0x0A0B0C0D;
  e.order_id = 11;
  e.client_order_id = 12;
  e.orig_client_order_id = 13;
  e.account = 14;
  e.price = -15;
  e.quantity = 16;
  e.leaves = 17;
  e.trade_id = 18;
  e.app_seq = 19;
  const OrderEvent two[2] = {e, e};
  std::vector<std::uint8_t> b(order_event_record::kHeaderBytes + 2 * order_event_record::kEventBytes, 0xEE);
  encode_order_events(7, two, 20, b.data());
  using feed::load_le;
  EXPECT_EQ(load_le<std::uint32_t>(b.data()), 7u);
  EXPECT_EQ(load_le<std::uint32_t>(b.data() + 4), 2u);
  const std::uint8_t* p = b.data() + order_event_record::kHeaderBytes + order_event_record::kEventBytes;
  EXPECT_EQ(p[0], 4);
  EXPECT_EQ(p[1], static_cast<std::uint8_t>(Side::kSell));
  EXPECT_EQ(p[2], static_cast<std::uint8_t>(TimeInForce::kIoc));
  EXPECT_EQ(p[3], 3);
  EXPECT_EQ(load_le<std::uint32_t>(p + 4), 0x01020304u);
  EXPECT_EQ(load_le<std::uint32_t>(p + 8), 0x0A0B0C0Du);
  EXPECT_EQ(load_le<std::uint32_t>(p + 12), 0u);
  std::uint64_t expected = 11;
  for (std::size_t off = 16; off <= 80; off += 8) {
    const auto v = load_le<std::int64_t>(p + off);
    EXPECT_EQ(off == 48 ? -v : v, static_cast<std::int64_t>(expected)) << "offset " << off;
    ++expected;
  }
  EXPECT_EQ(load_le<std::uint64_t>(p + 88), 20u);
}

}  // namespace
}  // namespace qpgate::orders
