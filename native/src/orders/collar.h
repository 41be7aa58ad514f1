// Price collars: an order may not be priced through the reference price by
// more than the collar width. The reference is the instrument's last trade,
// or the configured reference price before the first trade. Only the side
// that could trade through is checked, as exchanges do: a buy above the upper
// bound or a sell below the lower bound is rejected; a buy far below the
// market is merely passive.
#pragma once

#include <cstdint>

namespace qpgate::orders {

enum class CollarMode : std::uint8_t { kNone = 0, kTicks = 1, kBps = 2 };

struct CollarConfig {
  CollarMode mode = CollarMode::kNone;
  std::int64_t width = 0;              // ticks, or basis points of the reference
  std::int64_t reference_price = 0;    // used until the first trade; 0 = no collar until then
};

struct CollarBounds {
  bool active = false;
  std::int64_t lower = 0;  // lowest sell price allowed
  std::int64_t upper = 0;  // highest buy price allowed
};

class PriceCollar {
 public:
  PriceCollar(const CollarConfig& config, std::int64_t tick_size) noexcept
      : config_(config), tick_(tick_size), reference_(config.reference_price) {}

  void on_trade(std::int64_t price) noexcept { reference_ = price; }
  std::int64_t reference() const noexcept { return reference_; }

  CollarBounds bounds() const noexcept {
    CollarBounds b;
    if (config_.mode == CollarMode::kNone || reference_ <= 0) return b;
    std::int64_t width = 0;
    if (config_.mode == CollarMode::kTicks) {
      width = config_.width * tick_;
    } else {
      // bps of the reference, rounded down to whole ticks.
      const __int128 w = static_cast<__int128>(reference_) * config_.width / 10000;
      width = static_cast<std::int64_t>(w) / tick_ * tick_;
    }
    b.active = true;
    b.lower = reference_ - width;
    b.upper = reference_ + width;
    return b;
  }

  // True when a `is_buy` order at `price` is inside the collar.
  bool allows(bool is_buy, std::int64_t price) const noexcept {
    const CollarBounds b = bounds();
    if (!b.active) return true;
    return is_buy ? price <= b.upper : price >= b.lower;
  }

 private:
  CollarConfig config_;
  std::int64_t tick_;
  std::int64_t reference_;
};

}  // namespace qpgate::orders
