// The soft device's ingress (rxe_recv.c's role): every datagram that
// arrived on the device's sockets passes here before any QP sees it.
//
//   1. decode + ICRC. In the af-packet receive mode the real IP and UDP
//      headers came with the packet (RxMeta::ip_udp) and the ICRC is checked
//      against them: a mismatch is corruption, always dropped. Otherwise
//      (plain UDP sockets) against the pseudo header a plain socket can
//      build: the real addresses and ports, IPv4 ID 0, DF. A plain socket
//      never sees the IPv4 ID, which the ICRC covers, so a mismatch means
//      "corrupt, or a sender that does not use ID 0" (rxe, NICs).
//      IcrcPolicy says what to do with it: drop (count wire icrc_mismatch;
//      the default: only ID-0 peers, i.e. qpgate's soft backend, are
//      accepted and every packet is integrity-checked) or accept and count
//      icrc_unverifiable (interoperate with rxe/NIC peers, losing the
//      integrity check for them).
//   2. BTH: DestQP 0 and 1 (SMI/GSI QPs, which the soft device does not
//      have) are rejected; CNPs are counted and dropped (no DCQCN).
//   3. Multicast (DestQP 0xFFFFFF): only UD opcodes, only on a group
//      socket; a copy to every QP attached to the group whose state, P_Key
//      and Q_Key accept it — one copy per QP, however often it attached.
//      A packet to a group address with any other DestQP is dropped.
//   4. Unicast: the QP must exist; the opcode's transport must be the QP's
//      type; its state must receive (RTR, RTS, SQD, SQE; RESET, INIT, ERR
//      drop); the BTH P_Key must match the QP's partition; UD: the DETH
//      Q_Key must equal the QP's; RC/UC: the source IP must be the peer of
//      the QP's address vector (UDP is easy to spoof; an RC/UC packet
//      carries no source QPN, so the address is what can be checked).
// Every drop bumps a named counter (ingress_counters.h); nothing here can
// crash on a hostile datagram: decode reads no byte outside the datagram.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "verbs/soft/ingress_counters.h"
#include "verbs/soft/mcast_table.h"
#include "verbs/soft/transport.h"
#include "wire/packet.h"
#include "wire/rx_counters.h"

namespace qpgate::verbs::soft {

class SoftQp;

enum class IcrcPolicy : std::uint8_t {
  STRICT,              // "strict": an ICRC that does not match the ID-0 pseudo header is dropped
  COUNT_UNVERIFIABLE,  // "count-unverifiable": accepted, counted as icrc_unverifiable
};
std::string_view icrc_policy_name(IcrcPolicy p);  // "strict", "count-unverifiable"

// P_Key match (IBA 10.9.3): the low 15 bits equal, and not both limited
// members (bit 15 clear); 0x0000 and 0x8000 never match.
constexpr bool pkey_matches(std::uint16_t a, std::uint16_t b) {
  if ((a & 0x7fffu) == 0 || (a & 0x7fffu) != (b & 0x7fffu)) return false;
  return ((a | b) & 0x8000u) != 0;
}

class Ingress {
 public:
  using QpMap = std::unordered_map<std::uint32_t, SoftQp*>;

  // The maps belong to the device; Ingress reads them on every packet.
  Ingress(const QpMap& qps, const McastTable& mcast, IcrcPolicy policy)
      : qps_(qps), mcast_(mcast), policy_(policy) {}

  // One datagram: its UDP payload and what the socket said about it.
  // Returns how many QPs it was delivered to.
  int receive(std::span<const std::uint8_t> roce, const RxMeta& meta);

  void set_policy(IcrcPolicy p) { policy_ = p; }
  IcrcPolicy policy() const { return policy_; }
  const wire::RxCounters& wire_counters() const { return wire_; }
  const IngressCounters& counters() const { return counters_; }

 private:
  // The per-QP checks shared by unicast and multicast; true when accepted.
  bool qp_accepts(const SoftQp& qp, const wire::Packet& pkt, const RxMeta& meta);

  const QpMap& qps_;
  const McastTable& mcast_;
  IcrcPolicy policy_;
  wire::RxCounters wire_;
  IngressCounters counters_;
};

}  // namespace qpgate::verbs::soft
