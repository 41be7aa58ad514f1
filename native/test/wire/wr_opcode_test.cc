#include "wire/wr_opcode.h"

#include <gtest/gtest.h>

#include <vector>

namespace qpgate::wire {
namespace {

// ibv_wr_opcode numbers (rdma-core verbs.h).
constexpr std::uint8_t kWrite = 0, kWriteImm = 1, kSend = 2, kSendImm = 3, kRead = 4, kCas = 5, kFaa = 6;

std::vector<std::uint8_t> message(std::uint8_t wr, std::uint32_t packets, Transport t) {
  std::vector<std::uint8_t> out;
  for (std::uint32_t i = 0; i < packets; ++i) out.push_back(wr_opcode_info(wr)->packet_opcode(i, packets, t));
  return out;
}

TEST(WrOpcodeTableTest, MessagesAreTheOpcodeSequencesOfIba9_2) {
  EXPECT_EQ(message(kSend, 1, Transport::kRc), (std::vector<std::uint8_t>{0x04}));
  EXPECT_EQ(message(kSend, 3, Transport::kRc), (std::vector<std::uint8_t>{0x00, 0x01, 0x02}));
  EXPECT_EQ(message(kSendImm, 2, Transport::kRc), (std::vector<std::uint8_t>{0x00, 0x03}));
  EXPECT_EQ(message(kSendImm, 1, Transport::kUd), (std::vector<std::uint8_t>{0x65}));
  EXPECT_EQ(message(kSend, 1, Transport::kUd), (std::vector<std::uint8_t>{0x64}));
  EXPECT_EQ(message(kWrite, 3, Transport::kUc), (std::vector<std::uint8_t>{0x26, 0x27, 0x28}));
  EXPECT_EQ(message(kWriteImm, 1, Transport::kRc), (std::vector<std::uint8_t>{0x0b}));
  EXPECT_EQ(message(kWriteImm, 2, Transport::kUc), (std::vector<std::uint8_t>{0x26, 0x29}));
  EXPECT_EQ(message(kRead, 1, Transport::kRc), (std::vector<std::uint8_t>{0x0c}));
  EXPECT_EQ(message(kCas, 1, Transport::kRc), (std::vector<std::uint8_t>{0x13}));
  EXPECT_EQ(message(kFaa, 1, Transport::kRc), (std::vector<std::uint8_t>{0x14}));
}

TEST(WrOpcodeTableTest, EveryPacketOpcodeIsInThePacketTableOnItsTransport) {
  for (std::uint8_t wr = 0; wr <= kMaxWrOpcode; ++wr) {
    const WrOpcodeInfo* info = wr_opcode_info(wr);
    ASSERT_NE(info, nullptr);
    for (Transport t : {Transport::kRc, Transport::kUc, Transport::kUd}) {
      if (!info->valid_on(t)) continue;
      const std::uint32_t n = t == Transport::kUd || info->is_read_or_atomic() ? 1 : 3;
      for (std::uint8_t code : message(wr, n, t)) {
        const OpcodeInfo* op = opcode_info(code);
        ASSERT_NE(op, nullptr) << info->name << " packet 0x" << std::hex << int{code};
        EXPECT_EQ(op->transport, t) << op->name;
        EXPECT_TRUE(op->is(kOpRequest)) << op->name;
      }
    }
  }
}

TEST(WrOpcodeTableTest, ReadAndAtomicsAreRcOnlyAndTheOnlyOnesHoldingRdAtomicSlots) {
  for (std::uint8_t wr = 0; wr <= kMaxWrOpcode; ++wr) {
    const WrOpcodeInfo* info = wr_opcode_info(wr);
    const bool rd_atomic = wr == kRead || wr == kCas || wr == kFaa;
    EXPECT_EQ(info->is_read_or_atomic(), rd_atomic) << info->name;
    EXPECT_TRUE(info->valid_on(Transport::kRc)) << info->name;
    EXPECT_EQ(info->valid_on(Transport::kUc), !rd_atomic) << info->name;
    EXPECT_EQ(info->valid_on(Transport::kUd), wr == kSend || wr == kSendImm) << info->name;
  }
  EXPECT_EQ(wr_opcode_info(kMaxWrOpcode + 1), nullptr);
  EXPECT_EQ(wr_opcode_info(0xff), nullptr);
}

}  // namespace
}  // namespace qpgate::wire
