#include "wire/opcode.h"

#include <initializer_list>

namespace qpgate::wire {
namespace {

// Offsets follow from the wire order of the headers, so they are computed
// rather than typed in: a table edit cannot leave an offset inconsistent with
// the header list (the class of bug rxe_opcode.c avoids only by review).
constexpr OpcodeInfo entry(Opcode op, std::string_view name, Transport transport,
                           std::initializer_list<Header> extension_headers, std::uint32_t flags) {
  OpcodeInfo info{op, name, transport, header_bit(Header::kBth), {}, 0, flags};
  std::size_t at = kBthBytes;
  // Walk the canonical order so that the list's order cannot matter.
  for (std::size_t h = 1; h < kHeaderKinds; ++h) {
    for (Header wanted : extension_headers) {
      if (static_cast<std::size_t>(wanted) != h) continue;
      info.headers = static_cast<std::uint16_t>(info.headers | header_bit(wanted));
      info.offset[h] = static_cast<std::uint8_t>(at);
      at += header_bytes(wanted);
    }
  }
  info.length = static_cast<std::uint8_t>(at);
  return info;
}

using H = Header;
using O = Opcode;
using T = Transport;

constexpr std::uint32_t kRcReq = kOpRequest | kOpAckReq;
constexpr std::uint32_t kSendF = kOpSend | kOpPayload;
constexpr std::uint32_t kWriteF = kOpWrite | kOpPayload;

// Send and write messages are identical for RC and UC (IBA 9.2: UC uses the
// RC opcodes at base 0x20); only AckReq differs, which UC never uses.
#define QPGATE_SEND_WRITE(P, p, req)                                                       \
  entry(O::k##P##SendFirst, #p "_SEND_FIRST", T::k##P, {}, req | kSendF | kOpFirst),            \
  entry(O::k##P##SendMiddle, #p "_SEND_MIDDLE", T::k##P, {}, req | kSendF | kOpMiddle),         \
  entry(O::k##P##SendLast, #p "_SEND_LAST", T::k##P, {}, req | kSendF | kOpLast),               \
  entry(O::k##P##SendLastWithImm, #p "_SEND_LAST_WITH_IMMEDIATE", T::k##P, {H::kImmDt},          \
        req | kSendF | kOpLast | kOpImm),                                                        \
  entry(O::k##P##SendOnly, #p "_SEND_ONLY", T::k##P, {}, req | kSendF | kOpFirst | kOpLast),    \
  entry(O::k##P##SendOnlyWithImm, #p "_SEND_ONLY_WITH_IMMEDIATE", T::k##P, {H::kImmDt},          \
        req | kSendF | kOpFirst | kOpLast | kOpImm),                                             \
  entry(O::k##P##RdmaWriteFirst, #p "_RDMA_WRITE_FIRST", T::k##P, {H::kReth},                   \
        req | kWriteF | kOpFirst),                                                               \
  entry(O::k##P##RdmaWriteMiddle, #p "_RDMA_WRITE_MIDDLE", T::k##P, {}, req | kWriteF | kOpMiddle), \
  entry(O::k##P##RdmaWriteLast, #p "_RDMA_WRITE_LAST", T::k##P, {}, req | kWriteF | kOpLast),   \
  /* WRITE_LAST_WITH_IMM consumes a receive WQE for the immediate (IBA 9.4.4) */                 \
  entry(O::k##P##RdmaWriteLastWithImm, #p "_RDMA_WRITE_LAST_WITH_IMMEDIATE", T::k##P,            \
        {H::kImmDt}, req | kWriteF | kOpLast | kOpImm | kOpSend),                                \
  entry(O::k##P##RdmaWriteOnly, #p "_RDMA_WRITE_ONLY", T::k##P, {H::kReth},                     \
        req | kWriteF | kOpFirst | kOpLast),                                                     \
  entry(O::k##P##RdmaWriteOnlyWithImm, #p "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", T::k##P,            \
        {H::kReth, H::kImmDt}, req | kWriteF | kOpFirst | kOpLast | kOpImm | kOpSend)

constexpr OpcodeInfo kTable[] = {
    QPGATE_SEND_WRITE(Rc, RC, kRcReq),
    // A READ request carries no payload; its RETH DMA length asks for the data.
    entry(O::kRcRdmaReadRequest, "RC_RDMA_READ_REQUEST", T::kRc, {H::kReth},
          kRcReq | kOpRead | kOpFirst | kOpLast),
    // Read responses: AETH on FIRST, LAST and ONLY but not MIDDLE (IBA 9.4.3;
    // rxe_opcode.c), because only those carry the MSN/credits update.
    entry(O::kRcRdmaReadResponseFirst, "RC_RDMA_READ_RESPONSE_FIRST", T::kRc, {H::kAeth},
          kOpResponse | kOpRead | kOpPayload | kOpFirst),
    entry(O::kRcRdmaReadResponseMiddle, "RC_RDMA_READ_RESPONSE_MIDDLE", T::kRc, {},
          kOpResponse | kOpRead | kOpPayload | kOpMiddle),
    entry(O::kRcRdmaReadResponseLast, "RC_RDMA_READ_RESPONSE_LAST", T::kRc, {H::kAeth},
          kOpResponse | kOpRead | kOpPayload | kOpLast),
    entry(O::kRcRdmaReadResponseOnly, "RC_RDMA_READ_RESPONSE_ONLY", T::kRc, {H::kAeth},
          kOpResponse | kOpRead | kOpPayload | kOpFirst | kOpLast),
    entry(O::kRcAcknowledge, "RC_ACKNOWLEDGE", T::kRc, {H::kAeth},
          kOpResponse | kOpFirst | kOpLast),
    entry(O::kRcAtomicAcknowledge, "RC_ATOMIC_ACKNOWLEDGE", T::kRc, {H::kAeth, H::kAtomicAckEth},
          kOpResponse | kOpAtomic | kOpFirst | kOpLast),
    entry(O::kRcCompareSwap, "RC_COMPARE_SWAP", T::kRc, {H::kAtomicEth},
          kRcReq | kOpAtomic | kOpFirst | kOpLast),
    entry(O::kRcFetchAdd, "RC_FETCH_ADD", T::kRc, {H::kAtomicEth},
          kRcReq | kOpAtomic | kOpFirst | kOpLast),
    QPGATE_SEND_WRITE(Uc, UC, kOpRequest),
    // UD: single-packet messages only, DETH names the sender and its Q_Key.
    entry(O::kUdSendOnly, "UD_SEND_ONLY", T::kUd, {H::kDeth},
          kOpRequest | kSendF | kOpFirst | kOpLast),
    entry(O::kUdSendOnlyWithImm, "UD_SEND_ONLY_WITH_IMMEDIATE", T::kUd, {H::kDeth, H::kImmDt},
          kOpRequest | kSendF | kOpFirst | kOpLast | kOpImm),
    entry(O::kCnp, "CNP", T::kCnp, {H::kCnpReserved}, kOpCnp | kOpFirst | kOpLast),
};
#undef QPGATE_SEND_WRITE

constexpr std::size_t kEntries = sizeof(kTable) / sizeof(kTable[0]);

struct Index {
  std::array<std::uint8_t, 256> slot{};  // entry index + 1, 0 = absent
};

constexpr Index make_index() {
  Index index;
  for (std::size_t i = 0; i < kEntries; ++i) {
    index.slot[static_cast<std::uint8_t>(kTable[i].opcode)] = static_cast<std::uint8_t>(i + 1);
  }
  return index;
}
constexpr Index kIndex = make_index();

static_assert(kEntries == 21 + 12 + 2 + 1, "RC 21 + UC 12 + UD 2 + CNP");
static_assert(kTable[static_cast<std::size_t>(kIndex.slot[0x0b] - 1)].length == 32,
              "WRITE_ONLY_WITH_IMM: BTH+RETH+ImmDt (rxe_opcode.c)");
static_assert(kTable[static_cast<std::size_t>(kIndex.slot[0x12] - 1)].offset[5] == 16,
              "ATOMIC_ACK: AtomicAckETH after BTH+AETH");
static_assert(kTable[static_cast<std::size_t>(kIndex.slot[0x65] - 1)].offset[6] == 20,
              "UD SEND_ONLY_WITH_IMM: ImmDt after BTH+DETH");

}  // namespace

const OpcodeInfo* opcode_info(std::uint8_t opcode) {
  const std::uint8_t slot = kIndex.slot[opcode];
  return slot == 0 ? nullptr : &kTable[slot - 1];
}

std::string_view opcode_name(std::uint8_t opcode) {
  const OpcodeInfo* info = opcode_info(opcode);
  return info != nullptr ? info->name : std::string_view("UNKNOWN");
}

OpcodeTable all_opcodes() { return OpcodeTable{kTable, kTable + kEntries}; }

}  // namespace qpgate::wire
