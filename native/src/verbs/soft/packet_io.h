// The soft device's packet I/O (rxe_net.c's role, as the device sees it):
// a transmit queue flushed once per duty cycle and a batched receive. UdpNet
// (net.h) is the one over sockets; FaultNet (fault_net.h, tests only) wraps
// another PacketIo to drop, corrupt, duplicate, delay and reorder packets,
// and is installed only when a test asks for faults, so the production path
// has no fault code on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "verbs/soft/transport.h"

namespace qpgate::verbs::soft {

// What enqueue() did with a packet.
struct Enqueued {
  bool accepted = false;  // false: the queue is full (back-pressure, as transmit)
  // The queued bytes exactly as they will leave (after any ICRC re-seal),
  // valid until the next flush; empty when the packet was accepted but
  // dropped for good (counted by the implementation).
  std::span<std::uint8_t> bytes;
};

class PacketIo : public PacketTx {
 public:
  // The received bytes are the receive buffer itself, valid during the call.
  using RxHandler = std::function<void(std::span<std::uint8_t>, const RxMeta&)>;

  // Copies the packet into the transmit queue (flushing first when it is
  // full and the kernel takes it).
  virtual Enqueued enqueue(const TxPacket& packet) = 0;
  bool transmit(const TxPacket& packet) final { return enqueue(packet).accepted; }
  // Sends what is queued; returns how many datagrams left.
  virtual int flush() = 0;
  virtual std::size_t queued() const = 0;
  virtual std::size_t capacity() const = 0;
  // Reads a batch and calls fn per packet; returns how many were delivered.
  virtual int receive(const RxHandler& fn) = 0;
  // When held packets are due (0: now), or INT64_MAX when none is held.
  virtual std::int64_t next_release_ns() const { return INT64_MAX; }
};

}  // namespace qpgate::verbs::soft
