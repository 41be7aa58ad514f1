#include "wire/packet.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <memory>

#include "capture_corpus.h"
#include "sample_packets.h"

namespace qpgate::wire {
namespace {

using testing::encode_sample;
using testing::sample_flow_v4;

// A heap copy of exactly `bytes`, so that AddressSanitizer reports any read
// one past the end (a vector's capacity could hide it).
struct ExactBuffer {
  explicit ExactBuffer(std::span<const std::uint8_t> bytes)
      : data(new std::uint8_t[bytes.size() == 0 ? 1 : bytes.size()]), size(bytes.size()) {
    if (size != 0) std::memcpy(data.get(), bytes.data(), size);
  }
  std::span<const std::uint8_t> span() const { return {data.get(), size}; }
  std::unique_ptr<std::uint8_t[]> data;
  std::size_t size;
};

TEST(PacketTest, EveryReferencePacketReencodesByteForByteFromItsFields) {
  QPGATE_REQUIRE_CAPTURES();
  const auto packets = testing::load_reference_packets();
  ASSERT_GE(packets.size(), 1100u);
  std::map<std::uint8_t, int> opcodes;
  for (const auto& cp : packets) {
    const auto outer = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer.ok());
    const auto p = decode(outer->roce);
    ASSERT_TRUE(p.ok()) << cp.file << "#" << cp.frame << ": " << decode_error_name(p.error());
    ++opcodes[p->bth().opcode()];
    const PacketFields fields = fields_of(*p);
    std::vector<std::uint8_t> out(encoded_size(fields.bth.opcode, p->payload.size()));
    ASSERT_EQ(out.size(), outer->roce.size()) << cp.file << "#" << cp.frame;
    const auto n = encode(fields, p->payload, out);
    ASSERT_TRUE(n.ok());
    icrc_store(out, outer->ip_udp());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), outer->roce.begin(), outer->roce.end()))
        << cp.file << "#" << cp.frame << " " << p->op->name;
  }
  // The captures cover these opcodes; all of them must have been seen.
  for (int op : {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x64, 0x65}) {
    EXPECT_GT(opcodes[static_cast<std::uint8_t>(op)], 0) << "no capture packet of " << opcode_name(static_cast<std::uint8_t>(op));
  }
}

TEST(PacketTest, DecodedFieldsOfKnownCapturePacketsMatchTshark) {
  QPGATE_REQUIRE_CAPTURES();
  // rc-write-read-atomic.pcap: an ATOMIC_ACKNOWLEDGE seen with tshark:
  // PSN 2905889, dest QP 0x15, AETH 0x1f/MSN 1, orig data 0x4d02f0c171e3f63b.
  bool found = false;
  for (const auto& cp : testing::load_reference_packets("rc-write-read-atomic.pcap")) {
    const auto outer = parse_ip_udp(cp.ip);
    const auto p = decode(outer->roce);
    ASSERT_TRUE(p.ok());
    if (p->bth().opcode() != 0x12 || p->bth().psn() != 2905889) continue;
    found = true;
    EXPECT_EQ(p->bth().dest_qpn(), 0x15u);
    EXPECT_EQ(p->aeth()->syndrome(), 0x1f);
    EXPECT_EQ(p->aeth()->msn(), 1u);
    EXPECT_EQ(p->atomic_ack_eth()->orig_remote_data(), 0x4d02f0c171e3f63bull);
    EXPECT_FALSE(p->deth().has_value());
    EXPECT_TRUE(p->payload.empty());
  }
  EXPECT_TRUE(found);
}

TEST(PacketTest, EveryOpcodeRoundTripsThroughEncodeAndDecodeWithEveryPadCount) {
  for (const OpcodeInfo& op : all_opcodes()) {
    for (std::size_t len : {0, 1, 2, 3, 4, 61, 256}) {
      const auto bytes = encode_sample(op, len, sample_flow_v4());
      ASSERT_FALSE(bytes.empty()) << op.name;
      const ExactBuffer buf(bytes);
      const auto p = decode_verified(buf.span(), sample_flow_v4());
      ASSERT_TRUE(p.ok()) << op.name << " len " << len << ": " << decode_error_name(p.error());
      EXPECT_EQ(p->op, &op);
      EXPECT_EQ(fields_of(*p), testing::only_carried(testing::sample_fields(op), op)) << op.name;
      const std::size_t want_len = testing::sample_payload_len(op, len);
      EXPECT_EQ(p->payload.size(), want_len) << op.name;
      EXPECT_EQ(p->pad, (4 - want_len % 4) % 4);
      EXPECT_EQ(p->bth().pad_count(), p->pad);
      EXPECT_EQ(p->kind(), op.opcode == Opcode::kCnp ? PacketKind::kCnp : PacketKind::kIb);
    }
  }
}

TEST(PacketTest, DecodeReportsTruncationAtEveryLengthForEveryOpcode) {
  for (const OpcodeInfo& op : all_opcodes()) {
    const auto bytes = encode_sample(op, 8, sample_flow_v4());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const ExactBuffer buf{std::span<const std::uint8_t>(bytes).first(n)};
      const auto p = decode(buf.span());
      if (n < std::size_t{op.length} + kIcrcBytes) {
        ASSERT_FALSE(p.ok()) << op.name << " at " << n;
        EXPECT_EQ(p.error(), DecodeError::kTruncated) << op.name << " at " << n;
      } else if (p.ok()) {
        // A shorter payload is a different, well-formed packet; it still lies inside the buffer.
        EXPECT_LE(p->payload.data() + p->payload.size(), buf.span().data() + n);
      } else {
        EXPECT_TRUE(p.error() == DecodeError::kMisalignedLength ||
                    p.error() == DecodeError::kBadPadCount)
            << op.name << " at " << n << ": " << decode_error_name(p.error());
      }
    }
  }
}

TEST(PacketTest, DecodeRejectsANonZeroTransportVersion) {
  auto bytes = encode_sample(*opcode_info(Opcode::kRcSendOnly), 16, sample_flow_v4());
  for (std::uint8_t tver = 1; tver < 16; ++tver) {
    auto b = bytes;
    b[1] = static_cast<std::uint8_t>((b[1] & 0xf0) | tver);
    const auto p = decode(b);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error(), DecodeError::kBadTver);
  }
}

TEST(PacketTest, DecodeRejectsEveryOpcodeNotInTheTable) {
  auto bytes = encode_sample(*opcode_info(Opcode::kRcSendOnly), 16, sample_flow_v4());
  int unknown = 0;
  for (int code = 0; code < 256; ++code) {
    auto b = bytes;
    b[0] = static_cast<std::uint8_t>(code);
    const auto p = decode(b);
    if (opcode_info(static_cast<std::uint8_t>(code)) != nullptr) continue;
    ++unknown;
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error(), DecodeError::kUnknownOpcode) << code;
  }
  EXPECT_EQ(unknown, 256 - static_cast<int>(all_opcodes().size()));
}

TEST(PacketTest, DecodeRejectsReservedBitsInBthAndDeth) {
  auto send = encode_sample(*opcode_info(Opcode::kRcSendOnly), 16, sample_flow_v4());
  auto b = send;
  b[8] |= 0x01;  // resv7
  EXPECT_EQ(decode(b).error(), DecodeError::kReservedNotZero);
  b = send;
  b[4] |= 0x20;  // resv6
  EXPECT_EQ(decode(b).error(), DecodeError::kReservedNotZero);
  b = send;
  b[4] |= 0xc0;  // FECN/BECN are not reserved
  EXPECT_TRUE(decode(b).ok());
  auto ud = encode_sample(*opcode_info(Opcode::kUdSendOnly), 16, sample_flow_v4());
  ud[kBthBytes + 4] = 1;  // DETH resv8
  EXPECT_EQ(decode(ud).error(), DecodeError::kReservedNotZero);
}

TEST(PacketTest, DecodeRejectsPadCountsThePayloadCannotHave) {
  // Pad larger than the payload (rxe hdr_check drops these).
  auto send = encode_sample(*opcode_info(Opcode::kRcSendOnly), 0, sample_flow_v4());
  send[1] = static_cast<std::uint8_t>(send[1] | 0x30);
  EXPECT_EQ(decode(send).error(), DecodeError::kBadPadCount);
  // Pad on an opcode without payload.
  auto ack = encode_sample(*opcode_info(Opcode::kRcAcknowledge), 0, sample_flow_v4());
  ack[1] = static_cast<std::uint8_t>(ack[1] | 0x10);
  EXPECT_EQ(decode(ack).error(), DecodeError::kBadPadCount);
  // Pad on a FIRST or MIDDLE packet, which carry exactly one PMTU.
  for (Opcode o : {Opcode::kRcSendFirst, Opcode::kRcSendMiddle, Opcode::kRcRdmaWriteFirst,
                   Opcode::kRcRdmaReadResponseMiddle, Opcode::kUcRdmaWriteMiddle}) {
    auto b = encode_sample(*opcode_info(o), 64, sample_flow_v4());
    b[1] = static_cast<std::uint8_t>(b[1] | 0x20);
    EXPECT_EQ(decode(b).error(), DecodeError::kBadPadCount) << opcode_name(static_cast<std::uint8_t>(o));
  }
}

TEST(PacketTest, DecodeRejectsPayloadOnOpcodesThatCarryNone) {
  for (Opcode o : {Opcode::kRcAcknowledge, Opcode::kRcAtomicAcknowledge, Opcode::kRcRdmaReadRequest,
                   Opcode::kRcCompareSwap, Opcode::kRcFetchAdd, Opcode::kCnp}) {
    auto b = encode_sample(*opcode_info(o), 0, sample_flow_v4());
    b.insert(b.end() - 4, {1, 2, 3, 4});
    EXPECT_EQ(decode(b).error(), DecodeError::kUnexpectedPayload) << opcode_name(static_cast<std::uint8_t>(o));
  }
}

TEST(PacketTest, DecodeRejectsLengthsThatAreNotAMultipleOfFour) {
  auto b = encode_sample(*opcode_info(Opcode::kRcSendOnly), 8, sample_flow_v4());
  b.push_back(0);
  EXPECT_EQ(decode(b).error(), DecodeError::kMisalignedLength);
}

TEST(PacketTest, DecodeVerifiedReportsIcrcMismatchAfterTheStructuralChecks) {
  auto b = encode_sample(*opcode_info(Opcode::kUdSendOnlyWithImm), 61, sample_flow_v4());
  ASSERT_TRUE(decode_verified(b, sample_flow_v4()).ok());
  b[kBthBytes + kDethBytes + kImmDtBytes + 3] ^= 0x40;  // payload
  EXPECT_EQ(decode_verified(b, sample_flow_v4()).error(), DecodeError::kIcrcMismatch);
  EXPECT_TRUE(decode(b).ok());
  // Same packet, different flow: the ICRC covers addresses and ports.
  auto c = encode_sample(*opcode_info(Opcode::kUdSendOnly), 8, sample_flow_v4());
  EXPECT_EQ(decode_verified(c, sample_flow_v4(0x999)).error(), DecodeError::kIcrcMismatch);
}

TEST(PacketTest, CnpDecodesAsItsOwnKind) {
  PacketFields f;
  f.bth.opcode = static_cast<std::uint8_t>(Opcode::kCnp);
  f.bth.dest_qpn = 0x000011;
  f.bth.becn = true;  // ConnectX sets BECN on CNPs
  std::vector<std::uint8_t> out(encoded_size(f.bth.opcode, 0));
  ASSERT_EQ(out.size(), 32u);  // BTH 12 + 16 reserved + ICRC 4
  ASSERT_TRUE(encode(f, {}, sample_flow_v4(), out).ok());
  const auto p = decode_verified(out, sample_flow_v4());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind(), PacketKind::kCnp);
  EXPECT_EQ(p->bth().dest_qpn(), 0x11u);
  EXPECT_TRUE(p->bth().becn());
  EXPECT_TRUE(p->payload.empty());
}

TEST(PacketTest, EncodeRefusesUnknownOpcodesPayloadWhereNoneIsAllowedAndShortBuffers) {
  PacketFields f;
  std::vector<std::uint8_t> out(64);
  const std::uint8_t payload[4] = {1, 2, 3, 4};
  f.bth.opcode = 0x40;
  EXPECT_EQ(encode(f, {}, out).error(), EncodeError::kUnknownOpcode);
  EXPECT_EQ(encoded_size(0x40, 0), 0u);
  f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcAcknowledge);
  EXPECT_EQ(encode(f, payload, out).error(), EncodeError::kPayloadNotAllowed);
  f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcCompareSwap);
  EXPECT_EQ(encode(f, {}, std::span(out).first(43)).error(), EncodeError::kBufferTooSmall);
  EXPECT_TRUE(encode(f, {}, std::span(out).first(44)).ok());
  EXPECT_EQ(encode_error_name(EncodeError::kBufferTooSmall), "buffer_too_small");
}

TEST(PacketTest, EncodeMasksQpnPsnAndMsnTo24Bits) {
  PacketFields f;
  f.bth.opcode = static_cast<std::uint8_t>(Opcode::kRcAcknowledge);
  f.bth.dest_qpn = 0xff123456;
  f.bth.psn = 0x01000005;
  f.aeth.msn = 0xab000007;
  std::vector<std::uint8_t> out(encoded_size(f.bth.opcode, 0));
  ASSERT_TRUE(encode(f, {}, out).ok());
  const auto p = decode(out);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bth().dest_qpn(), 0x123456u);
  EXPECT_EQ(p->bth().psn(), 5u);
  EXPECT_EQ(p->aeth()->msn(), 7u);
  EXPECT_EQ(p->bth().resv6(), 0);
}

TEST(PacketTest, DecodeErrorNamesAreDistinctAndSnakeCase) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kDecodeErrorCount; ++i) {
    const auto n = decode_error_name(static_cast<DecodeError>(i));
    EXPECT_NE(n, "unknown");
    EXPECT_EQ(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), n.npos) << n;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kDecodeErrorCount);
  EXPECT_EQ(decode_error_name(DecodeError::kIcrcMismatch), "icrc_mismatch");
}

}  // namespace
}  // namespace qpgate::wire
