// wire_pcap_writer: encodes every opcode qpgate supports (IPv4, plus a few
// over IPv6) into a classic pcap, and writes the fields it meant to a JSON
// file, so that somebody else's decoder (tshark, scapy) can be asked whether
// it reads the same thing. Used by check_with_tshark_scapy.py.
//
//   wire_pcap_writer <out.pcap> <out.json>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "sample_packets.h"
#include "support/pcap.h"
#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

namespace {

using namespace qpgate;  // NOLINT(google-build-using-namespace): a small tool

struct Meant {
  wire::PacketFields fields;
  const wire::OpcodeInfo* op;
  bool ipv6;
  std::vector<std::uint8_t> payload;
  std::uint32_t icrc;
};

std::string hex(const std::vector<std::uint8_t>& b) {
  std::string s;
  char buf[4];
  for (auto c : b) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    s += buf;
  }
  return s;
}

void write_json(std::FILE* f, const std::vector<Meant>& all) {
  std::fprintf(f, "[\n");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Meant& m = all[i];
    const auto& b = m.fields.bth;
    std::fprintf(f,
                 "  {\"frame\": %zu, \"ip\": %d, \"name\": \"%.*s\", \"opcode\": %u, \"psn\": %u, "
                 "\"dest_qpn\": %u, \"ack_req\": %d, \"solicited\": %d, \"pkey\": %u, \"pad\": %zu, "
                 "\"payload\": \"%s\", \"icrc\": %u",
                 i + 1, m.ipv6 ? 6 : 4, static_cast<int>(m.op->name.size()), m.op->name.data(),
                 unsigned{b.opcode}, b.psn, b.dest_qpn, b.ack_req ? 1 : 0, b.solicited ? 1 : 0,
                 unsigned{b.pkey}, (4 - m.payload.size() % 4) % 4, hex(m.payload).c_str(), m.icrc);
    if (m.op->has(wire::Header::kDeth)) {
      std::fprintf(f, ", \"qkey\": %u, \"src_qpn\": %u", m.fields.deth.qkey, m.fields.deth.src_qpn);
    }
    if (m.op->has(wire::Header::kReth)) {
      std::fprintf(f, ", \"reth_va\": %" PRIu64 ", \"reth_rkey\": %u, \"reth_dma_len\": %u",
                   m.fields.reth.va, m.fields.reth.rkey, m.fields.reth.dma_len);
    }
    if (m.op->has(wire::Header::kAtomicEth)) {
      const auto& a = m.fields.atomic_eth;
      std::fprintf(f,
                   ", \"atomic_va\": %" PRIu64 ", \"atomic_rkey\": %u, \"atomic_swap_add\": %" PRIu64
                   ", \"atomic_compare\": %" PRIu64,
                   a.va, a.rkey, a.swap_add, a.compare);
    }
    if (m.op->has(wire::Header::kAeth)) {
      std::fprintf(f, ", \"syndrome\": %u, \"msn\": %u", unsigned{m.fields.aeth.syndrome},
                   m.fields.aeth.msn);
    }
    if (m.op->has(wire::Header::kAtomicAckEth)) {
      std::fprintf(f, ", \"orig_remote_data\": %" PRIu64, m.fields.orig_remote_data);
    }
    if (m.op->has(wire::Header::kImmDt)) std::fprintf(f, ", \"imm\": %u", m.fields.imm);
    std::fprintf(f, "}%s\n", i + 1 < all.size() ? "," : "");
  }
  std::fprintf(f, "]\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <out.pcap> <out.json>\n", argv[0]);
    return 2;
  }
  struct Plan {
    wire::Opcode op;
    bool ipv6;
    std::size_t payload;
    std::uint32_t n;
  };
  std::vector<Plan> plan;
  for (const wire::OpcodeInfo& op : wire::all_opcodes()) {
    // Every opcode over IPv4, with a payload that needs pad where allowed.
    plan.push_back({op.opcode, false, std::size_t{op.is_last() ? 61u : 64u}, 0});
  }
  // The other pad counts, zero-length messages, and every AETH type.
  for (std::uint32_t len = 0; len < 4; ++len) plan.push_back({wire::Opcode::kRcSendOnly, false, len, len});
  plan.push_back({wire::Opcode::kUdSendOnlyWithImm, false, 0, 1});
  for (std::uint32_t n = 1; n < 4; ++n) plan.push_back({wire::Opcode::kRcAcknowledge, false, 0, n});
  // IPv6: scapy's RoCE layer has no IPv6 ICRC, so these are the interesting ones.
  for (wire::Opcode op : {wire::Opcode::kRcSendOnly, wire::Opcode::kRcSendLastWithImm,
                          wire::Opcode::kRcRdmaWriteOnlyWithImm, wire::Opcode::kRcRdmaReadRequest,
                          wire::Opcode::kRcRdmaReadResponseOnly, wire::Opcode::kRcAcknowledge,
                          wire::Opcode::kRcFetchAdd, wire::Opcode::kRcCompareSwap,
                          wire::Opcode::kRcAtomicAcknowledge, wire::Opcode::kUdSendOnly,
                          wire::Opcode::kUdSendOnlyWithImm, wire::Opcode::kUcRdmaWriteFirst}) {
    plan.push_back({op, true, 29, 7});
  }

  testing::PcapWriter pcap(argv[1]);
  if (!pcap.ok()) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::vector<Meant> meant;
  std::uint32_t t = 0;
  for (const Plan& p : plan) {
    const wire::OpcodeInfo& op = *wire::opcode_info(p.op);
    Meant m{testing::sample_fields(op, p.n), &op, p.ipv6, {}, 0};
    if (p.op == wire::Opcode::kRcAcknowledge && p.n == 1) m.fields.aeth.syndrome = 0x1f;  // ACK, no credits
    if (p.op == wire::Opcode::kRcAcknowledge && p.n == 2) m.fields.aeth.syndrome = 0x36;  // RNR NAK, timer 22
    m.payload = testing::sample_payload(testing::sample_payload_len(op, p.payload),
                                        static_cast<std::uint8_t>(p.n));
    const std::uint32_t src_qpn = op.has(wire::Header::kDeth) ? m.fields.deth.src_qpn : 0x000123;
    const wire::UdpFlow flow = p.ipv6 ? testing::sample_flow_v6(src_qpn) : testing::sample_flow_v4(src_qpn);
    std::vector<std::uint8_t> roce(wire::encoded_size(m.fields.bth.opcode, m.payload.size()));
    const auto r = wire::encode(m.fields, m.payload, flow, roce);
    if (!r.ok()) {
      std::fprintf(stderr, "encode %.*s: %.*s\n", static_cast<int>(op.name.size()), op.name.data(),
                   static_cast<int>(wire::encode_error_name(r.error()).size()),
                   wire::encode_error_name(r.error()).data());
      return 1;
    }
    m.icrc = wire::icrc_stored(roce);
    std::vector<std::uint8_t> dgram(wire::kMaxIpUdpHeaderBytes + roce.size());
    dgram.resize(wire::build_ip_udp_datagram(dgram, flow, roce));
    // What a receiver on the raw path would make of it: decode and verify.
    const auto outer = wire::parse_ip_udp(dgram);
    if (!outer.ok() || !wire::decode_verified(*outer).ok()) {
      std::fprintf(stderr, "self-check failed for %.*s\n", static_cast<int>(op.name.size()), op.name.data());
      return 1;
    }
    pcap.write(testing::ethernet_frame(dgram), 1700000000, t++);
    meant.push_back(std::move(m));
  }
  std::FILE* json = std::fopen(argv[2], "w");
  if (json == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  write_json(json, meant);
  std::fclose(json);
  std::printf("wrote %zu packets to %s\n", meant.size(), argv[1]);
  return 0;
}
