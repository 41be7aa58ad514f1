#include "verbs/soft/recv.h"

#include "verbs/soft/soft_qp.h"

namespace qpgate::verbs::soft {
namespace {

std::uint32_t ipv4_host(const wire::IpAddress& a) {
  return std::uint32_t{a.bytes[0]} << 24 | std::uint32_t{a.bytes[1]} << 16 | std::uint32_t{a.bytes[2]} << 8 |
         a.bytes[3];
}

bool is_multicast_address(const wire::IpAddress& a) {
  return a.family == wire::IpFamily::kIpv4 ? (a.bytes[0] & 0xf0u) == 0xe0u : a.bytes[0] == 0xff;
}

bool state_receives(QpState s) {
  return s == QpState::RTR || s == QpState::RTS || s == QpState::SQD || s == QpState::SQE;
}

}  // namespace

std::string_view icrc_policy_name(IcrcPolicy p) {
  return p == IcrcPolicy::STRICT ? "strict" : "count-unverifiable";
}

bool Ingress::qp_accepts(const SoftQp& qp, const wire::Packet& pkt, const RxMeta& meta) {
  if (pkt.op->transport != transport_of(qp.qp_type())) {
    counters_.bad_opcode_for_qp.inc();
    return false;
  }
  if (!state_receives(qp.state())) {
    counters_.bad_state.inc();
    return false;
  }
  if (!pkey_matches(pkt.bth().pkey(), qp.pkey())) {
    counters_.bad_pkey.inc();
    return false;
  }
  if (qp.qp_type() == QpType::UD) {
    const auto deth = pkt.deth();
    if (!deth || deth->qkey() != qp.qkey()) {
      counters_.bad_qkey.inc();
      return false;
    }
    return true;
  }
  if (!qp.accepts_peer(meta.flow.src)) {
    counters_.wrong_peer.inc();
    return false;
  }
  return true;
}

int Ingress::receive(std::span<const std::uint8_t> roce, const RxMeta& meta) {
  // With the real headers the ICRC is always checked, whoever sent it; a
  // plain socket's pseudo header is right only for ID-0 senders (recv.h).
  const bool headers_seen = meta.ip_udp_len != 0;
  wire::Result<wire::Packet> decoded =
      headers_seen ? wire::decode_verified(roce, meta.ip_udp_seen()) : wire::decode_verified(roce, meta.flow);
  if (!headers_seen && !decoded.ok() && decoded.error() == wire::DecodeError::kIcrcMismatch &&
      policy_ == IcrcPolicy::COUNT_UNVERIFIABLE) {
    decoded = wire::decode(roce);  // structurally sound: accept without an integrity check
    if (decoded.ok()) counters_.icrc_unverifiable.inc();
  }
  wire_.count(decoded);
  if (!decoded.ok()) return 0;
  const wire::Packet& pkt = *decoded;
  if (pkt.kind() == wire::PacketKind::kCnp) {
    counters_.cnp_ignored.inc();
    return 0;
  }
  const std::uint32_t dest_qpn = pkt.bth().dest_qpn();
  const bool to_group = is_multicast_address(meta.flow.dst);

  if (dest_qpn == kMulticastQpn) {
    if (pkt.op->transport != wire::Transport::kUd) {
      counters_.mcast_not_ud.inc();
      return 0;
    }
    if (!to_group || meta.flow.dst.family != wire::IpFamily::kIpv4) {
      counters_.mcast_to_unicast.inc();
      return 0;
    }
    const std::span<const std::uint32_t> members = mcast_.qps_for_ipv4(ipv4_host(meta.flow.dst));
    if (members.empty()) {
      counters_.mcast_no_group.inc();
      return 0;
    }
    int delivered = 0;
    for (const std::uint32_t qpn : members) {
      auto it = qps_.find(qpn);
      if (it == qps_.end()) continue;  // destroyed; its detach is on the way
      SoftQp& qp = *it->second;
      if (!qp_accepts(qp, pkt, meta)) continue;
      qp.on_packet(pkt, meta);
      counters_.delivered.inc();
      ++delivered;
    }
    return delivered;
  }
  if (to_group) {
    counters_.mcast_bad_qpn.inc();
    return 0;
  }
  if (dest_qpn <= 1) {
    counters_.reserved_qpn.inc();
    return 0;
  }
  auto it = qps_.find(dest_qpn);
  if (it == qps_.end()) {
    counters_.unknown_qpn.inc();
    return 0;
  }
  SoftQp& qp = *it->second;
  if (!qp_accepts(qp, pkt, meta)) return 0;
  qp.on_packet(pkt, meta);
  counters_.delivered.inc();
  return 1;
}

}  // namespace qpgate::verbs::soft
