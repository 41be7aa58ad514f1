#include "wire/rx_counters.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sample_packets.h"

namespace qpgate::wire {
namespace {

TEST(RxCountersTest, EachDecodeOutcomeBumpsItsOwnNamedCounter) {
  RxCounters c;
  const UdpFlow flow = testing::sample_flow_v4();
  auto send = testing::encode_sample(*opcode_info(Opcode::kRcSendOnly), 8, flow);
  auto cnp = testing::encode_sample(*opcode_info(Opcode::kCnp), 0, flow);
  c.count(decode_verified(send, flow));
  c.count(decode_verified(send, flow));
  c.count(decode_verified(cnp, flow));
  auto bad = send;
  bad[bad.size() - 1] ^= 1;
  c.count(decode_verified(bad, flow));
  c.count(decode(std::span(send).first(3)));
  c.count(DecodeError::kNotRoceV2Port);

  std::map<std::string, std::uint64_t> seen;
  c.for_each([&](std::string_view name, std::uint64_t v) { seen[std::string(name)] = v; });
  EXPECT_EQ(seen.size(), 2 + kDecodeErrorCount);
  EXPECT_EQ(seen["accepted"], 2u);
  EXPECT_EQ(seen["cnp"], 1u);
  EXPECT_EQ(seen["icrc_mismatch"], 1u);
  EXPECT_EQ(seen["truncated"], 1u);
  EXPECT_EQ(seen["not_rocev2_port"], 1u);
  EXPECT_EQ(seen["bad_tver"], 0u);
  EXPECT_EQ(c.rejected_count(DecodeError::kIcrcMismatch), 1u);
}

}  // namespace
}  // namespace qpgate::wire
