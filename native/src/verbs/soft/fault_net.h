// The fault injector as a decorator of the soft device's packet I/O, FOR
// TESTS (fault.h says what it does to packets). It wraps the device's
// PacketIo (UdpNet) and is installed by SoftDevice::inject_faults only: a
// device no test asked for faults has none of this on its path.
//
//   tx  enqueue(): after the QP sealed the packet, before the inner queue;
//       a corruption is applied to the queued bytes, after any ICRC re-seal
//       for source port 4791, so the receiver's ICRC check must catch it.
//   rx  receive(): after the inner read, before the ingress (recv.h).
//
// Held (delayed/reordered) packets are released by flush() and receive(),
// at the latest by next_release_ns(), which the device's duty cycle adds to
// its deadline so a parked engine wakes for them. A new plan replaces the
// old one (a default FaultPlan turns faults off); packets already held are
// still released on time.
#pragma once

#include "verbs/soft/fault.h"
#include "verbs/soft/packet_io.h"

namespace qpgate::verbs::soft {

class FaultNet final : public PacketIo {
 public:
  explicit FaultNet(PacketIo& inner) : inner_(inner) {}
  FaultNet(const FaultNet&) = delete;
  FaultNet& operator=(const FaultNet&) = delete;

  void set_plan(const FaultPlan& plan);
  const FaultCounters& counters() const { return counters_; }

  Enqueued enqueue(const TxPacket& packet) override;
  int flush() override;
  std::size_t queued() const override { return inner_.queued(); }
  std::size_t capacity() const override { return inner_.capacity(); }
  int receive(const RxHandler& fn) override;
  std::int64_t next_release_ns() const override;

 private:
  // What a held transmit packet needs to be queued later.
  struct TxHeldMeta {
    wire::UdpFlow flow;
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 64;
    FaultDecision corruption;  // applied in the queue, after any re-seal
  };
  Enqueued enqueue_faulty(const TxPacket& packet);
  Enqueued enqueue_corrupted(const TxPacket& packet, const FaultDecision& d);
  bool requeue(std::span<std::uint8_t> bytes, const TxHeldMeta& meta);
  void release_tx_held(std::int64_t now_ns);
  void deliver(std::span<std::uint8_t> bytes, const RxMeta& meta, const RxHandler& fn);
  std::int64_t hold_until(std::int64_t from_ns, const FaultDecision& d) const;
  std::uint32_t hold_after(const FaultDecision& d) const;

  PacketIo& inner_;
  FaultPlan plan_;
  FaultCounters counters_;
  FaultDice tx_dice_;
  FaultDice rx_dice_;
  FaultHold<TxHeldMeta> tx_held_;
  FaultHold<RxMeta> rx_held_;
};

}  // namespace qpgate::verbs::soft
