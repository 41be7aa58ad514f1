// The order-entry engine agent: hosts the order services of one engine and
// runs their duty cycle (order_service.h) on the engine thread, right after
// the feed agent (gateway/engine_agents.h builds and orders them). Services
// are added and removed on the engine thread (Engine::run_on_engine). Tests
// may drive an agent by hand (add_service + do_work) without an engine.
//
// A service configured with a feed publisher id publishes its trades and book
// changes through the FeedPublishers the agent was given, on this same
// thread; a publisher that is gone (or an agent given none) counts the events
// as unpublished.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/agent.h"
#include "orders/order_service.h"

namespace qpgate::orders {

class OrderAgent final : public engine::Agent {
 public:
  // `feeds`: where services with a feed publisher id publish; nullptr: nowhere.
  explicit OrderAgent(std::unique_ptr<FeedPublishers> feeds = nullptr);
  ~OrderAgent() override;
  OrderAgent(const OrderAgent&) = delete;
  OrderAgent& operator=(const OrderAgent&) = delete;

  const char* name() const override { return "orders"; }
  void on_start(engine::AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread: whether a service may name this feed publisher.
  bool has_feed_publisher(std::uint32_t publisher_id) const { return feeds_ != nullptr && feeds_->has_publisher(publisher_id); }
  // Engine thread. Ids are never reused within an agent.
  // `alternate`: a second device its sessions may be opened on (OrderService::open).
  verbs::Result<std::uint32_t> add_service(verbs::Device& device, ServiceConfig config, verbs::Device* alternate = nullptr);
  // Closes (journal flushed, sessions closed) and frees it.
  bool remove_service(std::uint32_t id);
  OrderService* service(std::uint32_t id) const;
  // Starts (or stops) writing service `id`'s durable order events into the
  // fromEngine ring as kOrderEvents records. False if there is no such
  // service or no ring (an agent driven by hand).
  bool deliver_order_events(std::uint32_t id, bool on);
  std::size_t service_count() const { return services_.size(); }

 private:
  std::unique_ptr<FeedPublishers> feeds_;
  engine::AgentContext* context_ = nullptr;
  std::vector<std::pair<std::uint32_t, std::unique_ptr<OrderService>>> services_;
  std::uint32_t next_id_ = 1;
};

}  // namespace qpgate::orders
