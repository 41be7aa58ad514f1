#include "verbs/soft/fault.h"

#include <algorithm>

namespace qpgate::verbs::soft {

namespace {
// BTH byte 4 (FECN, BECN, resv6): masked to ones in the ICRC (IBA 17.6.3 /
// RoCEv2 annex), so a flip there would pass unseen.
constexpr std::size_t kIcrcMaskedBthByte = 4;

double clamp01(double p) { return std::clamp(p, 0.0, 1.0); }
}  // namespace

void FaultDice::configure(const FaultPlan& plan, const FaultRates& rates, std::uint64_t seed,
                          FaultDirectionCounters* counters) {
  rates_ = FaultRates{clamp01(rates.drop), clamp01(rates.duplicate), clamp01(rates.reorder), clamp01(rates.delay),
                      clamp01(rates.corrupt)};
  active_ = rates_.any();
  opcodes_ = plan.opcodes;
  local_address_ = plan.local_address;
  limited_ = plan.max_faults != 0;
  budget_ = plan.max_faults;
  state_ = seed;
  counters_ = counters;
}

// splitmix64: small, fast, and the same sequence for the same seed everywhere.
std::uint64_t FaultDice::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool FaultDice::chance(double p) {
  const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;  // [0, 1)
  return u < p;
}

FaultDecision FaultDice::roll(std::span<const std::uint8_t> packet, const wire::IpAddress& local) {
  FaultDecision d;
  if (!active_ || packet.empty()) return d;
  if (local_address_ && !(*local_address_ == local)) return d;
  if (!opcodes_.empty() && std::find(opcodes_.begin(), opcodes_.end(), packet[0]) == opcodes_.end()) return d;
  counters_->seen.inc();
  // Every draw is taken whatever the outcome, so one decision does not
  // shift the ones after it.
  const bool drop = chance(rates_.drop);
  const bool corrupt = chance(rates_.corrupt);
  const std::uint64_t where = next();
  const bool duplicate = chance(rates_.duplicate);
  const bool delay = chance(rates_.delay);
  const bool reorder = chance(rates_.reorder);
  const auto spend = [&] {
    if (!limited_) return true;
    if (budget_ == 0) return false;
    --budget_;
    return true;
  };
  if (drop && spend()) {
    d.drop = true;
    counters_->dropped.inc();
    return d;
  }
  if (corrupt && packet.size() > kIcrcMaskedBthByte + 1 && spend()) {
    std::size_t byte = static_cast<std::size_t>((where >> 3) % (packet.size() - 1));
    if (byte >= kIcrcMaskedBthByte) ++byte;  // skip the masked byte
    d.corrupt_byte = static_cast<std::int32_t>(byte);
    d.corrupt_mask = static_cast<std::uint8_t>(1u << (where & 7u));
    counters_->corrupted.inc();
  }
  if (duplicate && spend()) {
    d.duplicate = true;
    counters_->duplicated.inc();
  }
  if (delay && spend()) {
    d.hold = FaultDecision::Hold::DELAY;
    counters_->delayed.inc();
  } else if (reorder && spend()) {
    d.hold = FaultDecision::Hold::REORDER;
    counters_->reordered.inc();
  }
  return d;
}

}  // namespace qpgate::verbs::soft
