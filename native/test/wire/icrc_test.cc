#include "wire/icrc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "capture_corpus.h"
#include "sample_packets.h"
#include "wire/byte_order.h"
#include "wire/packet.h"

namespace qpgate::wire {
namespace {

TEST(IcrcTest, CrcImplementationIsTheOneTheBuildChose) {
#if defined(QPGATE_CRC_ISAL)
  EXPECT_EQ(crc_impl_name(), "isal");
#else
  EXPECT_EQ(crc_impl_name(), "zlib");
#endif
  // Standard CRC-32 check value ("123456789" → 0xCBF43926) and chaining.
  const std::uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32_update(0, check), 0xCBF43926u);
  EXPECT_EQ(crc32_update(crc32_update(0, std::span(check).first(4)), std::span(check).subspan(4)),
            0xCBF43926u);
  // rxe seeds its CRC with 0xdebb20e3, the state after 8 bytes of 0xff.
  const std::uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(~crc32_update(0, lrh), 0xdebb20e3u);
}

TEST(IcrcTest, EveryReferenceCapturePacketVerifies) {
  QPGATE_REQUIRE_CAPTURES();
  std::vector<std::string> files;
  const auto packets = testing::load_reference_packets(&files);
  // 141 packets in captures/, 962 in captures/more (its README says 952).
  ASSERT_GE(files.size(), 16u);
  ASSERT_GE(packets.size(), 1100u);
  std::map<std::string, int> per_file;
  for (const auto& cp : packets) {
    const auto outer = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer.ok()) << cp.file << "#" << cp.frame;
    EXPECT_TRUE(icrc_verify(*outer)) << cp.file << "#" << cp.frame;
    const auto p = decode_verified(*outer);
    EXPECT_TRUE(p.ok()) << cp.file << "#" << cp.frame << ": "
                        << (p.ok() ? "" : decode_error_name(p.error()));
    ++per_file[cp.file];
  }
  for (const auto& f : files) EXPECT_GT(per_file[f], 0) << f << " has no RoCEv2 packet";
}

TEST(IcrcTest, Ipv6ReferencePacketsVerify) {
  QPGATE_REQUIRE_CAPTURES();
  const auto packets = testing::load_reference_packets("more/rc-pingpong-ipv6.pcap");
  ASSERT_EQ(packets.size(), 12u);
  for (const auto& cp : packets) {
    const auto outer = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer.ok());
    EXPECT_EQ(outer->family, IpFamily::kIpv6);
    EXPECT_TRUE(icrc_verify(*outer)) << cp.frame;
  }
}

TEST(IcrcTest, IcrcIsStoredLittleEndianOnTheWire) {
  QPGATE_REQUIRE_CAPTURES();
  const auto packets = testing::load_reference_packets("rc-pingpong.pcap");
  ASSERT_FALSE(packets.empty());
  const auto outer = parse_ip_udp(packets[0].ip);
  ASSERT_TRUE(outer.ok());
  const auto covered = outer->roce.first(outer->roce.size() - 4);
  const std::uint32_t crc = icrc_compute(outer->ip_udp(), covered);
  const std::uint8_t* tail = outer->roce.data() + outer->roce.size() - 4;
  EXPECT_EQ(load_le32(tail), crc);
  EXPECT_NE(load_be32(tail), crc);
}

// Flip every bit of every byte of a sample of capture packets: the ICRC must
// catch a change anywhere it covers, and ignore the masked (variant) fields.
TEST(IcrcTest, FlippingAnyCoveredByteOfACapturePacketIsAMismatch) {
  QPGATE_REQUIRE_CAPTURES();
  std::vector<testing::CapturePacket> sample;
  for (const char* f : {"rc-write-read-atomic.pcap", "ud-pingpong.pcap", "more/rc-imm.pcap",
                        "more/rc-pingpong-ipv6.pcap", "more/nak-rnr.pcap"}) {
    auto all = testing::load_reference_packets(f);
    ASSERT_GE(all.size(), 2u) << f;
    sample.push_back(all[0]);
    sample.push_back(all[1]);
  }
  int flips = 0;
  for (const auto& cp : sample) {
    const auto outer0 = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer0.ok());
    const bool v4 = outer0->family == IpFamily::kIpv4;
    const std::size_t ip_len = outer0->ip_header.size();
    const std::size_t total = ip_len + 8 + outer0->roce.size();
    for (std::size_t i = 0; i < total; ++i) {
      // Masked fields are exactly those the network may rewrite.
      const bool masked =
          (v4 && (i == 1 || i == 8 || i == 10 || i == 11)) ||
          (!v4 && (i <= 3 || i == 7)) || i == ip_len + 6 || i == ip_len + 7 ||
          i == ip_len + 8 + 4;
      for (int bit = 0; bit < 8; ++bit) {
        if (!v4 && i == 0 && bit >= 4) continue;  // IPv6 version nibble: no longer IPv6
        auto ip = cp.ip;
        ip[i] ^= static_cast<std::uint8_t>(1u << bit);
        const auto outer = parse_ip_udp(ip);
        if (!outer.ok()) continue;  // a length/version/port flip: rejected before the ICRC
        if (outer->roce.size() != outer0->roce.size()) continue;
        ++flips;
        if (masked) {
          EXPECT_TRUE(icrc_verify(*outer)) << cp.file << "#" << cp.frame << " masked byte " << i;
        } else {
          EXPECT_FALSE(icrc_verify(*outer)) << cp.file << "#" << cp.frame << " byte " << i << " bit " << bit;
        }
      }
    }
  }
  EXPECT_GT(flips, 5000);
}

TEST(IcrcTest, SynthesizedPseudoHeaderEqualsRealHeaderWithIdZeroAndDf) {
  for (const UdpFlow& flow : {testing::sample_flow_v4(), testing::sample_flow_v6()}) {
    const auto roce = testing::encode_sample(*opcode_info(Opcode::kUdSendOnly), 61, flow);
    ASSERT_FALSE(roce.empty());
    // What our sender's kernel emits: ID 0, DF, some TTL/TOS (masked anyway).
    OuterOptions opt;
    opt.ttl_or_hop_limit = 1;
    opt.tos_or_traffic_class = 0x02;  // ECT(0)
    opt.ipv6_flow_label = 0x12345;
    std::vector<std::uint8_t> dgram(kMaxIpUdpHeaderBytes + roce.size());
    const std::size_t n = build_ip_udp_datagram(dgram, flow, roce, opt);
    ASSERT_NE(n, 0u);
    dgram.resize(n);
    const auto outer = parse_ip_udp(dgram);
    ASSERT_TRUE(outer.ok());
    EXPECT_TRUE(icrc_verify(*outer));          // raw path
    EXPECT_TRUE(icrc_verify(roce, flow));      // plain-socket path
    EXPECT_EQ(outer->flow, flow);
  }
}

TEST(IcrcTest, PlainSocketPathCannotVerifyAPeerThatSendsANonZeroIpv4Id) {
  QPGATE_REQUIRE_CAPTURES();
  // rxe picks a non-zero ID, so the synthesized header (ID 0) disagrees:
  // why the soft backend counts such packets instead of checking them.
  const auto packets = testing::load_reference_packets("rc-pingpong.pcap");
  const auto outer = parse_ip_udp(packets.at(0).ip);
  ASSERT_TRUE(outer.ok());
  ASSERT_NE(outer->ipv4_id, 0);
  EXPECT_TRUE(icrc_verify(*outer));
  EXPECT_FALSE(icrc_verify(outer->roce, outer->flow));
  // With the ID forced to 0 and the ICRC resealed, both paths agree.
  auto ip = packets[0].ip;
  ip[4] = ip[5] = 0;
  auto outer0 = parse_ip_udp(ip);
  ASSERT_TRUE(outer0.ok());
  std::vector<std::uint8_t> roce(outer0->roce.begin(), outer0->roce.end());
  icrc_store(roce, outer0->ip_udp());
  EXPECT_TRUE(icrc_verify(roce, outer0->flow));
}

TEST(IcrcTest, ShortRocePayloadsNeverVerify) {
  const UdpFlow flow = testing::sample_flow_v4();
  std::vector<std::uint8_t> tiny(15, 0);
  EXPECT_FALSE(icrc_verify(tiny, flow));
  EXPECT_FALSE(icrc_verify(std::span<const std::uint8_t>(), flow));
}

}  // namespace
}  // namespace qpgate::wire
