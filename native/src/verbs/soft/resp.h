// The responder (≈ rxe_resp.c): executes request packets — receives into
// posted buffers, WRITEs and READs of registered memory, atomics — and
// answers with ACK/NAK, READ responses and atomic ACKs.
//
// State machine, as rxe_resp.c: one function per RespState that returns the
// next state, driven by on_request's loop (names in resp.cc):
//   CHK_PSN → CHK_OP_SEQ → CHK_OP_VALID → CHK_RESOURCE → CHK_LENGTH →
//   CHK_RKEY → EXECUTE → {READ_REPLY, ATOMIC_REPLY, COMPLETE} → ACKNOWLEDGE
//   → CLEANUP → DONE, with DUPLICATE_REQUEST and the ERR_* exits. The
//   answers (ACK/NAK, READ responses, atomic ACKs) are in resp_reply.cc.
//
// RC, as rxe does and the IBA asks:
//  - PSN ahead of the expected one: NAK PSN sequence error once; further
//    out-of-sequence packets are dropped silently until the expected PSN
//    arrives (the latch also covers the packets after an RNR NAK).
//  - PSN behind: a duplicate. SEND/WRITE are re-ACKed (when AckReq is set)
//    without being delivered again; READ is executed again from memory;
//    an atomic is answered from the atomic cache, never executed twice.
//  - opcode sequence errors (a MIDDLE without a FIRST) → NAK invalid request.
//  - no receive WQE → RNR NAK with min_rnr_timer.
//  - ACK coalescing: one ACK acknowledges every request up to its PSN
//    (IBA 9.7.5.1), so the AckReq requests of one receive batch are answered
//    by one ACK for the newest, sent when the batch ends (send_owed_ack) —
//    when their separate ACKs would have left too. An answer that covers the
//    owed ACK replaces it: a NAK, an RNR NAK, a READ response or an atomic
//    ACK for a later PSN. The ACK a duplicate SEND/WRITE draws is owed the
//    same way (a go-back-N resend is one batch); NAKs and RNR NAKs go at once.
//  - the ACK hold: a SEND or WRITE that did not ask (AckReq clear) is
//    acknowledged at the latest kAckHoldNs after it arrived, by an ACK of its
//    own when no answer covered it first (on_timers): the IBA lets a
//    responder acknowledge what did not ask, and a requester in
//    AckRequests::WINDOW relies on it (docs/protocol.md "The ACK hold").
//  - a SEND longer than the receive → NAK remote operational error (rxe
//    6.1, test/fixtures/captures/README.md) and the receive completes IBV_WC_LOC_LEN_ERR.
//  - rkey/bounds/access failures → NAK remote access error (0x62); a
//    misaligned atomic → NAK invalid request (0x61). A WRITE/READ/atomic to
//    a QP without the qp_access_flags for it → NAK invalid request (0x61),
//    as rxe (nak-inv-req capture); the MR lacking the access → 0x62.
//  - these NAKs are class C errors: the responder's QP goes to ERR too, with
//    IBV_EVENT_QP_REQ_ERR (0x61) or IBV_EVENT_QP_ACCESS_ERR (0x62).
// UC: no ACKs; a lost packet drops the rest of its message, and the QP
// resumes at the next FIRST/ONLY. UD: one packet per message; the 40-byte
// GRH area at the head of the receive buffer is filled.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>

#include "verbs/soft/mr_table.h"
#include "verbs/soft/transport.h"
#include "verbs/soft/work_queue.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {

class SoftQp;

enum class RespState : std::uint8_t {
  CHK_PSN,
  CHK_OP_SEQ,
  CHK_OP_VALID,
  CHK_RESOURCE,
  CHK_LENGTH,
  CHK_RKEY,
  EXECUTE,
  READ_REPLY,
  ATOMIC_REPLY,
  COMPLETE,
  ACKNOWLEDGE,
  CLEANUP,
  DUPLICATE_REQUEST,
  ERR_PSN_OUT_OF_SEQ,
  ERR_RNR,
  ERR_INVALID_REQUEST,
  ERR_REMOTE_ACCESS,
  ERR_LENGTH,
  ERR_LOCAL,
  DROP,
  DONE,
};
inline constexpr int kRespStateCount = 21;
// The AETH syndrome of a plain ACK: credits invalid (0x1f), as rxe sends it.
inline constexpr std::uint8_t kAckUnlimited = wire::aeth::kAck | wire::aeth::kCreditsInvalid;
// The longest a request that did not ask for an ACK waits for one: far below
// any local ACK timeout a session uses (timeout 14 ≈ 67 ms), long enough that
// a ping-pong's requests are covered by the few ACKs the window asks for.
// Sessions tell their peer in the handshake (ackHoldUs).
inline constexpr std::int64_t kAckHoldNs = 500'000;
std::string_view resp_state_name(RespState s);

// Results of recently executed atomics, by PSN, so a duplicate is answered
// with the original value instead of being executed again (rxe resp_res).
class AtomicCache {
 public:
  static constexpr std::size_t kEntries = 32;
  void put(std::uint32_t psn, std::uint64_t orig);
  std::optional<std::uint64_t> get(std::uint32_t psn) const;
  void clear() { n_ = 0; next_ = 0; }

 private:
  struct Entry {
    std::uint32_t psn = 0;
    std::uint64_t orig = 0;
  };
  std::array<Entry, kEntries> e_{};
  std::size_t n_ = 0;
  std::size_t next_ = 0;
};

class Responder {
 public:
  explicit Responder(SoftQp& qp);

  void reset();                       // RESET
  void start(std::uint32_t rq_psn);   // INIT→RTR: the first expected PSN
  void on_request(const wire::Packet& pkt, const RxMeta& meta);
  int flush_pending();                // responses held by back-pressure, then the owed ACK; packets sent
  int send_owed_ack();                // the end of a receive batch: its one coalesced ACK; packets sent
  int on_timers(std::int64_t now_ns);  // the held ACK once its hold is over; packets sent
  std::int64_t next_deadline_ns() const { return held_ack_deadline_ns_; }
  bool has_pending() const {
    return pending_ack_.has_value() || ack_owed_.has_value() || !pending_reads_.empty();
  }
  // A receive WQE taken but not completed (flushed on ERR first).
  std::optional<RecvWqe> take_held_wqe();
  std::uint32_t expected_psn() const { return epsn_; }
  std::uint32_t msn() const { return msn_; }
  RespState last_state() const { return last_state_; }

 private:
  struct PendingAck {
    std::uint8_t syndrome;
    std::uint32_t psn;
  };
  struct PendingRead {
    std::uint32_t psn;       // of the next response packet
    std::uint64_t va;        // of its first byte
    std::uint32_t rkey;
    std::uint32_t remaining; // bytes still to send
    bool first;              // the next packet is the first response
  };

  // The request packet in hand, as the states see it.
  struct Request {
    const wire::Packet& pkt;
    const wire::OpcodeInfo* op;
    std::uint8_t opcode;
    std::uint32_t psn;
    std::size_t len;  // payload bytes
    bool rc;          // RC (else UC)
    MrAccess access;  // the remote memory CHK_RKEY found
  };

  // One function per state, each returning the next (resp.cc).
  RespState step(RespState s, Request& r);
  RespState check_psn(Request& r);
  RespState check_psn_uc(Request& r);
  RespState check_op_seq(Request& r);
  RespState check_op_valid(Request& r);
  RespState check_resource(Request& r);
  RespState check_length(Request& r);
  RespState check_rkey(Request& r);
  RespState execute(Request& r);
  RespState read_reply(Request& r);
  RespState atomic_reply(Request& r);
  RespState complete(Request& r);
  RespState acknowledge(Request& r);
  RespState duplicate_request(Request& r);
  RespState err_psn_out_of_seq();
  RespState err_rnr(Request& r);
  RespState err_invalid_request(Request& r);
  RespState err_remote_access(Request& r);
  RespState err_length(Request& r);
  RespState err_local(Request& r);
  RespState fail_receive(Request& r, WcStatus status);
  RespState drop(Request& r);
  static RespState fail(const Request& r, RespState rc_state);
  MrAccess remote_access(const Request& r) const;
  void replay_read(const Request& r);
  void replay_atomic(const Request& r);
  void uc_abandon();
  void uc_skip(std::uint32_t psn, bool rest);

  // Answers (resp_reply.cc).
  wire::PacketFields response_fields(wire::Opcode op, std::uint32_t psn, std::uint8_t syndrome) const;
  void send_ack(std::uint8_t syndrome, std::uint32_t psn);
  void owe_ack(std::uint32_t psn);
  void hold_ack(std::uint32_t psn);
  void cover_owed_ack(std::uint32_t through);
  bool send_atomic_ack(std::uint32_t psn, std::uint64_t orig);
  bool pump_read(PendingRead& r);
  void receive_ud(const wire::Packet& pkt, const RxMeta& meta);
  bool take_recv_wqe();
  bool scatter(const wire::Packet& pkt, std::uint64_t offset);
  bool complete_recv(WcStatus status, std::uint32_t byte_len, const wire::Packet* pkt, bool write_imm);
  void class_c_error(std::uint8_t nak, std::uint32_t psn);

  SoftQp& qp_;
  std::uint32_t epsn_ = 0;        // the expected PSN
  std::uint32_t msn_ = 0;         // messages completed (AETH MSN)
  bool sent_psn_nak_ = false;     // latched NAK PSN sequence error / RNR
  // The message in progress.
  std::uint8_t cur_opcode_ = 0xff;  // last accepted opcode of an unfinished message; 0xff = none
  std::optional<RecvWqe> wqe_;      // receive WQE of the SEND (or WRITE_WITH_IMM) in progress
  std::uint64_t recv_offset_ = 0;   // bytes placed in it
  std::uint64_t write_va_ = 0;      // WRITE in progress: next VA, rkey, bytes left, total
  std::uint32_t write_rkey_ = 0;
  std::uint32_t write_resid_ = 0;
  std::uint32_t write_len_ = 0;
  bool uc_drop_ = false;            // UC: dropping until the next FIRST/ONLY
  AtomicCache atomics_;
  std::optional<PendingAck> pending_ack_;
  std::optional<std::uint32_t> ack_owed_;  // the PSN this receive batch's ACK will acknowledge
  // The newest request that did not ask for an ACK and no answer covered yet,
  // and when its ACK must leave (kAckHoldNs after the oldest such request).
  std::optional<std::uint32_t> held_ack_;
  std::int64_t held_ack_deadline_ns_ = INT64_MAX;
  std::deque<PendingRead> pending_reads_;
  std::vector<std::uint8_t> scratch_;
  RespState last_state_ = RespState::DONE;
};

}  // namespace qpgate::verbs::soft
