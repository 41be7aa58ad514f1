// The order codec: every message round-trips; every malformed input is
// refused with the error kind, the offset and a message naming the field.
#include <protozero/pbf_writer.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "orders/codec.h"
#include "support.h"

namespace qpgate::orders {
namespace {

using test::bytes_of;

std::span<const std::uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Raw protobuf for malformed inputs: `body` wrapped as OrderMessage field `number`.
std::string envelope(std::uint32_t number, const std::string& body) {
  std::string out;
  protozero::pbf_writer w{out};
  w.add_message(number, body);
  return out;
}

std::string valid_new_order_body(bool with_account = true) {
  std::string b;
  protozero::pbf_writer w{b};
  w.add_uint64(1, 42);
  w.add_uint32(2, 7);
  w.add_enum(3, 1);
  w.add_int64(4, 10125);
  w.add_int64(5, 10);
  w.add_enum(6, 1);
  if (with_account) w.add_uint64(7, 100);
  return b;
}

DecodeResult decode_string(const std::string& s) {
  OrderMessage m;
  return decode(as_bytes(s), m);
}

template <typename T>
T round_trip(const T& in) {
  const auto& bytes = test::kept_bytes().emplace_back(bytes_of(OrderMessage{in}));
  OrderMessage out;
  const DecodeResult r = decode(bytes, out);
  EXPECT_TRUE(r.ok()) << r.text();
  const T* t = std::get_if<T>(&out);
  EXPECT_NE(t, nullptr);
  return t ? *t : T{};
}

TEST(Codec, EveryMessageRoundTrips) {
  EXPECT_EQ(round_trip(Hello{17}).last_app_seq, 17u);
  const NewOrder no = round_trip(NewOrder{~0ULL, 4294967295u, Side::kSell, std::numeric_limits<std::int64_t>::max(), 3,
                                          TimeInForce::kIoc, 9});
  EXPECT_EQ(no.client_order_id, ~0ULL);
  EXPECT_EQ(no.instrument_id, 4294967295u);
  EXPECT_EQ(no.side, Side::kSell);
  EXPECT_EQ(no.price, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(no.time_in_force, TimeInForce::kIoc);
  EXPECT_EQ(round_trip(NewOrder{1, 1, Side::kBuy, -5, 1, TimeInForce::kDay, 1}).price, -5) << "negative mantissas";
  const Cancel c = round_trip(Cancel{5, 4, 3});
  EXPECT_EQ(c.orig_client_order_id, 4u);
  const Replace rp = round_trip(Replace{5, 4, 3, 200, 7});
  EXPECT_EQ(rp.price, 200);
  EXPECT_EQ(rp.quantity, 7);
  EXPECT_EQ(round_trip(Welcome{0, 1}).resend_from, 1u);
  const Ack a = round_trip(Ack{9, 8, 7, true});
  EXPECT_TRUE(a.possible_resend);
  EXPECT_EQ(a.order_id, 7u);
  const Reject rj = round_trip(Reject{3, 2, RejectReason::kJournalFailure, "journal full", false});
  EXPECT_EQ(rj.reason, RejectReason::kJournalFailure);
  EXPECT_EQ(rj.text, "journal full");
  const Fill f = round_trip(Fill{1, 2, 3, 4, Side::kBuy, 100, 5, 0, 6, Liquidity::kMaker});
  EXPECT_EQ(f.trade_id, 6u);
  EXPECT_EQ(f.liquidity, Liquidity::kMaker);
  EXPECT_EQ(f.leaves_quantity, 0);
  const CancelAck ca = round_trip(CancelAck{1, 2, 3, 4, CancelReason::kDisconnect, 5, false});
  EXPECT_EQ(ca.reason, CancelReason::kDisconnect);
  const ReplaceAck ra = round_trip(ReplaceAck{1, 2, 3, 4, 5, 6, true, false});
  EXPECT_TRUE(ra.priority_kept);
}

TEST(Codec, AnEmptyBodyIsStillABody) {
  const auto bytes = bytes_of(OrderMessage{Hello{0}});
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{0x0a, 0x00})) << "as protobufjs writes it";
  OrderMessage m;
  EXPECT_TRUE(decode(bytes, m).ok());
}

TEST(Codec, EncodeRefusesATooSmallBuffer) {
  std::uint8_t small[4];
  EXPECT_EQ(encode(OrderMessage{test::buy(1, 100, 1)}, small), 0u);
}

TEST(Codec, ALongRejectTextIsCutToFit) {
  const std::string text(1000, 'x');
  std::vector<std::uint8_t> out(kMaxEncodedBytes);
  EXPECT_GT(encode(OrderMessage{Reject{1, 1, RejectReason::kMalformed, text, false}}, out), 0u);
}

struct Malformed {
  const char* name;
  std::string bytes;
  DecodeError error;
  std::uint32_t offset;
  const char* message_contains;
};

std::vector<Malformed> malformed_inputs() {
  std::vector<Malformed> v;
  const std::string good = envelope(2, valid_new_order_body());
  v.push_back({"empty", "", DecodeError::kEmpty, 0, "empty message"});
  v.push_back({"too large", std::string(kMaxMessageBytes + 1, '\x08'), DecodeError::kTooLarge, 0, "1025 bytes exceeds"});
  v.push_back({"truncated", good.substr(0, good.size() - 1), DecodeError::kTruncated, 0, "runs past the end"});
  {
    std::string body(1, '\x08');
    body.append(11, '\xff');
    body.push_back('\x01');
    v.push_back({"varint too long", envelope(2, body), DecodeError::kVarintTooLong, 2, "varint longer than 10 bytes"});
  }
  v.push_back({"trailing zero byte", good + std::string(1, '\0'), DecodeError::kInvalidTag,
               static_cast<std::uint32_t>(good.size()), "garbage after the message"});
  v.push_back({"wire type 7", good + "\x0f", DecodeError::kUnknownWireType, static_cast<std::uint32_t>(good.size()),
               "is not 0, 1, 2 or 5"});
  {
    std::string body = valid_new_order_body();
    protozero::pbf_writer w{body};
    w.add_string(9, "x");
    v.push_back({"unknown body field", envelope(2, body), DecodeError::kUnknownField,
                 static_cast<std::uint32_t>(2 + valid_new_order_body().size()), "NewOrder has no field 9"});
  }
  {
    std::string s = good;
    protozero::pbf_writer w{s};
    w.add_uint32(9, 1);
    v.push_back({"unknown oneof", s, DecodeError::kUnknownField, static_cast<std::uint32_t>(good.size()),
                 "OrderMessage has no field 9"});
  }
  v.push_back({"two bodies", good + envelope(1, ""), DecodeError::kTwoBodies, static_cast<std::uint32_t>(good.size()),
               "second body Hello (field 1)"});
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_uint32(2, 7);
    w.add_enum(3, 1);
    w.add_string(4, "10125");  // price as length-delimited
    v.push_back({"wrong wire type", envelope(2, body), DecodeError::kWrongWireType, 8,
                 "NewOrder.price (field 4) has wire type 2 (length-delimited), expected 0 (varint)"});
  }
  {
    std::string body = valid_new_order_body();
    protozero::pbf_writer w{body};
    w.add_int64(4, 1);
    v.push_back({"repeated field", envelope(2, body), DecodeError::kRepeatedField,
                 static_cast<std::uint32_t>(2 + valid_new_order_body().size()), "NewOrder.price (field 4) appears twice"});
  }
  v.push_back({"missing account", envelope(2, valid_new_order_body(false)), DecodeError::kMissingField, 2,
               "NewOrder.account (field 7) is required but missing"});
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_uint32(2, 7);
    w.add_enum(3, 7);
    v.push_back({"side 7", envelope(2, body), DecodeError::kEnumOutOfRange, 6, "NewOrder.side (field 3) = 7 is not a Side"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_enum(3, -1);
    v.push_back({"side -1", envelope(2, body), DecodeError::kEnumOutOfRange, 4, "= -1 is not a Side"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_enum(3, 0);
    v.push_back({"side unspecified", envelope(2, body), DecodeError::kMissingField, 4, "is required but is Side 0"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_uint64(2, 1ULL << 32);
    v.push_back({"instrument over uint32", envelope(2, body), DecodeError::kValueOutOfRange, 4,
                 "NewOrder.instrument_id (field 2) = 4294967296 does not fit uint32"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 0);
    v.push_back({"client order id 0", envelope(2, body), DecodeError::kValueOutOfRange, 2,
                 "NewOrder.client_order_id (field 1) is 0; it must be non-zero"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 1);
    w.add_uint64(2, 1);
    w.add_uint64(3, 1);
    w.add_uint64(4, 2);
    // field 17's tag is two bytes: the body starts at offset 3
    v.push_back({"bool 2", envelope(17, body), DecodeError::kValueOutOfRange, 9, "Ack.possible_resend (field 4) = 2 is not a bool"});
  }
  {
    std::string body;
    protozero::pbf_writer w{body};
    w.add_uint64(1, 42);
    w.add_uint32(2, 7);
    w.add_enum(3, 1);
    w.add_int64(4, 0);  // written explicitly; protobufjs would leave it off
    v.push_back({"explicit zero price", envelope(2, body), DecodeError::kValueOutOfRange, 8,
                 "NewOrder.price (field 4) is 0; it must be non-zero"});
  }
  v.push_back({"body as varint", std::string("\x10\x01", 2), DecodeError::kWrongWireType, 0,
               "OrderMessage.NewOrder (field 2) has wire type 0 (varint), expected 2"});
  return v;
}

TEST(Codec, EveryMalformedInputIsRefusedWithWhatAndWhere) {
  for (const Malformed& m : malformed_inputs()) {
    SCOPED_TRACE(m.name);
    const DecodeResult r = decode_string(m.bytes);
    EXPECT_EQ(r.error, m.error) << name_of(r.error) << ": " << r.text();
    EXPECT_EQ(r.offset, m.offset) << r.text();
    EXPECT_NE(r.text().find(m.message_contains), std::string_view::npos) << r.text();
  }
}

TEST(Codec, TheClientOrderIdReadBeforeAnErrorIsReported) {
  const DecodeResult r = decode_string(envelope(2, valid_new_order_body(false)));
  EXPECT_EQ(r.client_order_id, 42u) << "so the Reject can name the order";
}

TEST(Codec, EveryPrefixOfAValidMessageIsRefusedWithoutReadingPastIt) {
  const std::string good = envelope(2, valid_new_order_body());
  for (std::size_t n = 1; n < good.size(); ++n) {
    std::vector<std::uint8_t> exact(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));  // ASan-sized
    OrderMessage m;
    EXPECT_FALSE(decode(exact, m).ok()) << n;
  }
}

}  // namespace
}  // namespace qpgate::orders
