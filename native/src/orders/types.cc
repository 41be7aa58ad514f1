#include "orders/types.h"

#include <array>

namespace qpgate::orders {

std::string_view name_of(RejectReason r) noexcept {
  static constexpr std::array<std::string_view, kRejectReasons> kNames = {
      "REJECT_REASON_UNSPECIFIED",   "REJECT_REASON_MALFORMED",          "REJECT_REASON_THROTTLED",
      "REJECT_REASON_PRICE_COLLAR",  "REJECT_REASON_SELF_MATCH",         "REJECT_REASON_KILL_SWITCH",
      "REJECT_REASON_CREDIT_LIMIT",  "REJECT_REASON_UNKNOWN_INSTRUMENT", "REJECT_REASON_DUPLICATE",
      "REJECT_REASON_UNKNOWN_ORDER", "REJECT_REASON_NOT_ENTITLED",       "REJECT_REASON_INVALID_PRICE",
      "REJECT_REASON_INVALID_QUANTITY", "REJECT_REASON_SEQUENCE_AHEAD",  "REJECT_REASON_BOOK_FULL",
      "REJECT_REASON_UNKNOWN_ACCOUNT", "REJECT_REASON_JOURNAL_FAILURE", "REJECT_REASON_ID_LIMIT"};
  const auto i = static_cast<std::size_t>(r);
  return i < kNames.size() ? kNames[i] : "?";
}

std::string_view name_of(CancelReason r) noexcept {
  static constexpr std::array<std::string_view, 5> kNames = {
      "CANCEL_REASON_UNSPECIFIED", "CANCEL_REASON_REQUESTED", "CANCEL_REASON_IOC_REMAINDER",
      "CANCEL_REASON_SELF_MATCH", "CANCEL_REASON_DISCONNECT"};
  const auto i = static_cast<std::size_t>(r);
  return i < kNames.size() ? kNames[i] : "?";
}

std::string_view name_of(Side s) noexcept {
  switch (s) {
    case Side::kBuy: return "BUY";
    case Side::kSell: return "SELL";
    case Side::kUnspecified: break;
  }
  return "UNSPECIFIED";
}

}  // namespace qpgate::orders
