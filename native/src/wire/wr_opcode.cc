#include "wire/wr_opcode.h"

#include <array>

namespace qpgate::wire {
namespace {

constexpr std::uint8_t kRc = transport_bit(Transport::kRc);
constexpr std::uint8_t kUc = transport_bit(Transport::kUc);
constexpr std::uint8_t kUd = transport_bit(Transport::kUd);

// ibv_wc_opcode values (verbs/types.h WcOpcode).
constexpr std::uint8_t kWcSend = 0, kWcRdmaWrite = 1, kWcRdmaRead = 2, kWcCompSwap = 3, kWcFetchAdd = 4;

using O = Opcode;

// Index = ibv_wr_opcode. As in rxe_wr_opcode_info[], the transports are those
// of IBA 10.7.3 (UD: SEND only; UC adds WRITE; RC everything).
constexpr std::array<WrOpcodeInfo, kMaxWrOpcode + 1> kWrOpcodes = {{
    {"IBV_WR_RDMA_WRITE", kRc | kUc, kWrWrite, kWcRdmaWrite,
     O::kRcRdmaWriteFirst, O::kRcRdmaWriteMiddle, O::kRcRdmaWriteLast, O::kRcRdmaWriteOnly},
    {"IBV_WR_RDMA_WRITE_WITH_IMM", kRc | kUc, kWrWrite | kWrImm, kWcRdmaWrite,
     O::kRcRdmaWriteFirst, O::kRcRdmaWriteMiddle, O::kRcRdmaWriteLastWithImm, O::kRcRdmaWriteOnlyWithImm},
    {"IBV_WR_SEND", kRc | kUc | kUd, kWrSend, kWcSend,
     O::kRcSendFirst, O::kRcSendMiddle, O::kRcSendLast, O::kRcSendOnly},
    {"IBV_WR_SEND_WITH_IMM", kRc | kUc | kUd, kWrSend | kWrImm, kWcSend,
     O::kRcSendFirst, O::kRcSendMiddle, O::kRcSendLastWithImm, O::kRcSendOnlyWithImm},
    {"IBV_WR_RDMA_READ", kRc, kWrRead, kWcRdmaRead,
     O::kRcRdmaReadRequest, O::kRcRdmaReadRequest, O::kRcRdmaReadRequest, O::kRcRdmaReadRequest},
    {"IBV_WR_ATOMIC_CMP_AND_SWP", kRc, kWrAtomic, kWcCompSwap,
     O::kRcCompareSwap, O::kRcCompareSwap, O::kRcCompareSwap, O::kRcCompareSwap},
    {"IBV_WR_ATOMIC_FETCH_AND_ADD", kRc, kWrAtomic, kWcFetchAdd,
     O::kRcFetchAdd, O::kRcFetchAdd, O::kRcFetchAdd, O::kRcFetchAdd},
}};

// IBA 9.2 Table 35: the opcode's transport base (bits 7..5).
constexpr std::uint8_t transport_base(Transport t) {
  switch (t) {
    case Transport::kUc: return 0x20;
    case Transport::kUd: return 0x60;
    default: return 0x00;
  }
}

}  // namespace

std::uint8_t WrOpcodeInfo::packet_opcode(std::uint32_t index, std::uint32_t count, Transport t) const {
  const bool starts = index == 0;
  const bool ends = index + 1 >= count;
  const Opcode o = starts && ends ? only : starts ? first : ends ? last : middle;
  return static_cast<std::uint8_t>(static_cast<std::uint8_t>(o) + transport_base(t));
}

const WrOpcodeInfo* wr_opcode_info(std::uint8_t wr_opcode) {
  return wr_opcode <= kMaxWrOpcode ? &kWrOpcodes[wr_opcode] : nullptr;
}

}  // namespace qpgate::wire
