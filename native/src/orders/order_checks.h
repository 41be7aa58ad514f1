// The checks a NewOrder and a Replace share (order_handler.cc runs them in
// this order): the order's shape — price on the instrument's tick grid and
// band, quantity in 1..max_quantity with a notional that fits — then the
// account's risk — kill switch, credit limit — and the book — price collar,
// self-match. Each is a function of what it is shown, so it is tested on its
// own (native/test/orders/order_checks_test.cc) and says why in one place.
//
// A check returns RejectReason::kUnspecified when the order passes, else the
// reason, with the Reject's text written into `why`: a fixed buffer, so a
// refused order allocates nothing on the engine thread.
#pragma once

#include <cstdint>

#include "orders/codec.h"
#include "orders/collar.h"
#include "orders/order_book.h"
#include "orders/types.h"

namespace qpgate::orders {

struct RejectText {
  char bytes[kMaxRejectTextBytes] = {};
  __attribute__((format(printf, 2, 3))) void say(const char* format, ...);
  const char* c_str() const noexcept { return bytes; }
};

inline constexpr RejectReason kPasses = RejectReason::kUnspecified;

// The instrument an order is for, as the checks see it.
struct CheckedInstrument {
  const OrderBook& book;
  const PriceCollar& collar;
  std::int64_t max_quantity;
};

// The order as it would rest: a new order's terms, or a Replace's new price
// and quantity on the original order's account and side.
struct OrderTerms {
  std::uint64_t account = 0;
  Side side = Side::kBuy;
  std::int64_t price = 0;
  std::int64_t quantity = 0;
};

// Price and quantity; `notional` gets price × quantity.
RejectReason check_shape(const CheckedInstrument& ins, const OrderTerms& t, std::int64_t& notional, RejectText& why);

// What the account's journaled risk words allow (order_handler.h: the checks
// use the journaled snapshot). `added` is the notional the order adds to the
// account's open notional `open` (a Replace: new minus what the order held;
// nothing is refused for a decrease).
struct RiskView {
  std::uint64_t kill_switch = 0;
  std::uint64_t credit_limit = 0;
  std::uint64_t open = 0;
};
RejectReason check_risk(const OrderTerms& t, const RiskView& risk, std::int64_t added, RejectText& why);

// The collar and, under SelfMatchPolicy::kCancelNewest, a first trade against
// the account's own resting order. A Replace that keeps its price is not
// checked again (`price_changes` false): its priority and place are kept.
RejectReason check_book(const CheckedInstrument& ins, const OrderTerms& t, bool price_changes, RejectText& why);

}  // namespace qpgate::orders
