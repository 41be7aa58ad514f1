#include "wire/opcode.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace qpgate::wire {
namespace {

// Transport-header bytes per opcode from rxe_opcode.c's .length entries
// (research.md §2.1), plus the UC mirror of RC send/write and the CNP.
const std::map<std::uint8_t, std::uint8_t> kRxeLengths = {
    {0x00, 12}, {0x01, 12}, {0x02, 12}, {0x03, 16}, {0x04, 12}, {0x05, 16}, {0x06, 28},
    {0x07, 12}, {0x08, 12}, {0x09, 16}, {0x0a, 28}, {0x0b, 32}, {0x0c, 28}, {0x0d, 16},
    {0x0e, 12}, {0x0f, 16}, {0x10, 16}, {0x11, 16}, {0x12, 24}, {0x13, 40}, {0x14, 40},
    {0x20, 12}, {0x21, 12}, {0x22, 12}, {0x23, 16}, {0x24, 12}, {0x25, 16}, {0x26, 28},
    {0x27, 12}, {0x28, 12}, {0x29, 16}, {0x2a, 28}, {0x2b, 32}, {0x64, 20}, {0x65, 24},
    {0x81, 28},
};

TEST(OpcodeTableTest, HeaderLengthsMatchRxeForEveryOpcodeWeSupport) {
  std::set<std::uint8_t> seen;
  for (const OpcodeInfo& op : all_opcodes()) {
    const auto code = static_cast<std::uint8_t>(op.opcode);
    seen.insert(code);
    ASSERT_TRUE(kRxeLengths.count(code)) << op.name;
    EXPECT_EQ(op.length, kRxeLengths.at(code)) << op.name;
    EXPECT_LE(op.length, kMaxTransportHeaderBytes);
  }
  EXPECT_EQ(seen.size(), kRxeLengths.size());
}

TEST(OpcodeTableTest, HeadersAreContiguousInWireOrderAfterTheBth) {
  for (const OpcodeInfo& op : all_opcodes()) {
    std::size_t at = kBthBytes;
    EXPECT_TRUE(op.has(Header::kBth)) << op.name;
    for (std::size_t h = 1; h < kHeaderKinds; ++h) {
      const auto header = static_cast<Header>(h);
      if (!op.has(header)) continue;
      EXPECT_EQ(op.offset_of(header), at) << op.name << " header " << h;
      at += header_bytes(header);
    }
    EXPECT_EQ(at, op.length) << op.name;
  }
}

TEST(OpcodeTableTest, LookupReturnsNullForRdXrcVendorAndReservedOpcodes) {
  for (int code : {0x15, 0x16, 0x17, 0x1f, 0x2c, 0x40, 0x44, 0x60, 0x63, 0x66, 0x80, 0x82, 0xa0, 0xff}) {
    EXPECT_EQ(opcode_info(static_cast<std::uint8_t>(code)), nullptr) << std::hex << code;
    EXPECT_EQ(opcode_name(static_cast<std::uint8_t>(code)), "UNKNOWN");
  }
}

TEST(OpcodeTableTest, MessagePositionFlagsFollowTheOpcodeName) {
  for (const OpcodeInfo& op : all_opcodes()) {
    const std::string_view n = op.name;
    const bool only = n.find("_ONLY") != n.npos || n.find("ACKNOWLEDGE") != n.npos ||
                      n.find("READ_REQUEST") != n.npos || n.find("COMPARE_SWAP") != n.npos ||
                      n.find("FETCH_ADD") != n.npos || n == "CNP";
    EXPECT_EQ(op.is_only(), only) << n;
    EXPECT_EQ(op.is_first() && !op.is_last(), n.find("_FIRST") != n.npos) << n;
    EXPECT_EQ(op.is_middle(), n.find("_MIDDLE") != n.npos) << n;
    EXPECT_EQ(op.is_last() && !op.is_first(), n.find("_LAST") != n.npos) << n;
    EXPECT_EQ(op.is(kOpImm), op.has(Header::kImmDt)) << n;
  }
}

TEST(OpcodeTableTest, AckReqIsAllowedOnlyOnRcRequests) {
  for (const OpcodeInfo& op : all_opcodes()) {
    EXPECT_EQ(op.ack_req_allowed(), op.transport == Transport::kRc && op.is(kOpRequest)) << op.name;
  }
}

TEST(OpcodeTableTest, UcSendAndWriteMirrorRcAtBase0x20) {
  for (std::uint8_t rc = 0x00; rc <= 0x0b; ++rc) {
    const OpcodeInfo* a = opcode_info(rc);
    const OpcodeInfo* b = opcode_info(static_cast<std::uint8_t>(rc + 0x20));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(a->headers, b->headers);
    EXPECT_EQ(a->length, b->length);
    EXPECT_EQ(a->flags & ~static_cast<std::uint32_t>(kOpAckReq), b->flags);
    EXPECT_EQ(b->transport, Transport::kUc);
    EXPECT_EQ(a->name.substr(2), b->name.substr(2));
  }
}

TEST(OpcodeTableTest, ReadResponsesCarryAethExceptMiddle) {
  EXPECT_TRUE(opcode_info(Opcode::kRcRdmaReadResponseFirst)->has(Header::kAeth));
  EXPECT_FALSE(opcode_info(Opcode::kRcRdmaReadResponseMiddle)->has(Header::kAeth));
  EXPECT_TRUE(opcode_info(Opcode::kRcRdmaReadResponseLast)->has(Header::kAeth));
  EXPECT_TRUE(opcode_info(Opcode::kRcRdmaReadResponseOnly)->has(Header::kAeth));
  EXPECT_FALSE(opcode_info(Opcode::kRcRdmaReadRequest)->carries_payload());
}

}  // namespace
}  // namespace qpgate::wire
