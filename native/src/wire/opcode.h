// The opcode table: which headers each RoCEv2 opcode carries, where, and how
// it behaves. Mirrors rxe_opcode.c (one entry per opcode with a header mask,
// per-header offsets and the header length), so that parsing is a table
// lookup and never a switch scattered over the code base.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qpgate::wire {

// IBA 9.2 Table 35 / rdma-core libibverbs/opcode.h: opcode = transport base
// (bits 7..5) + operation (bits 4..0).
enum class Opcode : std::uint8_t {
  kRcSendFirst = 0x00,
  kRcSendMiddle = 0x01,
  kRcSendLast = 0x02,
  kRcSendLastWithImm = 0x03,
  kRcSendOnly = 0x04,
  kRcSendOnlyWithImm = 0x05,
  kRcRdmaWriteFirst = 0x06,
  kRcRdmaWriteMiddle = 0x07,
  kRcRdmaWriteLast = 0x08,
  kRcRdmaWriteLastWithImm = 0x09,
  kRcRdmaWriteOnly = 0x0a,
  kRcRdmaWriteOnlyWithImm = 0x0b,
  kRcRdmaReadRequest = 0x0c,
  kRcRdmaReadResponseFirst = 0x0d,
  kRcRdmaReadResponseMiddle = 0x0e,
  kRcRdmaReadResponseLast = 0x0f,
  kRcRdmaReadResponseOnly = 0x10,
  kRcAcknowledge = 0x11,
  kRcAtomicAcknowledge = 0x12,
  kRcCompareSwap = 0x13,
  kRcFetchAdd = 0x14,

  kUcSendFirst = 0x20,
  kUcSendMiddle = 0x21,
  kUcSendLast = 0x22,
  kUcSendLastWithImm = 0x23,
  kUcSendOnly = 0x24,
  kUcSendOnlyWithImm = 0x25,
  kUcRdmaWriteFirst = 0x26,
  kUcRdmaWriteMiddle = 0x27,
  kUcRdmaWriteLast = 0x28,
  kUcRdmaWriteLastWithImm = 0x29,
  kUcRdmaWriteOnly = 0x2a,
  kUcRdmaWriteOnlyWithImm = 0x2b,

  kUdSendOnly = 0x64,
  kUdSendOnlyWithImm = 0x65,

  // RoCEv2 Annex A17.9.3: congestion notification packet. BTH + 16 reserved
  // bytes + ICRC; DestQP names the QP whose traffic was ECN-marked.
  kCnp = 0x81,
};

enum class Transport : std::uint8_t { kRc, kUc, kUd, kCnp };

// The headers a packet may carry, in their wire order (IBA 9.2: BTH, then
// DETH, RETH or AtomicETH, AETH, AtomicAckETH, ImmDt).
enum class Header : std::uint8_t {
  kBth,
  kDeth,
  kReth,
  kAtomicEth,
  kAeth,
  kAtomicAckEth,
  kImmDt,
  kCnpReserved,
};
inline constexpr std::size_t kHeaderKinds = 8;

inline constexpr std::size_t kBthBytes = 12;
inline constexpr std::size_t kDethBytes = 8;
inline constexpr std::size_t kRethBytes = 16;
inline constexpr std::size_t kAtomicEthBytes = 28;
inline constexpr std::size_t kAethBytes = 4;
inline constexpr std::size_t kAtomicAckEthBytes = 8;
inline constexpr std::size_t kImmDtBytes = 4;
inline constexpr std::size_t kCnpReservedBytes = 16;
inline constexpr std::size_t kIcrcBytes = 4;
// rxe's RXE_MAX_HDR_LENGTH: no opcode's BTH+extension headers exceed this.
inline constexpr std::size_t kMaxTransportHeaderBytes = 80;

constexpr std::size_t header_bytes(Header h) {
  switch (h) {
    case Header::kBth: return kBthBytes;
    case Header::kDeth: return kDethBytes;
    case Header::kReth: return kRethBytes;
    case Header::kAtomicEth: return kAtomicEthBytes;
    case Header::kAeth: return kAethBytes;
    case Header::kAtomicAckEth: return kAtomicAckEthBytes;
    case Header::kImmDt: return kImmDtBytes;
    case Header::kCnpReserved: return kCnpReservedBytes;
  }
  return 0;
}

constexpr std::uint16_t header_bit(Header h) {
  return static_cast<std::uint16_t>(1u << static_cast<unsigned>(h));
}

// Behaviour flags, after rxe's RXE_*_MASK.
enum OpFlag : std::uint32_t {
  kOpFirst = 1u << 0,      // starts a message (rxe RXE_START_MASK)
  kOpMiddle = 1u << 1,
  kOpLast = 1u << 2,       // ends a message (rxe RXE_END_MASK); ONLY = FIRST|LAST
  kOpPayload = 1u << 3,    // may carry payload (rxe RXE_PAYLOAD_MASK)
  kOpRequest = 1u << 4,    // travels requester → responder (rxe RXE_REQ_MASK)
  kOpResponse = 1u << 5,   // travels responder → requester (ACK, read response, atomic ack)
  kOpSend = 1u << 6,       // consumes a receive WQE (rxe RXE_RWR_MASK for sends)
  kOpWrite = 1u << 7,
  kOpRead = 1u << 8,
  kOpAtomic = 1u << 9,
  kOpImm = 1u << 10,       // carries ImmDt and completes with IBV_WC_WITH_IMM
  // The responder may be asked to acknowledge this packet (BTH AckReq). Only
  // RC requests: IBA 9.7.5.1 makes AckReq meaningless for UC/UD and rxe never
  // sets it there, so the requester side checks this bit before setting it.
  kOpAckReq = 1u << 11,
  kOpCnp = 1u << 12,
};

struct OpcodeInfo {
  Opcode opcode;
  std::string_view name;  // rdma-core spelling, e.g. "RC_SEND_ONLY"
  Transport transport;
  std::uint16_t headers;  // header_bit() of every header present, BTH included
  std::array<std::uint8_t, kHeaderKinds> offset;  // byte offset of each present header
  std::uint8_t length;    // BTH + extension headers, before the payload
  std::uint32_t flags;

  bool has(Header h) const { return (headers & header_bit(h)) != 0; }
  bool is(OpFlag f) const { return (flags & f) != 0; }
  bool is_first() const { return is(kOpFirst); }
  bool is_middle() const { return is(kOpMiddle); }
  bool is_last() const { return is(kOpLast); }
  bool is_only() const { return is(kOpFirst) && is(kOpLast); }
  bool carries_payload() const { return is(kOpPayload); }
  bool ack_req_allowed() const { return is(kOpAckReq); }
  std::size_t offset_of(Header h) const { return offset[static_cast<std::size_t>(h)]; }
};

// nullptr for an opcode we do not implement (RD, XRC, vendor, reserved).
const OpcodeInfo* opcode_info(std::uint8_t opcode);
inline const OpcodeInfo* opcode_info(Opcode opcode) {
  return opcode_info(static_cast<std::uint8_t>(opcode));
}

// "RC_SEND_ONLY", or "UNKNOWN" for an opcode not in the table.
std::string_view opcode_name(std::uint8_t opcode);

// Every entry, in opcode order (tests and tools iterate it).
struct OpcodeTable {
  const OpcodeInfo* begin_;
  const OpcodeInfo* end_;
  const OpcodeInfo* begin() const { return begin_; }
  const OpcodeInfo* end() const { return end_; }
  std::size_t size() const { return static_cast<std::size_t>(end_ - begin_); }
};
OpcodeTable all_opcodes();

}  // namespace qpgate::wire
