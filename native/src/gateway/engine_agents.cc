#include "gateway/engine_agents.h"

#include <memory>

#include "engine/command_agent.h"

namespace qpgate::gateway {
namespace {

// Each client of the engine names its own record types; here, where they
// meet, they must be distinct and routable by the command agent's table.
constexpr bool distinct_and_routable() {
  for (std::size_t i = 0; i < std::size(kRecordTypes); ++i) {
    const std::int32_t t = kRecordTypes[i].type;
    if (t <= 0 || t >= engine::record_type::kMaxRoutedType) return false;
    for (std::size_t j = i + 1; j < std::size(kRecordTypes); ++j) {
      if (t == kRecordTypes[j].type) return false;
    }
  }
  return true;
}
static_assert(distinct_and_routable(), "engine record types collide or fall outside the routed range");

// Order entry publishes on the feed agent's publishers.
class FeedAgentPublishers final : public orders::FeedPublishers {
 public:
  explicit FeedAgentPublishers(feed::FeedAgent& feed) : feed_(feed) {}
  bool has_publisher(std::uint32_t id) const override { return feed_.publisher(id) != nullptr; }
  orders::PublishOutcome publish(std::uint32_t id, std::uint16_t channel, std::span<const std::uint8_t> message,
                                 std::uint64_t enqueue_ns) override {
    feed::Publisher* p = feed_.publisher(id);
    if (p == nullptr) return orders::PublishOutcome::kFailed;
    switch (p->publish(channel, message, 1, enqueue_ns)) {
      case feed::PublishStatus::kOk: return orders::PublishOutcome::kPublished;
      case feed::PublishStatus::kRetry: return orders::PublishOutcome::kRetry;
      default: return orders::PublishOutcome::kFailed;  // unknown channel, malformed, too large: counted by both sides
    }
  }

 private:
  feed::FeedAgent& feed_;
};

}  // namespace

EngineAgents add_engine_agents(engine::Engine& engine) {
  EngineAgents a;
  a.commands = &engine.commands();
  a.feed = engine.add_agent(std::make_unique<feed::FeedAgent>(a.commands));
  a.orders = engine.add_agent(std::make_unique<orders::OrderAgent>(std::make_unique<FeedAgentPublishers>(*a.feed)));
  a.soft_devices = engine.add_agent(std::make_unique<engine::SoftDeviceAgent>());
  engine.add_agent(std::make_unique<feed::FeedDeliveryAgent>(*a.feed));
  a.device_events = engine.add_agent(std::make_unique<engine::DeviceEventsAgent>());
  return a;
}

}  // namespace qpgate::gateway
