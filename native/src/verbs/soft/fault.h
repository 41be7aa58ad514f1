// The soft device's fault injector, FOR TESTS: drops, duplicates, reorders,
// delays and corrupts RoCEv2 packets between the QPs and the sockets
// (net.h), so the transport's recovery (retransmission, go-back-N,
// duplicate detection, ICRC checking) is exercised over real UDP.
//
//   tx  packets the device sends: after the QP sealed the packet, as it
//       enters the sendmmsg queue (a corruption after any re-seal for
//       source port 4791).
//   rx  packets the device receives: after recvmmsg, before the ingress
//       (recv.h) decodes and checks them.
// FaultNet (fault_net.h) applies them, wrapping the device's packet I/O.
//
// Off by default, and not reachable from any configuration: no config key
// or openDevice option turns it on. The only ways in are
// SoftDevice::inject_faults(FaultPlan) in C++ and, from JS, the test-only
// module src/native/testing/faults.ts (the addon's verbs.__testing_setFaults).
//
// Per packet that the plan's filter selects, in this order, with one draw
// of a seeded PRNG (splitmix64) each, so a seed replays the same decisions
// for the same packet sequence:
//   drop       the packet is gone
//   corrupt    one bit of one byte flips (never BTH byte 4, the reserved
//              byte the ICRC masks; anything else, the ICRC itself
//              included, is covered by the ICRC, so the receiver's ICRC
//              check must catch it)
//   duplicate  the packet goes twice
//   delay      the packet is held for delay_ns, then goes
//   reorder    the packet is held until reorder_distance later packets have
//              gone (or reorder_max_hold_ns passed, when traffic stops)
// Every injected fault is counted (FaultCounters). A held packet is
// released by the device's duty cycle, whose deadline includes the
// earliest release, so a parked engine wakes for it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "verbs/soft/ingress_counters.h"
#include "wire/ip_udp.h"

namespace qpgate::verbs::soft {

// Probabilities per packet, 0..1 (a value outside is clamped).
struct FaultRates {
  double drop = 0;
  double duplicate = 0;
  double reorder = 0;
  double delay = 0;
  double corrupt = 0;
  bool any() const { return drop > 0 || duplicate > 0 || reorder > 0 || delay > 0 || corrupt > 0; }
};

struct FaultPlan {
  static constexpr std::int64_t kDefaultDelayNs = 1'000'000;
  static constexpr std::uint32_t kDefaultReorderDistance = 2;
  static constexpr std::int64_t kDefaultReorderMaxHoldNs = 1'000'000;

  std::uint64_t seed = 1;
  FaultRates tx;  // packets this device sends
  FaultRates rx;  // packets this device receives
  std::int64_t delay_ns = kDefaultDelayNs;
  std::uint32_t reorder_distance = kDefaultReorderDistance;
  std::int64_t reorder_max_hold_ns = kDefaultReorderMaxHoldNs;
  // Only packets whose BTH opcode is listed (wire::Opcode values); empty:
  // every packet.
  std::vector<std::uint8_t> opcodes;
  // At most this many faults per direction, then packets pass (0: no limit).
  // With rate 1 and an opcode filter, "drop the first ATOMIC ACKNOWLEDGE".
  std::uint64_t max_faults = 0;
  // Only packets that leave from (tx) or arrive at (rx) this local address:
  // one path of a device with an alternate address (path_nets.h), as if its
  // link were down when the rates are 1. Unset: every packet.
  std::optional<wire::IpAddress> local_address;

  bool enabled() const { return tx.any() || rx.any(); }
};

struct FaultDirectionCounters {
  Counter seen;        // packets the filter selected (faulted or not)
  Counter dropped;
  Counter duplicated;
  Counter reordered;
  Counter delayed;
  Counter corrupted;
};

// Single writer (the device's thread), any reader.
struct FaultCounters {
  FaultDirectionCounters tx;
  FaultDirectionCounters rx;

  template <class Fn>
  void for_each(Fn&& fn) const {
    const auto dir = [&](const char* const names[6], const FaultDirectionCounters& c) {
      fn(std::string_view(names[0]), c.seen.get());
      fn(std::string_view(names[1]), c.dropped.get());
      fn(std::string_view(names[2]), c.duplicated.get());
      fn(std::string_view(names[3]), c.reordered.get());
      fn(std::string_view(names[4]), c.delayed.get());
      fn(std::string_view(names[5]), c.corrupted.get());
    };
    static constexpr const char* kTx[6] = {"tx_seen",      "tx_dropped", "tx_duplicated",
                                           "tx_reordered", "tx_delayed", "tx_corrupted"};
    static constexpr const char* kRx[6] = {"rx_seen",      "rx_dropped", "rx_duplicated",
                                           "rx_reordered", "rx_delayed", "rx_corrupted"};
    dir(kTx, tx);
    dir(kRx, rx);
  }
};

// What happens to one packet.
struct FaultDecision {
  enum class Hold : std::uint8_t { NONE, DELAY, REORDER };
  bool drop = false;
  bool duplicate = false;
  Hold hold = Hold::NONE;
  std::int32_t corrupt_byte = -1;  // -1: none
  std::uint8_t corrupt_mask = 0;

  // Flips the chosen bit of `bytes` (a no-op without corruption).
  void corrupt(std::span<std::uint8_t> bytes) const {
    if (corrupt_byte >= 0 && static_cast<std::size_t>(corrupt_byte) < bytes.size()) {
      bytes[static_cast<std::size_t>(corrupt_byte)] ^= corrupt_mask;
    }
  }
};

// The decisions of one direction: the plan's rates, filter, budget and PRNG.
class FaultDice {
 public:
  void configure(const FaultPlan& plan, const FaultRates& rates, std::uint64_t seed, FaultDirectionCounters* counters);
  bool active() const { return active_; }
  // Rolls for one packet sent from or received at `local` (counts it and
  // the faults chosen).
  FaultDecision roll(std::span<const std::uint8_t> packet, const wire::IpAddress& local);

 private:
  std::uint64_t next();
  bool chance(double p);

  bool active_ = false;
  FaultRates rates_;
  std::vector<std::uint8_t> opcodes_;
  std::optional<wire::IpAddress> local_address_;
  std::uint64_t budget_ = 0;  // faults left; unlimited when max_faults was 0
  bool limited_ = false;
  std::uint64_t state_ = 0;
  FaultDirectionCounters* counters_ = nullptr;
};

// Packets held back by delay or reorder, with what is needed to send or
// deliver them later.
template <class Meta>
class FaultHold {
 public:
  bool empty() const { return held_.empty(); }
  std::size_t size() const { return held_.size(); }

  // `after_packets` 0: released only at `due_ns`.
  void hold(std::span<const std::uint8_t> bytes, const Meta& meta, std::int64_t due_ns, std::uint32_t after_packets) {
    held_.push_back(Held{std::vector<std::uint8_t>(bytes.begin(), bytes.end()), meta, due_ns, after_packets});
  }

  // A packet went past: reordered packets waiting for it count down, and
  // those that reach 0 are emitted. emit(bytes, meta) returns false to keep
  // a packet held (no room); it is retried next time.
  template <class Emit>
  void passed(Emit&& emit) {
    for (Held& h : held_) {
      if (h.after > 0 && --h.after == 0) h.ready = true;
    }
    release(std::forward<Emit>(emit), [](const Held& h) { return h.ready; });
  }

  // Emits every packet whose time has come.
  template <class Emit>
  void release_due(std::int64_t now_ns, Emit&& emit) {
    release(std::forward<Emit>(emit), [now_ns](const Held& h) { return h.ready || h.due_ns <= now_ns; });
  }

  // The earliest release time (0: one is ready now), or INT64_MAX.
  std::int64_t next_due() const {
    std::int64_t t = INT64_MAX;
    for (const Held& h : held_) t = h.ready ? 0 : (h.due_ns < t ? h.due_ns : t);
    return t;
  }

 private:
  struct Held {
    std::vector<std::uint8_t> bytes;
    Meta meta;
    std::int64_t due_ns;
    std::uint32_t after;
    bool ready = false;
  };

  template <class Emit, class Pred>
  void release(Emit&& emit, Pred&& due) {
    // In hold order; taken out before emitting (emit may hold new packets).
    for (std::size_t i = 0; i < held_.size();) {
      if (!due(held_[i])) {
        ++i;
        continue;
      }
      Held h = std::move(held_[i]);
      held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
      if (!emit(std::span<std::uint8_t>(h.bytes), h.meta)) {
        h.ready = true;
        held_.insert(held_.begin() + static_cast<std::ptrdiff_t>(i), std::move(h));
        return;
      }
    }
  }

  std::vector<Held> held_;
};

}  // namespace qpgate::verbs::soft
