// The order-entry messages as plain structs, one per qpgate.orders.v1 message
// (proto/qpgate/orders/v1/orders.proto), and the enums with their names.
// Numbers are the proto's numbers: they go on the wire and into the journal.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

namespace qpgate::orders {

enum class Side : std::uint8_t { kUnspecified = 0, kBuy = 1, kSell = 2 };
enum class TimeInForce : std::uint8_t { kUnspecified = 0, kDay = 1, kIoc = 2 };
enum class Liquidity : std::uint8_t { kUnspecified = 0, kMaker = 1, kTaker = 2 };

enum class RejectReason : std::uint8_t {
  kUnspecified = 0,
  kMalformed = 1,
  kThrottled = 2,
  kPriceCollar = 3,
  kSelfMatch = 4,
  kKillSwitch = 5,
  kCreditLimit = 6,
  kUnknownInstrument = 7,
  kDuplicate = 8,
  kUnknownOrder = 9,
  kNotEntitled = 10,
  kInvalidPrice = 11,
  kInvalidQuantity = 12,
  kSequenceAhead = 13,
  kBookFull = 14,
  kUnknownAccount = 15,
  kJournalFailure = 16,
  kIdLimit = 17,
};
inline constexpr std::size_t kRejectReasons = 18;

enum class CancelReason : std::uint8_t {
  kUnspecified = 0,
  kRequested = 1,
  kIocRemainder = 2,
  kSelfMatch = 3,
  kDisconnect = 4,
};

// Names as in the proto (and in metrics labels).
std::string_view name_of(RejectReason r) noexcept;
std::string_view name_of(CancelReason r) noexcept;
std::string_view name_of(Side s) noexcept;

inline constexpr Side opposite(Side s) noexcept { return s == Side::kBuy ? Side::kSell : Side::kBuy; }

// ---- client -> gateway ----
struct Hello {
  std::uint64_t last_app_seq = 0;
};
struct NewOrder {
  std::uint64_t client_order_id = 0;
  std::uint32_t instrument_id = 0;
  Side side = Side::kUnspecified;
  std::int64_t price = 0;
  std::int64_t quantity = 0;
  TimeInForce time_in_force = TimeInForce::kUnspecified;
  std::uint64_t account = 0;
};
struct Cancel {
  std::uint64_t client_order_id = 0;
  std::uint64_t orig_client_order_id = 0;
  std::uint32_t instrument_id = 0;
};
struct Replace {
  std::uint64_t client_order_id = 0;
  std::uint64_t orig_client_order_id = 0;
  std::uint32_t instrument_id = 0;
  std::int64_t price = 0;
  std::int64_t quantity = 0;
};

// ---- gateway -> client ----
struct Welcome {
  std::uint64_t app_seq = 0;
  std::uint64_t resend_from = 0;
};
struct Ack {
  std::uint64_t app_seq = 0;
  std::uint64_t client_order_id = 0;
  std::uint64_t order_id = 0;
  bool possible_resend = false;
};
struct Reject {
  std::uint64_t app_seq = 0;
  std::uint64_t client_order_id = 0;
  RejectReason reason = RejectReason::kUnspecified;
  std::string_view text;  // decode: points into the input buffer
  bool possible_resend = false;
};
struct Fill {
  std::uint64_t app_seq = 0;
  std::uint64_t client_order_id = 0;
  std::uint64_t order_id = 0;
  std::uint32_t instrument_id = 0;
  Side side = Side::kUnspecified;
  std::int64_t price = 0;
  std::int64_t quantity = 0;
  std::int64_t leaves_quantity = 0;
  std::uint64_t trade_id = 0;
  Liquidity liquidity = Liquidity::kUnspecified;
};
struct CancelAck {
  std::uint64_t app_seq = 0;
  std::uint64_t client_order_id = 0;
  std::uint64_t orig_client_order_id = 0;
  std::uint64_t order_id = 0;
  CancelReason reason = CancelReason::kUnspecified;
  std::int64_t cancelled_quantity = 0;
  bool possible_resend = false;
};
struct ReplaceAck {
  std::uint64_t app_seq = 0;
  std::uint64_t client_order_id = 0;
  std::uint64_t orig_client_order_id = 0;
  std::uint64_t order_id = 0;
  std::int64_t price = 0;
  std::int64_t quantity = 0;
  bool priority_kept = false;
  bool possible_resend = false;
};

// OrderMessage's oneof; the variant index is not the field number (see
// body_field_number in codec.h).
using OrderMessage =
    std::variant<Hello, NewOrder, Cancel, Replace, Welcome, Ack, Reject, Fill, CancelAck, ReplaceAck>;

}  // namespace qpgate::orders
