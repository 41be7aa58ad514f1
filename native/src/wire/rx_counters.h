// Named receive counters: one per DecodeError, plus CNPs and accepted
// packets. The soft backend's ingress bumps them and /metrics exports them
// under these names, so a drop reason has one name everywhere (style.md:
// "every unusual branch bumps a named counter", like rxe_hw_counters.c).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "wire/errors.h"
#include "wire/packet.h"

namespace qpgate::wire {

// Single writer (the engine thread that owns the socket), any number of
// readers (/metrics): a relaxed load+store is enough and avoids a locked RMW
// per packet.
class RxCounter {
 public:
  void inc() { v_.store(v_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

struct RxCounters {
  RxCounter accepted;  // decoded (and ICRC-checked where the path can) IB packets
  RxCounter cnp;       // congestion notification packets
  std::array<RxCounter, kDecodeErrorCount> rejected;

  void count(DecodeError e) { rejected[static_cast<std::size_t>(e)].inc(); }
  void count(const Result<Packet>& r) {
    if (!r.ok()) {
      count(r.error());
    } else if (r->kind() == PacketKind::kCnp) {
      cnp.inc();
    } else {
      accepted.inc();
    }
  }
  std::uint64_t rejected_count(DecodeError e) const {
    return rejected[static_cast<std::size_t>(e)].get();
  }

  // Calls fn(name, value) for every counter: "accepted", "cnp", then one per
  // DecodeError under decode_error_name(), in enum order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    fn(std::string_view("accepted"), accepted.get());
    fn(std::string_view("cnp"), cnp.get());
    for (std::size_t i = 0; i < kDecodeErrorCount; ++i) {
      fn(decode_error_name(static_cast<DecodeError>(i)), rejected[i].get());
    }
  }
};

}  // namespace qpgate::wire
