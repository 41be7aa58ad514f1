// An in-memory RoCEv2 "wire" for SoftQp tests: no sockets, a virtual clock.
//
// Each endpoint is an IP address with a PacketTx (port(ip)); QPs are
// attached to the endpoint they send from. A transmitted packet is copied,
// given a delivery time (now + latency), passes the fault injector, and is
// delivered by run(): decoded with wire::decode_verified (the ICRC is
// checked against the pseudo header of its flow, exactly as a plain-socket
// receiver does), routed by destination address and BTH DestQP (multicast
// through the endpoint's McastTable), ingress-checked like the device does
// (the RC/UC peer address, the UD Q_Key) and handed to SoftQp::on_packet.
//
// Time is virtual: run() delivers what is due, runs every QP's do_work and,
// when nothing is left to do at `now`, jumps to the next packet or protocol
// timer. A 67 ms ACK timeout costs nothing.
//
// Faults (checked in this order at transmit):
//   drop_nth(n)                 the n-th packet transmitted on the wire (1-based)
//   drop_if(pred, times)        packets matching pred (the first `times` of them; 0 = all)
//   drop_probability(p, seed)   each packet with probability p (fixed seed: reproducible)
//   duplicate_if(pred)          delivered twice
//   reorder_if(pred)            held back and delivered right after the next packet
//   delay_if(pred, until_ns)    delivered no earlier than until_ns
//   set_tx_capacity(n)          transmit() answers false while n packets are in flight
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "verbs/soft/mcast_table.h"
#include "verbs/soft/soft_qp.h"
#include "verbs/soft/transport.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft::testing {

// What the harness saw of one packet (the transmit log).
struct WireRecord {
  std::uint64_t index = 0;  // 1-based transmit order
  std::int64_t sent_ns = 0;
  wire::UdpFlow flow;
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 0;
  std::vector<std::uint8_t> bytes;  // BTH .. ICRC
  bool dropped = false;

  std::uint8_t opcode() const { return bytes[0]; }
  std::uint32_t psn() const;
  std::uint32_t dest_qpn() const;
  bool ack_req() const;
  // AETH syndrome for opcodes that carry one; -1 otherwise.
  int syndrome() const;
  wire::Packet packet() const;  // decoded view into `bytes`
};

class LoopbackWire {
 public:
  using Pred = std::function<bool(const WireRecord&)>;

  explicit LoopbackWire(std::int64_t latency_ns = 1000);
  ~LoopbackWire();
  LoopbackWire(const LoopbackWire&) = delete;
  LoopbackWire& operator=(const LoopbackWire&) = delete;

  // The PacketTx of an endpoint (created on first use).
  PacketTx& port(const wire::IpAddress& ip);
  // Routes packets to `qp` at `ip`; `mcast` (optional) is that endpoint's group table.
  void attach(SoftQp& qp, const wire::IpAddress& ip, const McastTable* mcast = nullptr);
  void detach(const SoftQp& qp);

  // ---- faults
  void drop_nth(std::uint64_t n) { drop_nth_.push_back(n); }
  void drop_if(Pred p, std::uint64_t times = 0) { drops_.push_back({std::move(p), times}); }
  void drop_probability(double p, std::uint64_t seed) { loss_ = p; rng_.seed(seed); }
  void duplicate_if(Pred p) { dups_.push_back(std::move(p)); }
  void reorder_if(Pred p) { reorders_.push_back(std::move(p)); }
  void delay_if(Pred p, std::int64_t until_ns) { delays_.push_back({std::move(p), until_ns}); }
  void set_tx_capacity(std::size_t n) { tx_capacity_ = n; }
  void clear_faults();

  // ---- the clock
  std::int64_t now() const { return now_; }
  void advance(std::int64_t ns) { now_ += ns; }
  // Delivers, works and jumps ahead until nothing is due within `for_ns` of
  // virtual time; returns the number of packets delivered.
  std::uint64_t run(std::int64_t for_ns = 10'000'000'000);
  // Only what is due now (no time jump).
  std::uint64_t run_now();

  // ---- what happened
  const std::vector<WireRecord>& log() const { return log_; }
  std::vector<const WireRecord*> sent_by(const wire::IpAddress& src) const;
  std::uint64_t transmitted() const { return log_.size(); }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t delivered() const { return delivered_; }
  std::uint64_t icrc_failures() const { return icrc_failures_; }
  std::uint64_t unroutable() const { return unroutable_; }
  std::uint64_t qkey_violations() const { return qkey_violations_; }
  std::uint64_t refused() const { return refused_; }
  std::size_t in_flight() const { return flight_.size(); }

 private:
  class Port;
  struct Endpoint {
    wire::IpAddress ip;
    std::unique_ptr<Port> port;
    std::vector<SoftQp*> qps;
    const McastTable* mcast = nullptr;
  };
  struct InFlight {
    std::size_t record;  // index into log_
  };
  bool on_transmit(const TxPacket& p);
  void deliver(const WireRecord& r);
  void deliver_to(SoftQp& qp, const wire::Packet& pkt, const WireRecord& r);
  Endpoint& endpoint(const wire::IpAddress& ip);
  std::int64_t next_event() const;

  std::int64_t latency_;
  std::int64_t now_ = 1'000'000;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<WireRecord> log_;
  std::multimap<std::pair<std::int64_t, std::uint64_t>, InFlight> flight_;
  std::uint64_t seq_ = 0;
  std::optional<std::size_t> held_;  // a packet being reordered

  std::vector<std::uint64_t> drop_nth_;
  struct CountedPred { Pred p; std::uint64_t times; std::uint64_t hits = 0; };
  std::vector<CountedPred> drops_;
  double loss_ = 0;
  std::mt19937_64 rng_{1};
  std::vector<Pred> dups_;
  std::vector<Pred> reorders_;
  struct DelayPred { Pred p; std::int64_t until; };
  std::vector<DelayPred> delays_;
  std::size_t tx_capacity_ = 0;

  std::uint64_t dropped_ = 0, delivered_ = 0, icrc_failures_ = 0, unroutable_ = 0, qkey_violations_ = 0,
                refused_ = 0;
};

// A MulticastMembership that records joins and leaves.
class FakeMembership final : public MulticastMembership {
 public:
  Status join(const wire::IpAddress& g) override { joined.push_back(g); return {}; }
  Status leave(const wire::IpAddress& g) override { left.push_back(g); return {}; }
  std::vector<wire::IpAddress> joined, left;
};

}  // namespace qpgate::verbs::soft::testing
