// Per-session order-rate throttle: a token bucket refilled at
// `orders_per_second`, holding at most `burst` tokens, full at start. Integer
// arithmetic in nano-tokens, so no drift and no floating point.
#pragma once

#include <algorithm>
#include <cstdint>

namespace qpgate::orders {

struct ThrottleConfig {
  std::uint32_t orders_per_second = 1000;  // 0 = unlimited
  std::uint32_t burst = 100;
};

class TokenBucket {
 public:
  static constexpr std::uint64_t kScale = 1'000'000'000;  // nano-tokens per token

  explicit TokenBucket(const ThrottleConfig& config = {}) noexcept
      : rate_(config.orders_per_second),
        capacity_(std::uint64_t{std::max<std::uint32_t>(config.burst, 1)} * kScale),
        tokens_(capacity_) {}

  // Takes one token at `now_ns` (CLOCK_MONOTONIC); false = throttled.
  bool try_take(std::uint64_t now_ns) noexcept {
    if (rate_ == 0) return true;
    refill(now_ns);
    if (tokens_ < kScale) return false;
    tokens_ -= kScale;
    return true;
  }

  std::uint64_t tokens_now(std::uint64_t now_ns) noexcept {
    if (rate_ != 0) refill(now_ns);
    return tokens_ / kScale;
  }

 private:
  void refill(std::uint64_t now_ns) noexcept {
    if (!started_) {
      started_ = true;
      last_ns_ = now_ns;
      return;
    }
    if (now_ns <= last_ns_) return;
    const std::uint64_t elapsed = now_ns - last_ns_;
    last_ns_ = now_ns;
    // elapsed ns * rate tokens/s = elapsed * rate nano-tokens; beyond the time
    // to fill from empty the bucket is full (and the product could overflow).
    const std::uint64_t fill_ns = capacity_ / rate_ + 1;
    tokens_ = elapsed >= fill_ns ? capacity_ : std::min(capacity_, tokens_ + elapsed * rate_);
  }

  std::uint64_t rate_;
  std::uint64_t capacity_;
  std::uint64_t tokens_;
  std::uint64_t last_ns_ = 0;
  bool started_ = false;
};

}  // namespace qpgate::orders
