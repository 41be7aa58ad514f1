// The requester (≈ rxe_req.c): turns send WQEs into request packets.
//
// One cursor walks the send queue: the WQE being sent and the index of its
// next packet. A message of L bytes is ceil(L / path MTU) packets (at least
// one), each with the next PSN; a READ is one request packet that reserves
// as many PSNs as response packets will come back. AckReq is set on the
// last packet of every RC message, on every READ/atomic, and at least every
// kMaxPktsPerAck packets (rxe RXE_MAX_PKT_PER_ACK). At most kMaxUnackedPsns
// PSNs are in flight (RXE_MAX_UNACKED_PSNS) and at most max_rd_atomic
// READs/atomics. UC and UD never ask for ACKs: their WQEs complete once sent.
//
// State machine (one function per ReqState returning the next, driven by
// send_one's loop; names in req.cc), one packet per walk, after rxe_req.c:
//   GET_WQE → CHECK_RD_ATOMIC → CHECK_WINDOW → BUILD_PACKET → [SET_ACK_REQ, RC]
//   → TRANSMIT → UPDATE → SENT, or an end that stops run(): WAIT (a limit or
//   the RNR timer), BACKPRESSURE (the device's transmit queue is full),
//   ERROR (the WQE's own SGEs failed), DONE (nothing to send).
//
// Go-back-N (go_back): the cursor returns to the WQE holding a PSN and that
// packet; a READ restarted in its middle is re-requested for the remainder
// (VA and length advanced by whole MTUs), as rxe does.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

#include "verbs/types.h"
#include "verbs/wr.h"
#include "wire/packet.h"
#include "wire/wr_opcode.h"

namespace qpgate::verbs::soft {

class SoftQp;
struct SendWqe;

inline constexpr std::uint32_t kMaxPktsPerAck = 64;
inline constexpr std::uint32_t kMaxUnackedPsns = 128;

enum class ReqState : std::uint8_t {
  GET_WQE,
  CHECK_RD_ATOMIC,
  CHECK_WINDOW,
  BUILD_PACKET,
  SET_ACK_REQ,
  TRANSMIT,
  UPDATE,
  // The ends of a walk, from here on.
  SENT,
  WAIT,
  BACKPRESSURE,
  ERROR,
  DONE,
};
inline constexpr int kReqStateCount = 12;
constexpr bool req_state_ends(ReqState s) { return s >= ReqState::SENT; }
std::string_view req_state_name(ReqState s);

// The transport state of one send WQE, kept beside the SendQueue entry.
struct WqeTxState {
  std::uint32_t first_psn = 0;
  std::uint32_t last_psn = 0;
  std::uint32_t npkts = 1;          // PSNs the message occupies
  bool started = false;             // PSNs assigned (its first packet went out)
  bool rd_atomic = false;           // holds one of the max_rd_atomic slots
  WcStatus local_error = WcStatus::IBV_WC_SUCCESS;  // set when its own SGEs failed
};

class Requester {
 public:
  explicit Requester(SoftQp& qp);

  void reset();                           // to RESET, or out of ERR
  void start(std::uint32_t sq_psn);       // RTR→RTS: the first PSN
  void on_posted(std::size_t n);          // n WQEs appended to the send queue
  int run(std::int64_t now_ns);           // sends what may be sent; packets sent
  void go_back(std::uint32_t psn);        // retransmit from psn (an unacked PSN)
  void on_front_completed();              // the completer popped the front WQE
  void clear();                           // every WQE was flushed

  bool has_work() const;                  // a packet could be sent now (ignoring timers)
  bool idle() const;                      // nothing sent and unacknowledged, no message half sent
  std::uint32_t next_psn() const { return next_psn_; }
  std::deque<WqeTxState>& wqes() { return wqes_; }
  const std::deque<WqeTxState>& wqes() const { return wqes_; }
  std::uint32_t rd_atomic_outstanding() const { return rd_atomic_; }
  bool blocked_on_error() const { return error_stop_; }
  ReqState last_state() const { return last_state_; }

 private:
  // The packet being made and what the states learn on the way.
  struct Outgoing {
    std::int64_t now_ns = 0;
    bool rc = false;
    const SendWqe* w = nullptr;
    WqeTxState* st = nullptr;
    const wire::WrOpcodeInfo* info = nullptr;
    bool fresh = false;       // the WQE's first packet (no PSNs assigned yet)
    std::uint32_t npkts = 1;  // PSNs the message takes
    std::uint32_t psn = 0;
    bool last_pkt = false;    // the message's last request packet
    wire::PacketFields f;
    std::span<const std::uint8_t> payload;
  };

  ReqState send_one(std::int64_t now_ns);
  ReqState step(ReqState s, Outgoing& p);
  ReqState get_wqe(Outgoing& p);
  ReqState check_rd_atomic(Outgoing& p);
  ReqState check_window(Outgoing& p);
  ReqState build_packet(Outgoing& p);
  ReqState set_ack_req(Outgoing& p);
  ReqState transmit(Outgoing& p);
  ReqState update(Outgoing& p);
  bool build_data_packet(Outgoing& p, std::uint64_t off);
  bool gather(const SendWqe& w, std::uint64_t offset, std::uint32_t len, std::uint8_t* out);
  void complete_unreliable_front();

  SoftQp& qp_;
  std::deque<WqeTxState> wqes_;
  std::uint32_t cur_ = 0;      // index of the WQE being sent, from the front
  std::uint32_t cur_pkt_ = 0;  // its next packet
  std::uint32_t next_psn_ = 0; // the PSN the next fresh WQE starts at
  std::uint32_t noack_pkts_ = 0;
  std::uint32_t rd_atomic_ = 0;
  bool error_stop_ = false;
  bool resending_ = false;     // between go_back and catching up with sent_psn_
  std::uint32_t resend_until_ = 0;
  std::uint32_t sent_psn_ = 0; // after the highest PSN ever transmitted (a READ request covers its response PSNs)
  std::vector<std::uint8_t> payload_;
  ReqState last_state_ = ReqState::DONE;
};

}  // namespace qpgate::verbs::soft
