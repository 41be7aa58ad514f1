// The feed's integer settings as values (feed_config_limits.def): each a
// FeedLimit named as declared, so validate(), the addon's conversion and the
// config structs' defaults read one set of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "feed/feed_config_limits.def"

namespace qpgate::feed {

struct FeedLimit {
  std::string_view js;  // the config key, as the refusal names it
  std::uint64_t minimum;
  std::uint64_t maximum;
  std::uint64_t fallback;  // the default

  constexpr bool holds(std::uint64_t v) const noexcept { return v >= minimum && v <= maximum; }
  // "sendSlots must be 8..16384, got 4".
  std::string refusal(std::uint64_t v) const {
    return std::string(js) + " must be " + std::to_string(minimum) + ".." + std::to_string(maximum) + ", got " + std::to_string(v);
  }
};

namespace limits {
#define QPGATE_FEED_LIMIT(js, name, lo, hi, def, help) inline constexpr FeedLimit name{#js, lo, hi, def};
QPGATE_FEED_PUBLISHER_LIMITS(QPGATE_FEED_LIMIT)
QPGATE_FEED_CHANNEL_LIMITS(QPGATE_FEED_LIMIT)
QPGATE_FEED_SUBSCRIBER_LIMITS(QPGATE_FEED_LIMIT)
#undef QPGATE_FEED_LIMIT
}  // namespace limits

// The addon reads each as a 32-bit integer; the default is within its bounds.
#define QPGATE_FEED_LIMIT_HOLDS(js, name, lo, hi, def, help) \
  static_assert((hi) <= 0xffffffffull && (lo) <= (def) && (def) <= (hi), #js);
QPGATE_FEED_PUBLISHER_LIMITS(QPGATE_FEED_LIMIT_HOLDS)
QPGATE_FEED_CHANNEL_LIMITS(QPGATE_FEED_LIMIT_HOLDS)
QPGATE_FEED_SUBSCRIBER_LIMITS(QPGATE_FEED_LIMIT_HOLDS)
#undef QPGATE_FEED_LIMIT_HOLDS

}  // namespace qpgate::feed
