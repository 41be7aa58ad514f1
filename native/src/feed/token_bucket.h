// A token bucket (rate per second, burst) in integer nanosecond arithmetic:
// the recovery service's per-session throttle, in messages.
#pragma once

#include <algorithm>
#include <cstdint>

namespace qpgate::feed {

class TokenBucket {
 public:
  TokenBucket(std::uint64_t rate_per_s, std::uint64_t burst, std::uint64_t now_ns)
      : rate_(std::max<std::uint64_t>(rate_per_s, 1)), burst_(std::max<std::uint64_t>(burst, 1)),
        tokens_(burst_ * kScale), last_ns_(now_ns) {}

  // Takes `cost` tokens (capped at the burst, so any request can pass once
  // the bucket is full) and returns 0, or returns how long to wait (ns) and
  // takes nothing.
  std::uint64_t take(std::uint64_t cost, std::uint64_t now_ns) {
    refill(now_ns);
    const std::uint64_t need = std::min(cost, burst_) * kScale;
    if (tokens_ >= need) {
      tokens_ -= need;
      return 0;
    }
    // tokens are scaled by 1e9: one token per 1e9/rate ns.
    return std::max<std::uint64_t>((need - tokens_ + rate_ - 1) / rate_, 1);
  }
  std::uint64_t tokens() const { return tokens_ / kScale; }

 private:
  static constexpr std::uint64_t kScale = 1'000'000'000;  // tokens in units of 1e-9
  void refill(std::uint64_t now_ns) {
    if (now_ns <= last_ns_) return;
    const std::uint64_t elapsed = now_ns - last_ns_;
    last_ns_ = now_ns;
    const std::uint64_t cap = burst_ * kScale;
    // elapsed * rate may overflow for long idle gaps: saturate.
    const std::uint64_t add = elapsed > cap / rate_ ? cap : elapsed * rate_;
    tokens_ = std::min(cap, tokens_ + add);
  }
  std::uint64_t rate_;
  std::uint64_t burst_;
  std::uint64_t tokens_;
  std::uint64_t last_ns_;
};

}  // namespace qpgate::feed
