// OrderMessage <-> protobuf bytes, with protozero (Debian's libprotozero-dev).
//
// The decoder is strict, because a gateway must not guess what an order
// meant: unknown fields, a missing or second oneof body, missing required
// fields, wrong wire types, out-of-range values and enums, fields repeated in
// one message and bytes after the message (which parse as one of these) are
// all errors. Each error says what was wrong, where (byte offset in the
// input) and the value given. It never reads outside the input and never
// allocates: text fields are views into the input.
//
// The encoder writes what protobufjs writes for the same message: fields in
// field-number order, zero/false/empty fields omitted, enums as int32 varints,
// int64 as two's-complement varints, the body always present (even if empty).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "orders/types.h"

namespace qpgate::orders {

// Inputs larger than this are refused before parsing: an order is < 100 bytes.
inline constexpr std::size_t kMaxMessageBytes = 1024;
// Room that is always enough for encode() (a Reject's text is cut to fit).
inline constexpr std::size_t kMaxEncodedBytes = 320;
inline constexpr std::size_t kMaxRejectTextBytes = 240;

enum class DecodeError : std::uint8_t {
  kNone = 0,
  kEmpty,             // zero bytes
  kTooLarge,          // more than kMaxMessageBytes
  kTruncated,         // the input ends inside a field
  kVarintTooLong,     // a varint of more than 10 bytes
  kInvalidTag,        // field number 0 or 19000..19999 (often trailing garbage)
  kUnknownWireType,   // wire type 3, 4 (groups), 6 or 7
  kWrongWireType,     // a known field with a wire type its type does not use
  kUnknownField,      // a field number the message does not have
  kNoBody,            // an OrderMessage with no oneof body
  kTwoBodies,         // an OrderMessage with two bodies
  kRepeatedField,     // a singular field twice in one message
  kMissingField,      // a required field absent (or an enum left UNSPECIFIED)
  kEnumOutOfRange,    // an enum number the proto does not define
  kValueOutOfRange,   // e.g. a uint32 above 2^32-1, a bool other than 0/1, a zero id
};
inline constexpr std::size_t kDecodeErrors = 15;
std::string_view name_of(DecodeError e) noexcept;

struct DecodeResult {
  DecodeError error = DecodeError::kNone;
  std::uint32_t offset = 0;           // byte offset in the input of the offending field
  std::uint64_t client_order_id = 0;  // the body's client_order_id, when it was read before the error
  char message[200] = {};             // NUL-terminated; empty when ok

  bool ok() const noexcept { return error == DecodeError::kNone; }
  std::string_view text() const noexcept { return std::string_view{message}; }
};

// Decodes one OrderMessage. On error `out` is unspecified.
DecodeResult decode(std::span<const std::uint8_t> bytes, OrderMessage& out) noexcept;

// Encodes into `out`; returns the bytes written, 0 if `out` is too small
// (never with kMaxEncodedBytes of room).
std::size_t encode(const OrderMessage& message, std::span<std::uint8_t> out) noexcept;

// The OrderMessage field number of the message's oneof body (hello = 1, ...).
std::uint32_t body_field_number(const OrderMessage& message) noexcept;
std::string_view body_name(const OrderMessage& message) noexcept;
// The message's client_order_id, 0 for one that has none (Hello, Welcome).
std::uint64_t client_order_id_of(const OrderMessage& message) noexcept;

}  // namespace qpgate::orders
