// Decoding and encoding of one RoCEv2 transport packet: BTH .. ICRC, i.e. the
// UDP payload. The opcode table decides which headers are present; the
// header views read them. Nothing here touches the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "wire/headers.h"
#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/opcode.h"
#include "wire/result.h"

namespace qpgate::wire {

enum class PacketKind : std::uint8_t { kIb, kCnp };

// A successfully decoded packet. Every span and view points into the buffer
// given to decode(), which must outlive it.
struct Packet {
  const OpcodeInfo* op = nullptr;            // never null after a successful decode
  std::span<const std::uint8_t> bytes;       // BTH .. ICRC, exactly the decoded input
  std::span<const std::uint8_t> payload;     // without pad
  std::uint8_t pad = 0;

  PacketKind kind() const { return op->is(kOpCnp) ? PacketKind::kCnp : PacketKind::kIb; }
  BthView bth() const { return BthView(bytes.data()); }
  std::optional<DethView> deth() const { return view<DethView>(Header::kDeth); }
  std::optional<RethView> reth() const { return view<RethView>(Header::kReth); }
  std::optional<AtomicEthView> atomic_eth() const { return view<AtomicEthView>(Header::kAtomicEth); }
  std::optional<AethView> aeth() const { return view<AethView>(Header::kAeth); }
  std::optional<AtomicAckEthView> atomic_ack_eth() const {
    return view<AtomicAckEthView>(Header::kAtomicAckEth);
  }
  std::optional<ImmDtView> imm_dt() const { return view<ImmDtView>(Header::kImmDt); }
  // What the ICRC covers after the pseudo header: BTH .. pad.
  std::span<const std::uint8_t> icrc_covered() const { return bytes.first(bytes.size() - kIcrcBytes); }
  std::uint32_t icrc() const { return icrc_stored(bytes); }

 private:
  template <class V>
  std::optional<V> view(Header h) const {
    if (!op->has(h)) return std::nullopt;
    return V(bytes.data() + op->offset_of(h));
  }
};

// The values of every field the encoder writes. Fields of headers the opcode
// does not carry are ignored. The pad count is not a field: it follows from
// the payload length (IBA 9.2.2: pad to a 4-byte multiple).
struct BthFields {
  std::uint8_t opcode = 0;
  bool solicited = false;
  bool mig_req = false;
  std::uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  std::uint32_t dest_qpn = 0;
  bool ack_req = false;
  std::uint32_t psn = 0;
  bool operator==(const BthFields&) const = default;
};
struct DethFields {
  std::uint32_t qkey = 0;
  std::uint32_t src_qpn = 0;
  bool operator==(const DethFields&) const = default;
};
struct RethFields {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t dma_len = 0;
  bool operator==(const RethFields&) const = default;
};
struct AtomicEthFields {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint64_t swap_add = 0;
  std::uint64_t compare = 0;
  bool operator==(const AtomicEthFields&) const = default;
};
struct AethFields {
  std::uint8_t syndrome = 0;
  std::uint32_t msn = 0;
  bool operator==(const AethFields&) const = default;
};
struct PacketFields {
  BthFields bth;
  DethFields deth;
  RethFields reth;
  AtomicEthFields atomic_eth;
  AethFields aeth;
  std::uint64_t orig_remote_data = 0;  // AtomicAckETH
  std::uint32_t imm = 0;               // ImmDt, as ntohl(imm_data)
  bool operator==(const PacketFields&) const = default;
};

// Structural decode of `roce` (the UDP payload: BTH .. ICRC). Checks lengths,
// the opcode, TVer, reserved bits, alignment and the pad count; does NOT
// check the ICRC (see the decode_verified overloads). Reads no byte outside
// `roce`.
Result<Packet> decode(std::span<const std::uint8_t> roce);

// Decode + ICRC check, raw path: the real IP/UDP headers from parse_ip_udp.
Result<Packet> decode_verified(const OuterView& outer);
// Decode + ICRC check, plain UDP socket: pseudo header synthesized from the flow.
Result<Packet> decode_verified(std::span<const std::uint8_t> roce, const UdpFlow& flow);
// Decode + ICRC check against the real IP and UDP headers as received
// (`ip_udp`: 28 or 48 bytes), kept apart from the payload (raw receive).
Result<Packet> decode_verified(std::span<const std::uint8_t> roce, std::span<const std::uint8_t> ip_udp);

// The fields of a decoded packet; encode(fields_of(p), p.payload) rebuilds
// p's headers and payload byte for byte (pad bytes and the CNP's reserved
// bytes are written as zero, as IBA requires of senders).
PacketFields fields_of(const Packet& p);

enum class EncodeError : std::uint8_t {
  kUnknownOpcode,     // fields.bth.opcode is not in the table
  kPayloadNotAllowed, // a non-empty payload for an opcode that carries none
  kBufferTooSmall,    // `out` is shorter than encoded_size()
};
std::string_view encode_error_name(EncodeError e);

// BTH .. ICRC size for this opcode and payload; 0 for an unknown opcode.
std::size_t encoded_size(std::uint8_t opcode, std::size_t payload_len);

// Writes BTH .. pad and a zero ICRC placeholder into `out`; returns the size
// written (== encoded_size). Seal it with icrc_store() once the IP/UDP
// headers are known, or use the overload that takes the flow.
Result<std::size_t, EncodeError> encode(const PacketFields& fields,
                                        std::span<const std::uint8_t> payload,
                                        std::span<std::uint8_t> out);
// encode + ICRC over the pseudo header of `flow` (IPv4 ID 0, DF): what a
// sender on a plain UDP socket transmits.
Result<std::size_t, EncodeError> encode(const PacketFields& fields,
                                        std::span<const std::uint8_t> payload,
                                        const UdpFlow& flow, std::span<std::uint8_t> out);

}  // namespace qpgate::wire
