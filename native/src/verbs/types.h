// The vocabulary of the verbs interface: QP types and states, access flags,
// modify-QP attribute mask bits, path MTU, work-request and completion
// opcodes, completion status, async event types.
//
// Names mirror rdma-core's <infiniband/verbs.h> (IBV_QPT_RC → QpType::RC,
// IBV_WC_REM_ACCESS_ERR → WcStatus::IBV_WC_REM_ACCESS_ERR) and so do the
// numeric values, so that the `ibv` backend converts with a cast and a
// status logged by either backend reads the same. test/verbs/ibv_abi_test.cc
// static_asserts every value against verbs.h when libibverbs-dev is present.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "wire/wr_opcode.h"

namespace qpgate::verbs {

// ---------------------------------------------------------------- QP type
// ibv_qp_type. Only the three transports qpgate serves.
enum class QpType : std::uint8_t {
  RC = 2,  // IBV_QPT_RC: reliable connected (orders, atomics, recovery)
  UC = 3,  // IBV_QPT_UC: unreliable connected
  UD = 4,  // IBV_QPT_UD: unreliable datagram (multicast feeds)
};
std::string_view qp_type_name(QpType t);  // "RC", "UC", "UD"
// The packet transport a QP type speaks (its opcodes' base, wire/opcode.h).
wire::Transport transport_of(QpType t);

// ---------------------------------------------------------------- QP state
// ibv_qp_state.
enum class QpState : std::uint8_t {
  RESET = 0,
  INIT = 1,
  RTR = 2,
  RTS = 3,
  SQD = 4,
  SQE = 5,
  ERR = 6,
};
inline constexpr int kQpStateCount = 7;
std::string_view qp_state_name(QpState s);  // "RESET", "INIT", ... as `rdma res show qp` prints them

// ibv_mig_state: automatic path migration (IBA 17.2.8). MIGRATED: no
// alternate path armed (the state a QP starts in); REARM: the consumer asks
// for the alternate path to be loaded; ARMED: the alternate path is ready,
// and the QP moves to it when the primary path fails.
enum class MigState : std::uint8_t {
  MIGRATED = 0,
  REARM = 1,
  ARMED = 2,
};
std::string_view mig_state_name(MigState s);  // "MIGRATED", "REARM", "ARMED"

// ---------------------------------------------------------------- bit flags
// A strongly typed bit set over an enum whose enumerators are single bits.
template <class E>
class Flags {
 public:
  using Bits = std::underlying_type_t<E>;
  constexpr Flags() = default;
  constexpr Flags(E e) : bits_(static_cast<Bits>(e)) {}  // NOLINT(google-explicit-constructor)
  static constexpr Flags from_bits(Bits b) { Flags f; f.bits_ = b; return f; }

  constexpr Bits bits() const { return bits_; }
  constexpr bool has(E e) const { return (bits_ & static_cast<Bits>(e)) != 0; }
  constexpr bool has_all(Flags o) const { return (bits_ & o.bits_) == o.bits_; }
  constexpr bool any() const { return bits_ != 0; }
  constexpr bool empty() const { return bits_ == 0; }

  constexpr Flags operator|(Flags o) const { return from_bits(static_cast<Bits>(bits_ | o.bits_)); }
  constexpr Flags operator&(Flags o) const { return from_bits(static_cast<Bits>(bits_ & o.bits_)); }
  constexpr Flags without(Flags o) const { return from_bits(static_cast<Bits>(bits_ & ~o.bits_)); }
  constexpr Flags& operator|=(Flags o) { bits_ = static_cast<Bits>(bits_ | o.bits_); return *this; }
  constexpr bool operator==(const Flags&) const = default;

 private:
  Bits bits_ = 0;
};

// ---------------------------------------------------------------- access flags
// ibv_access_flags, the four that memory regions and QPs use here.
enum class Access : std::uint32_t {
  LOCAL_WRITE = 1u << 0,
  REMOTE_WRITE = 1u << 1,
  REMOTE_READ = 1u << 2,
  REMOTE_ATOMIC = 1u << 3,
};
using AccessFlags = Flags<Access>;
constexpr AccessFlags operator|(Access a, Access b) { return AccessFlags(a) | AccessFlags(b); }
inline constexpr AccessFlags kAllAccess =
    Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
std::string_view access_name(Access a);  // "IBV_ACCESS_REMOTE_WRITE"

// ---------------------------------------------------------------- modify-QP mask
// ibv_qp_attr_mask. Every bit libibverbs exposes, so that the state machine
// can say "IBV_QP_ALT_PATH is not allowed" rather than "unknown bit".
enum class QpAttrMask : std::uint32_t {
  STATE = 1u << 0,
  CUR_STATE = 1u << 1,
  EN_SQD_ASYNC_NOTIFY = 1u << 2,
  ACCESS_FLAGS = 1u << 3,
  PKEY_INDEX = 1u << 4,
  PORT = 1u << 5,
  QKEY = 1u << 6,
  AV = 1u << 7,
  PATH_MTU = 1u << 8,
  TIMEOUT = 1u << 9,
  RETRY_CNT = 1u << 10,
  RNR_RETRY = 1u << 11,
  RQ_PSN = 1u << 12,
  MAX_QP_RD_ATOMIC = 1u << 13,
  ALT_PATH = 1u << 14,
  MIN_RNR_TIMER = 1u << 15,
  SQ_PSN = 1u << 16,
  MAX_DEST_RD_ATOMIC = 1u << 17,
  PATH_MIG_STATE = 1u << 18,
  CAP = 1u << 19,
  DEST_QPN = 1u << 20,
  RATE_LIMIT = 1u << 25,
};
using QpAttrMaskFlags = Flags<QpAttrMask>;
constexpr QpAttrMaskFlags operator|(QpAttrMask a, QpAttrMask b) {
  return QpAttrMaskFlags(a) | QpAttrMaskFlags(b);
}
constexpr QpAttrMaskFlags operator|(QpAttrMaskFlags a, QpAttrMask b) { return a | QpAttrMaskFlags(b); }
// Every bit above, for "unknown bit" checks.
inline constexpr std::uint32_t kQpAttrMaskKnownBits = 0x021fffffu;
std::string_view qp_attr_mask_name(QpAttrMask m);  // "IBV_QP_DEST_QPN"

// ---------------------------------------------------------------- AckReq policy
// When an RC requester asks for an ACK (QueuePair::set_ack_requests):
//   PER_MESSAGE  at the end of a signaled WQE or of the last WQE posted, and
//                every kMaxPktsPerAck packets: the IBA's usual, and what rxe
//                and rdma-core's examples expect of their peers
//   WINDOW       only to keep the send queue and the PSN window open (half
//                of either outstanding), for READs, atomics and resends: the
//                peer ACKs what did not ask within its ACK hold, so a
//                ping-pong carries its two SENDs and no ACK
enum class AckRequests : std::uint8_t { PER_MESSAGE, WINDOW };

// ---------------------------------------------------------------- path MTU
// ibv_mtu: the IB MTU codes 1..5. RoCEv2 carries IB MTUs only: on
// 1500-byte Ethernet the largest that fits is 1024.
enum class Mtu : std::uint8_t {
  MTU_256 = 1,
  MTU_512 = 2,
  MTU_1024 = 3,
  MTU_2048 = 4,
  MTU_4096 = 5,
};
constexpr bool mtu_valid(std::uint8_t code) { return code >= 1 && code <= 5; }
// 256 << (code - 1); 0 for an invalid code.
constexpr std::uint32_t mtu_to_bytes(Mtu m) {
  const auto c = static_cast<std::uint8_t>(m);
  return mtu_valid(c) ? 256u << (c - 1) : 0u;
}
// The exact byte counts 256, 512, ... 4096 only; anything else is invalid.
constexpr bool mtu_from_bytes(std::uint32_t bytes, Mtu* out) {
  for (std::uint8_t c = 1; c <= 5; ++c) {
    if ((256u << (c - 1)) == bytes) { *out = static_cast<Mtu>(c); return true; }
  }
  return false;
}
// The largest IB MTU whose packet fits an IP (netdev) MTU, as the kernel's
// iboe_get_mtu() computes it for RoCE: the IP MTU less 96 bytes of headers
// (GRH-sized IP 40, UDP 8, BTH 12, XRCETH 4, AtomicETH 28, ICRC 4). 1500 →
// 1024, 9000 → 4096. Returns false when even 256 does not fit.
bool mtu_for_ip_mtu(std::uint32_t ip_mtu, Mtu* out);
std::string_view mtu_name(Mtu m);  // "1024"

// ---------------------------------------------------------------- work requests
// ibv_wr_opcode (the ones qpgate implements).
enum class WrOpcode : std::uint8_t {
  RDMA_WRITE = 0,
  RDMA_WRITE_WITH_IMM = 1,
  SEND = 2,
  SEND_WITH_IMM = 3,
  RDMA_READ = 4,
  ATOMIC_CMP_AND_SWP = 5,
  ATOMIC_FETCH_AND_ADD = 6,
};
std::string_view wr_opcode_name(WrOpcode op);  // "IBV_WR_SEND"
// Its entry in the work-request opcode table (wire/wr_opcode.h): what it
// does and which packets carry it. `op` must be one of the values above
// (post_send validates a raw opcode before anything asks).
const wire::WrOpcodeInfo& wr_opcode_info(WrOpcode op);
// Whether a WR opcode is valid on a QP type: UD SEND[_WITH_IMM]; UC adds
// RDMA_WRITE[_WITH_IMM]; RC everything.
bool opcode_valid_for(QpType type, WrOpcode op);

// ibv_send_flags.
enum class SendFlag : std::uint32_t {
  FENCE = 1u << 0,
  SIGNALED = 1u << 1,
  SOLICITED = 1u << 2,
  INLINE = 1u << 3,
};
using SendFlags = Flags<SendFlag>;
constexpr SendFlags operator|(SendFlag a, SendFlag b) { return SendFlags(a) | SendFlags(b); }

// ---------------------------------------------------------------- completions
// ibv_wc_status, every value with verbs.h's number (including the RD/EEC
// and tag-matching ones we never produce, so numbers never shift).
enum class WcStatus : std::uint8_t {
  IBV_WC_SUCCESS = 0,
  IBV_WC_LOC_LEN_ERR = 1,
  IBV_WC_LOC_QP_OP_ERR = 2,
  IBV_WC_LOC_EEC_OP_ERR = 3,
  IBV_WC_LOC_PROT_ERR = 4,
  IBV_WC_WR_FLUSH_ERR = 5,
  IBV_WC_MW_BIND_ERR = 6,
  IBV_WC_BAD_RESP_ERR = 7,
  IBV_WC_LOC_ACCESS_ERR = 8,
  IBV_WC_REM_INV_REQ_ERR = 9,
  IBV_WC_REM_ACCESS_ERR = 10,
  IBV_WC_REM_OP_ERR = 11,
  IBV_WC_RETRY_EXC_ERR = 12,
  IBV_WC_RNR_RETRY_EXC_ERR = 13,
  IBV_WC_LOC_RDD_VIOL_ERR = 14,
  IBV_WC_REM_INV_RD_REQ_ERR = 15,
  IBV_WC_REM_ABORT_ERR = 16,
  IBV_WC_INV_EECN_ERR = 17,
  IBV_WC_INV_EEC_STATE_ERR = 18,
  IBV_WC_FATAL_ERR = 19,
  IBV_WC_RESP_TIMEOUT_ERR = 20,
  IBV_WC_GENERAL_ERR = 21,
  IBV_WC_TM_ERR = 22,
  IBV_WC_TM_RNDV_INCOMPLETE = 23,
};
inline constexpr int kWcStatusCount = 24;
// The string ibv_wc_status_str() returns ("success", "remote access error",
// "transport retry counter exceeded", ...).
std::string_view wc_status_name(WcStatus s);
// The enumerator's own name ("IBV_WC_REM_ACCESS_ERR"), for metrics labels.
std::string_view wc_status_enum_name(WcStatus s);

// ibv_wc_opcode. Receive completions have bit 7 set (IBV_WC_RECV), as in verbs.h.
enum class WcOpcode : std::uint8_t {
  SEND = 0,
  RDMA_WRITE = 1,
  RDMA_READ = 2,
  COMP_SWAP = 3,
  FETCH_ADD = 4,
  RECV = 1u << 7,
  RECV_RDMA_WITH_IMM = (1u << 7) + 1,
};
constexpr bool wc_opcode_is_recv(WcOpcode op) { return (static_cast<std::uint8_t>(op) & 0x80u) != 0; }
std::string_view wc_opcode_name(WcOpcode op);  // "IBV_WC_RECV"
// The WC opcode a successful send-queue WR completes with.
WcOpcode wc_opcode_for(WrOpcode op);

// ibv_wc_flags (the ones qpgate sets).
enum class WcFlag : std::uint32_t {
  GRH = 1u << 0,       // a UD receive: the first 40 bytes of the buffer hold the GRH area
  WITH_IMM = 1u << 1,  // imm_data is valid
};
using WcFlags = Flags<WcFlag>;

// ---------------------------------------------------------------- async events
// ibv_event_type.
enum class EventType : std::uint8_t {
  CQ_ERR = 0,
  QP_FATAL = 1,
  QP_REQ_ERR = 2,
  QP_ACCESS_ERR = 3,
  COMM_EST = 4,
  SQ_DRAINED = 5,
  PATH_MIG = 6,
  PATH_MIG_ERR = 7,
  DEVICE_FATAL = 8,
  PORT_ACTIVE = 9,
  PORT_ERR = 10,
  LID_CHANGE = 11,
  PKEY_CHANGE = 12,
  SM_CHANGE = 13,
  SRQ_ERR = 14,
  SRQ_LIMIT_REACHED = 15,
  QP_LAST_WQE_REACHED = 16,
  CLIENT_REREGISTER = 17,
  GID_CHANGE = 18,
  WQ_FATAL = 19,
};
inline constexpr int kEventTypeCount = 20;
// ibv_event_type_str(): "local work queue catastrophic error", "SRQ limit reached", ...
std::string_view event_type_name(EventType e);
// "IBV_EVENT_QP_FATAL", for metrics labels and JS event names.
std::string_view event_type_enum_name(EventType e);

// ---------------------------------------------------------------- port
// ibv_port_state.
enum class PortState : std::uint8_t {
  NOP = 0,
  DOWN = 1,
  INIT = 2,
  ARMED = 3,
  ACTIVE = 4,
  ACTIVE_DEFER = 5,
};
std::string_view port_state_name(PortState s);  // "PORT_ACTIVE" as ibv_devinfo prints it

// ---------------------------------------------------------------- well-known numbers
inline constexpr std::uint32_t kQpnMask = 0x00ffffff;       // QPNs are 24 bits
inline constexpr std::uint32_t kMulticastQpn = 0x00ffffff;  // BTH DestQP of a multicast packet
inline constexpr std::uint32_t kPsnMask = 0x00ffffff;       // PSNs are 24 bits
inline constexpr std::uint32_t kControlledQkeyBit = 0x80000000u;  // IBA: a Q_Key with the high bit set is "controlled"
inline constexpr std::uint32_t kGsiQkey = 0x80010000u;      // QP1's Q_Key
inline constexpr std::uint16_t kRoceV2Port = 4791;

}  // namespace qpgate::verbs
