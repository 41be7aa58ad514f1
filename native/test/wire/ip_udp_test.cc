#include "wire/ip_udp.h"

#include <gtest/gtest.h>

#include <map>

#include "capture_corpus.h"
#include "sample_packets.h"
#include "wire/packet.h"

namespace qpgate::wire {
namespace {

TEST(IpUdpTest, ParsesEveryReferencePacketAsRoceV2WithTheRealHeaders) {
  QPGATE_REQUIRE_CAPTURES();
  int v4 = 0, v6 = 0;
  for (const auto& cp : testing::load_reference_packets()) {
    const auto outer = parse_ip_udp(cp.ip);
    ASSERT_TRUE(outer.ok());
    EXPECT_EQ(outer->flow.dst_port, kRoceV2Port);
    EXPECT_EQ(outer->ip_header.size(), outer->family == IpFamily::kIpv4 ? 20u : 40u);
    EXPECT_EQ(outer->udp_header.data(), outer->ip_header.data() + outer->ip_header.size());
    EXPECT_EQ(outer->roce.data(), outer->udp_header.data() + 8);
    (outer->family == IpFamily::kIpv4 ? v4 : v6)++;
    if (outer->family == IpFamily::kIpv4) {
      // rxe sets DF and a real header checksum; IDs vary (not 0).
      EXPECT_EQ(ipv4_header_checksum(outer->ip_header),
                (outer->ip_header[10] << 8) | outer->ip_header[11]);
    }
  }
  EXPECT_GT(v4, 1000);
  EXPECT_EQ(v6, 12);
}

// Rebuilding the outer headers from the parsed flow reproduces what rxe sent,
// except the fields rxe chose (ID, TTL, flow label, UDP checksum 0).
TEST(IpUdpTest, BuiltHeadersMatchRxeHeadersGivenItsIdAndTtl) {
  QPGATE_REQUIRE_CAPTURES();
  for (const char* file : {"rc-pingpong.pcap", "more/rc-pingpong-ipv6.pcap"}) {
    for (const auto& cp : testing::load_reference_packets(file)) {
      const auto outer = parse_ip_udp(cp.ip);
      ASSERT_TRUE(outer.ok());
      OuterOptions opt;
      if (outer->family == IpFamily::kIpv4) {
        opt.ipv4_id = outer->ipv4_id;
        opt.ttl_or_hop_limit = outer->ip_header[8];
        opt.tos_or_traffic_class = outer->ip_header[1];
      } else {
        opt.ttl_or_hop_limit = outer->ip_header[7];
        opt.ipv6_udp_checksum = false;  // rxe sends 0 over IPv6 too
      }
      std::vector<std::uint8_t> out(cp.ip.size());
      const std::size_t n = build_ip_udp_datagram(out, outer->flow, outer->roce, opt);
      ASSERT_EQ(n, outer->ip_header.size() + 8 + outer->roce.size());
      out.resize(n);
      EXPECT_TRUE(std::equal(out.begin(), out.end(), cp.ip.begin())) << file << "#" << cp.frame;
    }
  }
}

TEST(IpUdpTest, UdSourcePortIsTheQpHashOfTheSendingQp) {
  QPGATE_REQUIRE_CAPTURES();
  int checked = 0;
  for (const char* file : {"ud-pingpong.pcap", "ud-unicast-multicast.pcap", "more/ud-imm.pcap"}) {
    for (const auto& cp : testing::load_reference_packets(file)) {
      const auto outer = parse_ip_udp(cp.ip);
      const auto p = decode(outer->roce);
      ASSERT_TRUE(p.ok());
      ASSERT_TRUE(p->deth().has_value());
      EXPECT_EQ(outer->flow.src_port, roce_src_port(p->deth()->src_qpn())) << file << "#" << cp.frame;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
  EXPECT_EQ(roce_src_port(0x12), 63494);  // ud-pingpong
  EXPECT_EQ(roce_src_port(0x01), 55410);  // QP1 (CM MADs in rdma-cm-rping)
}

TEST(IpUdpTest, RcSourcePortIsTheKernelsFlowLabelHashOfBothQpns) {
  QPGATE_REQUIRE_CAPTURES();
  // Both ends of these captures use QPs of the same number on two devices, so
  // the dest QPN of the packets is also the sender's own QPN.
  for (const char* file : {"rc-pingpong.pcap", "more/rc-imm.pcap", "more/rc-pingpong-ipv6.pcap"}) {
    for (const auto& cp : testing::load_reference_packets(file)) {
      const auto outer = parse_ip_udp(cp.ip);
      const auto p = decode(outer->roce);
      ASSERT_TRUE(p.ok());
      const std::uint32_t qpn = p->bth().dest_qpn();
      EXPECT_EQ(outer->flow.src_port, roce_src_port_connected(0, qpn, qpn)) << file << "#" << cp.frame;
    }
  }
  EXPECT_EQ(roce_src_port_connected(0, 0x11, 0x11), 0xC121);
  // A non-zero flow label is used as given: low 14 bits xor the top 6.
  EXPECT_EQ(roce_src_port_connected(0xfc001, 1, 2), 0xC000 | (0x0001 ^ 0x3f));
}

TEST(IpUdpTest, SourcePortsStayInTheRoceV2EntropyRange) {
  for (std::uint32_t q = 0; q < 0x1000000; q += 0x1357) {
    EXPECT_GE(roce_src_port(q), 0xC000);
    EXPECT_GE(roce_src_port_connected(0, q, q + 1), 0xC000);
  }
}

TEST(IpUdpTest, BuildsValidIpv4WithIdZeroDfAndComputedLengths) {
  const UdpFlow flow = testing::sample_flow_v4();
  std::vector<std::uint8_t> out(64);
  ASSERT_EQ(build_ip_udp_headers(out, flow, 36), 28u);
  EXPECT_EQ(out[0], 0x45);
  EXPECT_EQ((out[2] << 8) | out[3], 20 + 8 + 36);
  EXPECT_EQ((out[4] << 8) | out[5], 0);        // ID 0
  EXPECT_EQ((out[6] << 8) | out[7], 0x4000);   // DF
  EXPECT_EQ(out[9], 17);
  EXPECT_EQ(ipv4_header_checksum(std::span(out).first(20)), (out[10] << 8) | out[11]);
  EXPECT_EQ((out[24] << 8) | out[25], 8 + 36);  // UDP length
  EXPECT_EQ((out[22] << 8) | out[23], 4791);
  EXPECT_EQ(build_ip_udp_headers(std::span(out).first(27), flow, 36), 0u);
  EXPECT_EQ(build_ip_udp_headers(out, flow, 70000), 0u);
}

TEST(IpUdpTest, BuildsIpv6WithPayloadLengthAndAValidUdpChecksum) {
  const UdpFlow flow = testing::sample_flow_v6();
  const auto roce = testing::encode_sample(*opcode_info(Opcode::kRcSendOnly), 5, flow);
  std::vector<std::uint8_t> out(128);
  const std::size_t n = build_ip_udp_datagram(out, flow, roce);
  ASSERT_EQ(n, 48 + roce.size());
  EXPECT_EQ(out[0] >> 4, 6);
  EXPECT_EQ((out[4] << 8) | out[5], 8 + static_cast<int>(roce.size()));
  EXPECT_EQ(out[6], 17);
  // Summing the pseudo header + UDP datagram including its checksum gives 0xffff.
  const std::uint16_t stored = static_cast<std::uint16_t>((out[46] << 8) | out[47]);
  EXPECT_NE(stored, 0);
  EXPECT_EQ(udp_checksum(flow, std::span<const std::uint8_t>(out.data() + 40, 8 + roce.size())), stored);
}

TEST(IpUdpTest, ParseRejectsWhatIsNotAnUnfragmentedRoceV2Datagram) {
  const UdpFlow flow = testing::sample_flow_v4();
  const auto roce = testing::encode_sample(*opcode_info(Opcode::kRcSendOnly), 8, flow);
  std::vector<std::uint8_t> good(128);
  good.resize(build_ip_udp_datagram(good, flow, roce));
  ASSERT_TRUE(parse_ip_udp(good).ok());
  auto expect = [&](auto mutate, DecodeError e) {
    auto d = good;
    mutate(d);
    const auto r = parse_ip_udp(d);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), e) << decode_error_name(r.error());
  };
  expect([](auto& d) { d[0] = 0x55; }, DecodeError::kBadIpHeader);    // version 5
  expect([](auto& d) { d[0] = 0x46; }, DecodeError::kBadIpHeader);    // options
  expect([](auto& d) { d[2] = 0x7f; }, DecodeError::kBadIpHeader);    // tot_len > buffer
  expect([](auto& d) { d.resize(19); }, DecodeError::kBadIpHeader);
  expect([](auto& d) { d[6] |= 0x20; }, DecodeError::kIpFragment);    // MF
  expect([](auto& d) { d[7] = 1; }, DecodeError::kIpFragment);        // offset
  expect([](auto& d) { d[9] = 6; }, DecodeError::kNotUdp);
  expect([](auto& d) { d[25] ^= 4; }, DecodeError::kBadUdpLength);
  expect([](auto& d) { d[23] = 0; }, DecodeError::kNotRoceV2Port);
  expect([](auto& d) { d.clear(); }, DecodeError::kBadIpHeader);
  // Ethernet minimum-frame padding after tot_len is ignored.
  auto padded = good;
  padded.resize(padded.size() + 6, 0);
  const auto r = parse_ip_udp(padded);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->roce.size(), roce.size());
}

}  // namespace
}  // namespace qpgate::wire
