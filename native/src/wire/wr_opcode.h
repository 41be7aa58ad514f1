// The work-request opcode table: per ibv_wr_opcode, what the operation does,
// on which transports it may be posted, and the packet opcodes a message of
// it is made of. Mirrors rxe's rxe_wr_opcode_info[] (rxe_opcode.c), so that
// "is it a read or an atomic" is one lookup, never a list of opcodes repeated
// in the requester, the completer and the send queue's validation.
//
// Indexed by the ibv_wr_opcode number (verbs/types.h WrOpcode has the same
// values); the wire layer keeps no dependency on verbs/.
#pragma once

#include <cstdint>
#include <string_view>

#include "wire/opcode.h"

namespace qpgate::wire {

// What a work request does (after rxe's WR_*_MASK).
enum WrFlag : std::uint8_t {
  kWrSend = 1u << 0,    // consumes a receive WQE at the responder
  kWrWrite = 1u << 1,   // writes remote memory
  kWrRead = 1u << 2,    // reads remote memory (the response carries the data)
  kWrAtomic = 1u << 3,  // CMP_AND_SWP / FETCH_AND_ADD on one remote 8-byte word
  kWrImm = 1u << 4,     // carries immediate data
};

// Transports a work request may be posted on (bit per wire::Transport).
constexpr std::uint8_t transport_bit(Transport t) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(t)); }

struct WrOpcodeInfo {
  std::string_view name;   // "IBV_WR_SEND"
  std::uint8_t transports; // transport_bit() of each transport that may carry it
  std::uint8_t flags;      // WrFlag
  std::uint8_t wc_opcode;  // the ibv_wc_opcode its successful completion has
  // The RC packet opcodes of a message by position (UC/UD add their transport
  // base). A READ or an atomic is always one request packet: `only`.
  Opcode first, middle, last, only;

  bool is(WrFlag f) const { return (flags & f) != 0; }
  // Holds one of the QP's max_rd_atomic slots and is answered by a response
  // that carries data, not by an ACK.
  bool is_read_or_atomic() const { return is(kWrRead) || is(kWrAtomic); }
  bool valid_on(Transport t) const { return (transports & transport_bit(t)) != 0; }
  // The packet opcode of packet `index` of `count` on transport `t`.
  std::uint8_t packet_opcode(std::uint32_t index, std::uint32_t count, Transport t) const;
};

// The highest ibv_wr_opcode qpgate implements (IBV_WR_ATOMIC_FETCH_AND_ADD).
inline constexpr std::uint8_t kMaxWrOpcode = 6;

// nullptr for an opcode qpgate does not implement.
const WrOpcodeInfo* wr_opcode_info(std::uint8_t wr_opcode);

}  // namespace qpgate::wire
