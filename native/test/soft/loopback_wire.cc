#include "loopback_wire.h"

#include <algorithm>
#include <cassert>

#include "wire/opcode.h"

namespace qpgate::verbs::soft::testing {

std::uint32_t WireRecord::psn() const { return wire::BthView(bytes.data()).psn(); }
std::uint32_t WireRecord::dest_qpn() const { return wire::BthView(bytes.data()).dest_qpn(); }
bool WireRecord::ack_req() const { return wire::BthView(bytes.data()).ack_req(); }
int WireRecord::syndrome() const {
  auto p = packet();
  auto a = p.aeth();
  return a ? a->syndrome() : -1;
}
wire::Packet WireRecord::packet() const {
  auto r = wire::decode(bytes);
  assert(r.ok());
  return *r;
}

class LoopbackWire::Port final : public PacketTx {
 public:
  explicit Port(LoopbackWire& w) : w_(w) {}
  bool transmit(const TxPacket& p) override { return w_.on_transmit(p); }

 private:
  LoopbackWire& w_;
};

LoopbackWire::LoopbackWire(std::int64_t latency_ns) : latency_(latency_ns) {}
LoopbackWire::~LoopbackWire() = default;

LoopbackWire::Endpoint& LoopbackWire::endpoint(const wire::IpAddress& ip) {
  for (auto& e : endpoints_) {
    if (e->ip == ip) return *e;
  }
  auto e = std::make_unique<Endpoint>();
  e->ip = ip;
  e->port = std::make_unique<Port>(*this);
  endpoints_.push_back(std::move(e));
  return *endpoints_.back();
}

PacketTx& LoopbackWire::port(const wire::IpAddress& ip) { return *endpoint(ip).port; }

void LoopbackWire::attach(SoftQp& qp, const wire::IpAddress& ip, const McastTable* mcast) {
  Endpoint& e = endpoint(ip);
  e.qps.push_back(&qp);
  if (mcast != nullptr) e.mcast = mcast;
}

void LoopbackWire::detach(const SoftQp& qp) {
  for (auto& e : endpoints_) {
    e->qps.erase(std::remove(e->qps.begin(), e->qps.end(), &qp), e->qps.end());
  }
}

void LoopbackWire::clear_faults() {
  drop_nth_.clear();
  drops_.clear();
  loss_ = 0;
  dups_.clear();
  reorders_.clear();
  delays_.clear();
  tx_capacity_ = 0;
}

std::vector<const WireRecord*> LoopbackWire::sent_by(const wire::IpAddress& src) const {
  std::vector<const WireRecord*> v;
  for (const auto& r : log_) {
    if (r.flow.src == src) v.push_back(&r);
  }
  return v;
}

bool LoopbackWire::on_transmit(const TxPacket& p) {
  if (tx_capacity_ != 0 && flight_.size() >= tx_capacity_) {
    ++refused_;
    return false;
  }
  WireRecord r;
  r.index = log_.size() + 1;
  r.sent_ns = now_;
  r.flow = p.flow;
  r.traffic_class = p.traffic_class;
  r.hop_limit = p.hop_limit;
  r.bytes.assign(p.roce.begin(), p.roce.end());
  bool drop = std::find(drop_nth_.begin(), drop_nth_.end(), r.index) != drop_nth_.end();
  for (auto& d : drops_) {
    if (!drop && (d.times == 0 || d.hits < d.times) && d.p(r)) {
      ++d.hits;
      drop = true;
    }
  }
  if (!drop && loss_ > 0) drop = std::uniform_real_distribution<double>(0, 1)(rng_) < loss_;
  r.dropped = drop;
  log_.push_back(std::move(r));
  const std::size_t idx = log_.size() - 1;
  const WireRecord& rec = log_[idx];
  if (drop) {
    ++dropped_;
    return true;
  }
  std::int64_t at = now_ + latency_;
  for (const auto& d : delays_) {
    if (d.p(rec)) at = std::max(at, d.until);
  }
  bool hold = false;
  for (const auto& pr : reorders_) hold = hold || pr(rec);
  if (hold && !held_) {
    held_ = idx;
    return true;
  }
  flight_.emplace(std::make_pair(at, seq_++), InFlight{idx});
  for (const auto& pr : dups_) {
    if (pr(rec)) {
      flight_.emplace(std::make_pair(at, seq_++), InFlight{idx});
      break;
    }
  }
  if (held_) {  // the held packet goes right after this one
    flight_.emplace(std::make_pair(at, seq_++), InFlight{*held_});
    held_.reset();
  }
  return true;
}

void LoopbackWire::deliver_to(SoftQp& qp, const wire::Packet& pkt, const WireRecord& r) {
  // The ingress checks the device does before a QP sees a packet.
  if (qp.qp_type() == QpType::UD) {
    auto deth = pkt.deth();
    if (!deth || deth->qkey() != qp.qkey()) {
      ++qkey_violations_;
      return;
    }
  } else {
    auto peer = qp.peer_address();
    if (!peer || !(*peer == r.flow.src)) {
      ++unroutable_;
      return;
    }
  }
  RxMeta meta;
  meta.flow = r.flow;
  meta.traffic_class = r.traffic_class;
  meta.hop_limit = r.hop_limit;
  meta.rx_ns = now_;
  ++delivered_;
  qp.on_packet(pkt, meta);
}

void LoopbackWire::deliver(const WireRecord& r) {
  auto res = wire::decode_verified(r.bytes, r.flow);
  if (!res.ok()) {
    ++icrc_failures_;
    return;
  }
  const wire::Packet pkt = *res;
  const std::uint32_t dqpn = pkt.bth().dest_qpn();
  Endpoint* dst = nullptr;
  for (auto& e : endpoints_) {
    if (e->ip == r.flow.dst) dst = e.get();
  }
  if (dqpn == kMulticastQpn) {
    bool any = false;
    for (auto& e : endpoints_) {
      if (e->mcast == nullptr || r.flow.dst.family != wire::IpFamily::kIpv4) continue;
      const std::uint32_t g = (std::uint32_t{r.flow.dst.bytes[0]} << 24) | (std::uint32_t{r.flow.dst.bytes[1]} << 16) |
                              (std::uint32_t{r.flow.dst.bytes[2]} << 8) | r.flow.dst.bytes[3];
      for (std::uint32_t qpn : e->mcast->qps_for_ipv4(g)) {
        for (SoftQp* qp : e->qps) {
          if (qp->qp_num() == qpn) {
            deliver_to(*qp, pkt, r);
            any = true;
          }
        }
      }
    }
    if (!any) ++unroutable_;
    return;
  }
  if (dst == nullptr) {
    ++unroutable_;
    return;
  }
  for (SoftQp* qp : dst->qps) {
    if (qp->qp_num() == dqpn) {
      deliver_to(*qp, pkt, r);
      return;
    }
  }
  ++unroutable_;
}

std::int64_t LoopbackWire::next_event() const {
  std::int64_t t = kNoDeadline;
  if (!flight_.empty()) t = flight_.begin()->first.first;
  for (const auto& e : endpoints_) {
    for (const SoftQp* qp : e->qps) t = std::min(t, qp->next_deadline_ns());
  }
  return t;
}

std::uint64_t LoopbackWire::run_now() {
  std::uint64_t n = 0;
  for (int guard = 0; guard < 10'000'000; ++guard) {
    bool progress = false;
    while (!flight_.empty() && flight_.begin()->first.first <= now_) {
      const std::size_t idx = flight_.begin()->second.record;
      flight_.erase(flight_.begin());
      deliver(log_[idx]);
      ++n;
      progress = true;
    }
    for (auto& e : endpoints_) {
      for (SoftQp* qp : e->qps) {
        if (qp->do_work(now_) > 0) progress = true;
      }
    }
    if (!progress) break;
  }
  return n;
}

std::uint64_t LoopbackWire::run(std::int64_t for_ns) {
  const std::int64_t end = now_ + for_ns;
  std::uint64_t n = 0;
  while (true) {
    n += run_now();
    const std::int64_t t = next_event();
    if (t == kNoDeadline || t > end) break;
    now_ = std::max(now_, t);
  }
  return n;
}

}  // namespace qpgate::verbs::soft::testing
