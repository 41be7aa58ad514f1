#include "orders/order_checks.h"

#include <cstdarg>
#include <cstdio>

namespace qpgate::orders {

namespace {

using ull = unsigned long long;
using ll = long long;

// price × quantity, or false on overflow / negative.
bool notional_of(std::int64_t price, std::int64_t quantity, std::int64_t& out) {
  return !__builtin_mul_overflow(price, quantity, &out) && out >= 0;
}

}  // namespace

void RejectText::say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(bytes, sizeof bytes, format, args);
  va_end(args);
}

RejectReason check_shape(const CheckedInstrument& ins, const OrderTerms& t, std::int64_t& notional, RejectText& why) {
  const BookConfig& bc = ins.book.config();
  if (!ins.book.price_in_band(t.price)) {
    why.say("price %lld is not a multiple of tick %lld within [%lld, %lld]", static_cast<ll>(t.price),
            static_cast<ll>(bc.tick_size), static_cast<ll>(bc.min_price), static_cast<ll>(bc.max_price));
    return RejectReason::kInvalidPrice;
  }
  if (t.quantity <= 0 || t.quantity > ins.max_quantity || !notional_of(t.price, t.quantity, notional)) {
    why.say("quantity %lld is not in 1..%lld", static_cast<ll>(t.quantity), static_cast<ll>(ins.max_quantity));
    return RejectReason::kInvalidQuantity;
  }
  return kPasses;
}

RejectReason check_risk(const OrderTerms& t, const RiskView& risk, std::int64_t added, RejectText& why) {
  if (risk.kill_switch != 0) {
    why.say("account %llu: kill switch is set", static_cast<ull>(t.account));
    return RejectReason::kKillSwitch;
  }
  if (added <= 0) return kPasses;
  const std::uint64_t after = risk.open + static_cast<std::uint64_t>(added);
  if (after > risk.credit_limit || after < risk.open) {
    why.say("account %llu: open notional %llu + order notional %lld exceeds credit limit %llu", static_cast<ull>(t.account),
            static_cast<ull>(risk.open), static_cast<ll>(added), static_cast<ull>(risk.credit_limit));
    return RejectReason::kCreditLimit;
  }
  return kPasses;
}

RejectReason check_book(const CheckedInstrument& ins, const OrderTerms& t, bool price_changes, RejectText& why) {
  if (!price_changes) return kPasses;
  const bool buy = t.side == Side::kBuy;
  if (!ins.collar.allows(buy, t.price)) {
    const CollarBounds b = ins.collar.bounds();
    why.say("%s price %lld is %s the collar bound %lld (reference %lld)", buy ? "buy" : "sell", static_cast<ll>(t.price),
            buy ? "above" : "below", static_cast<ll>(buy ? b.upper : b.lower), static_cast<ll>(ins.collar.reference()));
    return RejectReason::kPriceCollar;
  }
  if (ins.book.config().self_match == SelfMatchPolicy::kCancelNewest &&
      ins.book.would_self_match_first(t.side, t.price, t.account)) {
    why.say("would trade first against account %llu's own resting order", static_cast<ull>(t.account));
    return RejectReason::kSelfMatch;
  }
  return kPasses;
}

}  // namespace qpgate::orders
