// Taking a server-side RC queue pair from RESET to RTS in one step, for the
// gateway's sessions (order entry, risk, recovery): the client created its
// QP first and sent its QPN, PSN, GID and MTU through the control plane
// handshake, so the gateway's QP can go INIT → RTR → RTS at once, with every
// attribute spelled out as ibv_rc_pingpong does. The client then takes its
// own QP to RTR/RTS with the gateway's answer.
#pragma once

#include <cstdint>
#include <optional>

#include "verbs/device.h"

namespace qpgate::verbs {

// What the other side told us in the handshake.
struct RcPeer {
  Gid gid;
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits: its first send PSN = our rq_psn
  Mtu mtu = Mtu::MTU_1024;
  // Its alternate path's GID (a second address: IBV_QP_ALT_PATH), when it has one.
  std::optional<Gid> alt_gid;
  // How long its responder holds the ACK of a request that did not ask for
  // one (the handshake's ackHoldUs; 0: it never acknowledges those, as rxe).
  std::int64_t ack_hold_ns = 0;
};

// Our side's transport parameters (IBA 9.7: timeouts and retries).
struct RcParams {
  std::uint32_t psn = 0;                 // our first send PSN (random by the caller: see random_psn)
  Mtu mtu = Mtu::MTU_1024;               // the path MTU is min(ours, the peer's)
  AccessFlags access = Access::LOCAL_WRITE;  // remote operations this QP's responder accepts
  std::uint8_t timeout = 14;             // local ACK timeout 4.096 µs × 2^14 ≈ 67 ms
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;            // 7 = retry RNR NAKs forever
  std::uint8_t min_rnr_timer = 1;        // 0.01 ms, advertised in our RNR NAKs
  std::uint8_t max_rd_atomic = 0;        // READ/atomic we initiate in flight
  std::uint8_t max_dest_rd_atomic = 0;   // READ/atomic we serve in flight
  std::uint8_t hop_limit = 64;
  std::uint8_t sgid_index = 0;           // the device's chosen source GID (ibv: IbvDevice's selection)
  std::uint8_t traffic_class = 0;
  // The source GID of our alternate path (choose_alternate_gid), when we have one.
  std::optional<std::uint8_t> alt_sgid_index;
};

// True when both ends have an alternate path: connect_rc arms it.
inline bool arms_alternate(const RcParams& local, const RcPeer& peer) {
  return local.alt_sgid_index.has_value() && peer.alt_gid.has_value();
}

// A random 24-bit PSN (getrandom; a fixed start PSN lets stale packets of an
// earlier connection land in a new one).
std::uint32_t random_psn();

// Whether our requester may leave AckReq clear to the window (AckRequests::
// WINDOW): the peer's ACK hold is well inside our local ACK timeout, so a
// request that did not ask is acknowledged long before we would resend it.
bool peer_holds_acks(const RcParams& local, const RcPeer& peer);

// RESET → INIT → RTR → RTS towards `peer`; when arms_alternate, the RTS
// step also loads the alternate path (our alt_sgid_index to the peer's
// alt_gid, the same timeout) with PATH_MIG_STATE REARM: the QP is ARMED
// and migrates when the primary path's retries run out (docs/protocol.md §1.10). When peer_holds_acks
// and the backend offers it, the requester asks for ACKs to the window only ("The ACK hold"). On
// failure the QP is left where it stopped and the Status names the transition and attribute refused.
Status connect_rc(QueuePair& qp, const RcParams& local, const RcPeer& peer);

// After a migration: an armed QP (arms_alternate) in RTS whose
// path_mig_state is MIGRATED runs on one of its two paths and has none to
// fall back on. This loads the path it left as its new alternate with
// PATH_MIG_STATE REARM (ARMED), so it can migrate back should the path it
// runs on fail in turn. The caller re-arms only once the peer has followed
// (nothing of ours unacknowledged since the migration): until then our
// packets must carry MigReq = 1, which an ARMED QP stops sending, or a peer
// still on the old path would never follow. It re-arms only towards a path
// whose local link is up (device.gid_link_up of its source GID): armed
// towards a dead link, a failure of the path in use would cost a second
// retry budget before the QP gives up, where waiting for the link costs
// nothing. True if it re-armed; false if there was nothing to do (not armed
// at connect, not migrated, not in RTS, the path left still down).
Result<bool> rearm_rc(QueuePair& qp, const Device& device, const RcParams& local, const RcPeer& peer);

}  // namespace qpgate::verbs
