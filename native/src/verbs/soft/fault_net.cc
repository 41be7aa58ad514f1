#include "verbs/soft/fault_net.h"

#include <algorithm>

#include "common/clock.h"

namespace qpgate::verbs::soft {
namespace {
std::int64_t now_ns() { return static_cast<std::int64_t>(monotonic_ns()); }
}  // namespace

void FaultNet::set_plan(const FaultPlan& plan) {
  plan_ = plan;
  tx_dice_.configure(plan, plan.tx, plan.seed, &counters_.tx);
  rx_dice_.configure(plan, plan.rx, plan.seed ^ 0x5bd1e9955bd1e995ULL, &counters_.rx);
}

std::int64_t FaultNet::next_release_ns() const { return std::min(tx_held_.next_due(), rx_held_.next_due()); }

std::int64_t FaultNet::hold_until(std::int64_t from_ns, const FaultDecision& d) const {
  return from_ns + (d.hold == FaultDecision::Hold::REORDER ? plan_.reorder_max_hold_ns : plan_.delay_ns);
}

std::uint32_t FaultNet::hold_after(const FaultDecision& d) const {
  return d.hold == FaultDecision::Hold::REORDER ? std::max<std::uint32_t>(1, plan_.reorder_distance) : 0;
}

Enqueued FaultNet::enqueue(const TxPacket& packet) {
  if (!tx_dice_.active() && tx_held_.empty()) return inner_.enqueue(packet);
  return enqueue_faulty(packet);
}

Enqueued FaultNet::enqueue_corrupted(const TxPacket& packet, const FaultDecision& d) {
  Enqueued e = inner_.enqueue(packet);
  if (e.accepted) d.corrupt(e.bytes);
  return e;
}

Enqueued FaultNet::enqueue_faulty(const TxPacket& packet) {
  // Room first: a packet refused for back-pressure comes back, and must not
  // be rolled for twice.
  if (inner_.queued() >= inner_.capacity()) inner_.flush();
  if (inner_.queued() >= inner_.capacity()) return Enqueued{false, {}};
  const std::int64_t now = now_ns();
  release_tx_held(now);
  const FaultDecision d = tx_dice_.roll(packet.roce, packet.flow.src);
  if (d.drop) return Enqueued{true, {}};
  if (d.hold != FaultDecision::Hold::NONE) {
    tx_held_.hold(packet.roce, TxHeldMeta{packet.flow, packet.traffic_class, packet.hop_limit, d}, hold_until(now, d),
                  hold_after(d));
    if (d.duplicate) enqueue_corrupted(packet, d);  // one copy now, the other later
    return Enqueued{true, {}};
  }
  const Enqueued e = enqueue_corrupted(packet, d);
  if (!e.accepted) return e;  // cannot happen: room was made above
  if (d.duplicate) enqueue_corrupted(packet, d);  // skipped when the queue is full
  tx_held_.passed([this](std::span<std::uint8_t> bytes, const TxHeldMeta& m) { return requeue(bytes, m); });
  return e;
}

// Never flushes (flush releases held packets): without room, it stays held.
bool FaultNet::requeue(std::span<std::uint8_t> bytes, const TxHeldMeta& m) {
  if (inner_.queued() >= inner_.capacity()) return false;
  TxPacket p;
  p.flow = m.flow;
  p.traffic_class = m.traffic_class;
  p.hop_limit = m.hop_limit;
  p.roce = bytes;
  return enqueue_corrupted(p, m.corruption).accepted;
}

void FaultNet::release_tx_held(std::int64_t now) {
  if (tx_held_.empty()) return;
  tx_held_.release_due(now, [this](std::span<std::uint8_t> bytes, const TxHeldMeta& m) { return requeue(bytes, m); });
}

int FaultNet::flush() {
  release_tx_held(now_ns());
  return inner_.flush();
}

void FaultNet::deliver(std::span<std::uint8_t> bytes, const RxMeta& meta, const RxHandler& fn) {
  if (!rx_dice_.active()) {
    fn(bytes, meta);
  } else {
    const FaultDecision d = rx_dice_.roll(bytes, meta.flow.dst);
    if (d.drop) return;
    d.corrupt(bytes);
    if (d.hold != FaultDecision::Hold::NONE) {
      rx_held_.hold(bytes, meta, hold_until(meta.rx_ns, d), hold_after(d));
      if (d.duplicate) fn(bytes, meta);
      return;
    }
    fn(bytes, meta);
    if (d.duplicate) fn(bytes, meta);
  }
  if (!rx_held_.empty()) {
    rx_held_.passed([&fn](std::span<std::uint8_t> held, const RxMeta& m) {
      fn(held, m);
      return true;
    });
  }
}

int FaultNet::receive(const RxHandler& fn) {
  int total = 0;
  if (!rx_held_.empty()) {
    rx_held_.release_due(now_ns(), [&](std::span<std::uint8_t> held, const RxMeta& m) {
      fn(held, m);
      ++total;
      return true;
    });
  }
  return total + inner_.receive([&](std::span<std::uint8_t> bytes, const RxMeta& meta) { deliver(bytes, meta, fn); });
}

}  // namespace qpgate::verbs::soft
