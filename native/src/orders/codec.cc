#include "orders/codec.h"

#include <protozero/buffer_fixed.hpp>
#include <protozero/exception.hpp>
#include <protozero/pbf_reader.hpp>
#include <protozero/pbf_writer.hpp>

#include <array>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace qpgate::orders {

std::string_view name_of(DecodeError e) noexcept {
  static constexpr std::array<std::string_view, kDecodeErrors> kNames = {
      "none",           "empty",        "too_large",     "truncated",      "varint_too_long",
      "invalid_tag",    "unknown_wire_type", "wrong_wire_type", "unknown_field", "no_body",
      "two_bodies",     "repeated_field", "missing_field", "enum_out_of_range", "value_out_of_range"};
  const auto i = static_cast<std::size_t>(e);
  return i < kNames.size() ? kNames[i] : "?";
}

namespace {

// ---- the message table -------------------------------------------------------
// One row per field: its number, name, C++ kind and where it lives in the
// struct. The decoder and the encoder both walk these rows, so the two cannot
// disagree about a field.

enum class Kind : std::uint8_t { kU64, kU32, kI64, kBool, kEnum, kString };

enum FieldFlags : std::uint8_t {
  kOptional = 0,
  kRequired = 1,  // must be on the wire and not 0 (an enum not UNSPECIFIED): proto3 omits zeros
  kNonZero = 2,   // present with value 0 is an error (ids)
  kClientId = 4,  // the request's client_order_id: reported with errors found after it
};

struct FieldSpec {
  std::uint32_t number;
  const char* name;
  Kind kind;
  std::uint16_t offset;
  std::uint8_t flags;
  std::uint8_t enum_max;   // kEnum: the largest defined number
  const char* enum_name;   // kEnum: the proto enum's name
};

struct MessageSpec {
  const char* name;
  std::uint32_t body_number;  // the OrderMessage oneof field number
  const FieldSpec* fields;
  std::size_t field_count;
};

constexpr std::uint8_t kReq = kRequired;
constexpr std::uint8_t kReqId = kRequired | kNonZero;
constexpr std::uint8_t kReqClid = kRequired | kNonZero | kClientId;

#define QPGATE_FIELD(T, num, member, kind, flags) \
  FieldSpec { num, #member, Kind::kind, static_cast<std::uint16_t>(offsetof(T, member)), flags, 0, nullptr }
#define QPGATE_ENUM(T, num, member, flags, max, ename) \
  FieldSpec { num, #member, Kind::kEnum, static_cast<std::uint16_t>(offsetof(T, member)), flags, max, ename }

constexpr FieldSpec kHelloFields[] = {
    QPGATE_FIELD(Hello, 1, last_app_seq, kU64, kOptional),
};
constexpr FieldSpec kNewOrderFields[] = {
    QPGATE_FIELD(NewOrder, 1, client_order_id, kU64, kReqClid),
    QPGATE_FIELD(NewOrder, 2, instrument_id, kU32, kReq),
    QPGATE_ENUM(NewOrder, 3, side, kReq, 2, "Side"),
    QPGATE_FIELD(NewOrder, 4, price, kI64, kReq),
    QPGATE_FIELD(NewOrder, 5, quantity, kI64, kReq),
    QPGATE_ENUM(NewOrder, 6, time_in_force, kReq, 2, "TimeInForce"),
    QPGATE_FIELD(NewOrder, 7, account, kU64, kReq),
};
constexpr FieldSpec kCancelFields[] = {
    QPGATE_FIELD(Cancel, 1, client_order_id, kU64, kReqClid),
    QPGATE_FIELD(Cancel, 2, orig_client_order_id, kU64, kReqId),
    QPGATE_FIELD(Cancel, 3, instrument_id, kU32, kReq),
};
constexpr FieldSpec kReplaceFields[] = {
    QPGATE_FIELD(Replace, 1, client_order_id, kU64, kReqClid),
    QPGATE_FIELD(Replace, 2, orig_client_order_id, kU64, kReqId),
    QPGATE_FIELD(Replace, 3, instrument_id, kU32, kReq),
    QPGATE_FIELD(Replace, 4, price, kI64, kReq),
    QPGATE_FIELD(Replace, 5, quantity, kI64, kReq),
};
constexpr FieldSpec kWelcomeFields[] = {
    QPGATE_FIELD(Welcome, 1, app_seq, kU64, kOptional),
    QPGATE_FIELD(Welcome, 2, resend_from, kU64, kOptional),
};
constexpr FieldSpec kAckFields[] = {
    QPGATE_FIELD(Ack, 1, app_seq, kU64, kReqId),
    QPGATE_FIELD(Ack, 2, client_order_id, kU64, kReqId),
    QPGATE_FIELD(Ack, 3, order_id, kU64, kReqId),
    QPGATE_FIELD(Ack, 4, possible_resend, kBool, kOptional),
};
constexpr FieldSpec kRejectFields[] = {
    QPGATE_FIELD(Reject, 1, app_seq, kU64, kOptional),  // 0: not sequenced (a refused Hello, THROTTLED, ID_LIMIT, JOURNAL_FAILURE)
    QPGATE_FIELD(Reject, 2, client_order_id, kU64, kOptional),
    QPGATE_ENUM(Reject, 3, reason, kReq, kRejectReasons - 1, "RejectReason"),
    QPGATE_FIELD(Reject, 4, text, kString, kOptional),
    QPGATE_FIELD(Reject, 5, possible_resend, kBool, kOptional),
};
constexpr FieldSpec kFillFields[] = {
    QPGATE_FIELD(Fill, 1, app_seq, kU64, kReqId),
    QPGATE_FIELD(Fill, 2, client_order_id, kU64, kReqId),
    QPGATE_FIELD(Fill, 3, order_id, kU64, kReqId),
    QPGATE_FIELD(Fill, 4, instrument_id, kU32, kReq),
    QPGATE_ENUM(Fill, 5, side, kReq, 2, "Side"),
    QPGATE_FIELD(Fill, 6, price, kI64, kReq),
    QPGATE_FIELD(Fill, 7, quantity, kI64, kReq),
    QPGATE_FIELD(Fill, 8, leaves_quantity, kI64, kOptional),
    QPGATE_FIELD(Fill, 9, trade_id, kU64, kReqId),
    QPGATE_ENUM(Fill, 10, liquidity, kReq, 2, "Liquidity"),
};
constexpr FieldSpec kCancelAckFields[] = {
    QPGATE_FIELD(CancelAck, 1, app_seq, kU64, kReqId),
    QPGATE_FIELD(CancelAck, 2, client_order_id, kU64, kReqId),
    QPGATE_FIELD(CancelAck, 3, orig_client_order_id, kU64, kReqId),
    QPGATE_FIELD(CancelAck, 4, order_id, kU64, kReqId),
    QPGATE_ENUM(CancelAck, 5, reason, kReq, 4, "CancelReason"),
    QPGATE_FIELD(CancelAck, 6, cancelled_quantity, kI64, kOptional),
    QPGATE_FIELD(CancelAck, 7, possible_resend, kBool, kOptional),
};
constexpr FieldSpec kReplaceAckFields[] = {
    QPGATE_FIELD(ReplaceAck, 1, app_seq, kU64, kReqId),
    QPGATE_FIELD(ReplaceAck, 2, client_order_id, kU64, kReqId),
    QPGATE_FIELD(ReplaceAck, 3, orig_client_order_id, kU64, kReqId),
    QPGATE_FIELD(ReplaceAck, 4, order_id, kU64, kReqId),
    QPGATE_FIELD(ReplaceAck, 5, price, kI64, kReq),
    QPGATE_FIELD(ReplaceAck, 6, quantity, kI64, kReq),
    QPGATE_FIELD(ReplaceAck, 7, priority_kept, kBool, kOptional),
    QPGATE_FIELD(ReplaceAck, 8, possible_resend, kBool, kOptional),
};
#undef QPGATE_FIELD
#undef QPGATE_ENUM

template <std::size_t N>
constexpr MessageSpec spec(const char* name, std::uint32_t number, const FieldSpec (&fields)[N]) {
  return MessageSpec{name, number, fields, N};
}

// In OrderMessage variant order.
constexpr std::array<MessageSpec, std::variant_size_v<OrderMessage>> kMessages = {
    spec("Hello", 1, kHelloFields),       spec("NewOrder", 2, kNewOrderFields),
    spec("Cancel", 3, kCancelFields),     spec("Replace", 4, kReplaceFields),
    spec("Welcome", 16, kWelcomeFields),  spec("Ack", 17, kAckFields),
    spec("Reject", 18, kRejectFields),    spec("Fill", 19, kFillFields),
    spec("CancelAck", 20, kCancelAckFields), spec("ReplaceAck", 21, kReplaceAckFields),
};

constexpr int kMaxFields = 16;  // presence is a bitmask over field rows

template <std::size_t I = 0>
void emplace_body(OrderMessage& out, std::size_t index) {
  if constexpr (I < std::variant_size_v<OrderMessage>) {
    if (index == I) {
      out.emplace<I>();
      return;
    }
    emplace_body<I + 1>(out, index);
  }
}

int message_index_for_body(std::uint32_t number) {
  for (std::size_t i = 0; i < kMessages.size(); ++i) {
    if (kMessages[i].body_number == number) return static_cast<int>(i);
  }
  return -1;
}

const char* wire_type_name(protozero::pbf_wire_type t) {
  switch (t) {
    case protozero::pbf_wire_type::varint: return "0 (varint)";
    case protozero::pbf_wire_type::fixed64: return "1 (fixed64)";
    case protozero::pbf_wire_type::length_delimited: return "2 (length-delimited)";
    case protozero::pbf_wire_type::fixed32: return "5 (fixed32)";
    default: return "unknown";
  }
}

// The decoder's state: the input, the error being built.
class Decoder {
 public:
  Decoder(std::span<const std::uint8_t> bytes, DecodeResult& result)
      : begin_(reinterpret_cast<const char*>(bytes.data())), result_(result) {}

  std::uint32_t offset_of(const char* p) const { return static_cast<std::uint32_t>(p - begin_); }

  __attribute__((format(printf, 4, 5))) bool fail(DecodeError e, const char* at, const char* format, ...) {
    result_.error = e;
    result_.offset = offset_of(at);
    va_list args;
    va_start(args, format);
    std::vsnprintf(result_.message, sizeof result_.message, format, args);
    va_end(args);
    return false;
  }

  // Decodes the fields of `spec` from `view` into `base`.
  bool decode_fields(const MessageSpec& spec, protozero::data_view view, unsigned char* base) {
    protozero::pbf_reader reader{view};
    std::uint32_t seen = 0;
    std::array<const char*, kMaxFields> seen_at{};
    const char* field_start = view.data();
    current_message_ = spec.name;
    while (true) {
      field_start = reader.data().data();
      position_ = field_start;
      if (!reader.next()) break;
      const std::uint32_t number = reader.tag();
      const FieldSpec* field = nullptr;
      std::size_t row = 0;
      for (; row < spec.field_count; ++row) {
        if (spec.fields[row].number == number) {
          field = &spec.fields[row];
          break;
        }
      }
      if (field == nullptr) {
        return fail(DecodeError::kUnknownField, field_start, "%s has no field %u (wire type %s) at offset %u",
                    spec.name, number, wire_type_name(reader.wire_type()), offset_of(field_start));
      }
      if ((seen & (1U << row)) != 0) {
        return fail(DecodeError::kRepeatedField, field_start,
                    "%s.%s (field %u) appears twice, at offsets %u and %u; it is a singular field", spec.name,
                    field->name, number, offset_of(seen_at[row]), offset_of(field_start));
      }
      seen |= 1U << row;
      seen_at[row] = field_start;
      if (!decode_field(spec, *field, reader, base, field_start)) return false;
    }
    for (std::size_t row = 0; row < spec.field_count; ++row) {
      const FieldSpec& field = spec.fields[row];
      if ((field.flags & kRequired) != 0 && (seen & (1U << row)) == 0) {
        return fail(DecodeError::kMissingField, view.data(), "%s.%s (field %u) is required but missing", spec.name,
                    field.name, field.number);
      }
    }
    return true;
  }

  bool decode_field(const MessageSpec& spec, const FieldSpec& field, protozero::pbf_reader& reader,
                    unsigned char* base, const char* at) {
    const bool want_varint = field.kind != Kind::kString;
    const auto wire = reader.wire_type();
    if (want_varint != (wire == protozero::pbf_wire_type::varint) ||
        (!want_varint && wire != protozero::pbf_wire_type::length_delimited)) {
      return fail(DecodeError::kWrongWireType, at, "%s.%s (field %u) has wire type %s, expected %s", spec.name,
                  field.name, field.number, wire_type_name(wire), want_varint ? "0 (varint)" : "2 (length-delimited)");
    }
    unsigned char* dst = base + field.offset;
    if (field.kind == Kind::kString) {
      const protozero::data_view v = reader.get_view();
      const std::string_view s{v.data(), v.size()};
      std::memcpy(dst, &s, sizeof s);
      return true;
    }
    const std::uint64_t raw = reader.get_uint64();
    // proto3 encoders (protobufjs, ours) leave zeros off the wire, so a
    // required number that is 0 could not be sent by them: refuse it rather
    // than accept a message we could not re-encode.
    if ((field.flags & (kNonZero | kRequired)) != 0 && raw == 0 && field.kind != Kind::kEnum) {
      return fail(DecodeError::kValueOutOfRange, at, "%s.%s (field %u) is 0; it must be non-zero", spec.name,
                  field.name, field.number);
    }
    switch (field.kind) {
      case Kind::kU64:
        std::memcpy(dst, &raw, sizeof raw);
        if ((field.flags & kClientId) != 0) result_.client_order_id = raw;
        return true;
      case Kind::kU32: {
        if (raw > std::numeric_limits<std::uint32_t>::max()) {
          return fail(DecodeError::kValueOutOfRange, at, "%s.%s (field %u) = %llu does not fit uint32", spec.name,
                      field.name, field.number, static_cast<unsigned long long>(raw));
        }
        const auto v = static_cast<std::uint32_t>(raw);
        std::memcpy(dst, &v, sizeof v);
        return true;
      }
      case Kind::kI64: {
        const auto v = static_cast<std::int64_t>(raw);
        std::memcpy(dst, &v, sizeof v);
        return true;
      }
      case Kind::kBool: {
        if (raw > 1) {
          return fail(DecodeError::kValueOutOfRange, at, "%s.%s (field %u) = %llu is not a bool (0 or 1)", spec.name,
                      field.name, field.number, static_cast<unsigned long long>(raw));
        }
        const bool v = raw == 1;
        std::memcpy(dst, &v, sizeof v);
        return true;
      }
      case Kind::kEnum: {
        // protobufjs writes enums as int32: negatives are 10-byte varints.
        const auto v = static_cast<std::int64_t>(raw);
        if (v < 0 || v > field.enum_max) {
          return fail(DecodeError::kEnumOutOfRange, at, "%s.%s (field %u) = %lld is not a %s (0..%u)", spec.name,
                      field.name, field.number, static_cast<long long>(v), field.enum_name, field.enum_max);
        }
        if (v == 0 && (field.flags & kRequired) != 0) {
          return fail(DecodeError::kMissingField, at, "%s.%s (field %u) is required but is %s 0 (unspecified)",
                      spec.name, field.name, field.number, field.enum_name);
        }
        const auto e = static_cast<std::uint8_t>(v);
        std::memcpy(dst, &e, sizeof e);
        return true;
      }
      case Kind::kString:
        break;
    }
    return true;
  }

  bool decode(std::span<const std::uint8_t> bytes, OrderMessage& out) {
    const protozero::data_view all{begin_, bytes.size()};
    protozero::pbf_reader envelope{all};
    int body_index = -1;
    const char* body_at = nullptr;
    protozero::data_view body{};
    current_message_ = "OrderMessage";
    while (true) {
      const char* field_start = envelope.data().data();
      position_ = field_start;
      if (!envelope.next()) break;
      const std::uint32_t number = envelope.tag();
      const int index = message_index_for_body(number);
      if (index < 0) {
        return fail(DecodeError::kUnknownField, field_start,
                    "OrderMessage has no field %u (wire type %s) at offset %u; bodies are 1-4 and 16-21", number,
                    wire_type_name(envelope.wire_type()), offset_of(field_start));
      }
      if (envelope.wire_type() != protozero::pbf_wire_type::length_delimited) {
        return fail(DecodeError::kWrongWireType, field_start,
                    "OrderMessage.%s (field %u) has wire type %s, expected 2 (length-delimited)",
                    kMessages[static_cast<std::size_t>(index)].name, number, wire_type_name(envelope.wire_type()));
      }
      if (body_index >= 0) {
        return fail(DecodeError::kTwoBodies, field_start,
                    "OrderMessage has a second body %s (field %u) at offset %u after %s at offset %u; exactly one "
                    "is allowed",
                    kMessages[static_cast<std::size_t>(index)].name, number, offset_of(field_start),
                    kMessages[static_cast<std::size_t>(body_index)].name, offset_of(body_at));
      }
      body_index = index;
      body_at = field_start;
      body = envelope.get_view();
    }
    if (body_index < 0) {
      return fail(DecodeError::kNoBody, begin_, "OrderMessage has no body (expected one of hello, new_order, ...)");
    }
    emplace_body(out, static_cast<std::size_t>(body_index));
    auto* base = std::visit([](auto& m) { return reinterpret_cast<unsigned char*>(&m); }, out);
    return decode_fields(kMessages[static_cast<std::size_t>(body_index)], body, base);
  }

  const char* position() const { return position_; }
  const char* current_message() const { return current_message_; }

 private:
  const char* begin_;
  DecodeResult& result_;
  const char* position_ = nullptr;
  const char* current_message_ = "OrderMessage";
};

}  // namespace

DecodeResult decode(std::span<const std::uint8_t> bytes, OrderMessage& out) noexcept {
  DecodeResult result;
  Decoder d{bytes, result};
  if (bytes.empty()) {
    result.error = DecodeError::kEmpty;
    std::snprintf(result.message, sizeof result.message, "empty message (0 bytes); expected an OrderMessage");
    return result;
  }
  if (bytes.size() > kMaxMessageBytes) {
    result.error = DecodeError::kTooLarge;
    std::snprintf(result.message, sizeof result.message, "message of %zu bytes exceeds the %zu-byte limit",
                  bytes.size(), kMaxMessageBytes);
    return result;
  }
  const char* at = reinterpret_cast<const char*>(bytes.data());
  try {
    d.decode(bytes, out);
  } catch (const protozero::end_of_buffer_exception&) {
    at = d.position();
    d.fail(DecodeError::kTruncated, at, "%s truncated: the field at offset %u runs past the end of the %zu-byte input",
           d.current_message(), d.offset_of(at), bytes.size());
  } catch (const protozero::varint_too_long_exception&) {
    at = d.position();
    d.fail(DecodeError::kVarintTooLong, at, "%s: varint longer than 10 bytes in the field at offset %u",
           d.current_message(), d.offset_of(at));
  } catch (const protozero::invalid_tag_exception&) {
    at = d.position();
    d.fail(DecodeError::kInvalidTag, at,
           "%s: invalid field number (0 or 19000-19999) at offset %u (garbage after the message?)",
           d.current_message(), d.offset_of(at));
  } catch (const protozero::unknown_pbf_wire_type_exception&) {
    at = d.position();
    d.fail(DecodeError::kUnknownWireType, at,
           "%s: wire type at offset %u is not 0, 1, 2 or 5 (groups and types 6/7 are not used)", d.current_message(),
           d.offset_of(at));
  } catch (const protozero::exception&) {
    at = d.position();
    d.fail(DecodeError::kTruncated, at, "%s: malformed field at offset %u", d.current_message(), d.offset_of(at));
  }
  return result;
}

namespace {

using FixedWriter = protozero::basic_pbf_writer<protozero::fixed_size_buffer_adaptor>;

void encode_fields(const MessageSpec& spec, const unsigned char* base, FixedWriter& w) {
  for (std::size_t row = 0; row < spec.field_count; ++row) {
    const FieldSpec& f = spec.fields[row];
    const unsigned char* src = base + f.offset;
    const auto tag = static_cast<protozero::pbf_tag_type>(f.number);
    switch (f.kind) {
      case Kind::kU64: {
        std::uint64_t v;
        std::memcpy(&v, src, sizeof v);
        if (v != 0) w.add_uint64(tag, v);
        break;
      }
      case Kind::kU32: {
        std::uint32_t v;
        std::memcpy(&v, src, sizeof v);
        if (v != 0) w.add_uint32(tag, v);
        break;
      }
      case Kind::kI64: {
        std::int64_t v;
        std::memcpy(&v, src, sizeof v);
        if (v != 0) w.add_int64(tag, v);
        break;
      }
      case Kind::kBool: {
        bool v;
        std::memcpy(&v, src, sizeof v);
        if (v) w.add_bool(tag, true);
        break;
      }
      case Kind::kEnum: {
        std::uint8_t v;
        std::memcpy(&v, src, sizeof v);
        if (v != 0) w.add_enum(tag, v);
        break;
      }
      case Kind::kString: {
        std::string_view v;
        std::memcpy(&v, src, sizeof v);
        if (v.size() > kMaxRejectTextBytes) v = v.substr(0, kMaxRejectTextBytes);
        if (!v.empty()) w.add_string(tag, v.data(), v.size());
        break;
      }
    }
  }
}

}  // namespace

std::size_t encode(const OrderMessage& message, std::span<std::uint8_t> out) noexcept {
  const MessageSpec& spec = kMessages[message.index()];
  const auto* base = std::visit([](const auto& m) { return reinterpret_cast<const unsigned char*>(&m); }, message);
  std::array<char, kMaxEncodedBytes> body{};
  try {
    protozero::fixed_size_buffer_adaptor body_buffer{body.data(), body.size()};
    FixedWriter body_writer{body_buffer};
    encode_fields(spec, base, body_writer);
    protozero::fixed_size_buffer_adaptor out_buffer{reinterpret_cast<char*>(out.data()), out.size()};
    FixedWriter envelope{out_buffer};
    envelope.add_message(spec.body_number, body_buffer.data(), body_buffer.size());
    return out_buffer.size();
  } catch (const std::length_error&) {
    return 0;
  }
}

std::uint32_t body_field_number(const OrderMessage& message) noexcept { return kMessages[message.index()].body_number; }
std::string_view body_name(const OrderMessage& message) noexcept { return kMessages[message.index()].name; }

std::uint64_t client_order_id_of(const OrderMessage& message) noexcept {
  return std::visit(
      [](const auto& body) -> std::uint64_t {
        if constexpr (requires { body.client_order_id; }) {
          return body.client_order_id;
        } else {
          return 0;
        }
      },
      message);
}

}  // namespace qpgate::orders
