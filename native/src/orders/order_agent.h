// The order-entry engine agent (extension "orders"): hosts the order
// services of one engine and runs their duty cycle (order_service.h) on the
// engine thread, right after the command agent and the feed agent.
//
// Every engine made by the addon hosts one: register_extension() (called by
// the addon at load) makes it an extension of the command agent. Find it on
// the engine thread with OrderAgent::of_current_engine(); services are added
// and removed there (Engine::run_on_engine). Tests may drive an agent by
// hand (add_service + do_work) without an engine.
//
// A service configured with a feed publisher id publishes its trades and book
// changes through FeedAgent::of_current_engine()->publisher(id) on this same
// thread; a publisher that is gone (or an engine without a feed agent)
// counts the events as unpublished.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/agent.h"
#include "orders/order_service.h"

namespace qpgate::orders {

class OrderAgent final : public engine::Agent {
 public:
  static constexpr const char* kExtensionName = "orders";
  // Every engine constructed afterwards hosts an OrderAgent. Idempotent.
  static void register_extension();
  // Engine thread: the order agent of the engine running on this thread, if any.
  static OrderAgent* of_current_engine();

  OrderAgent();
  ~OrderAgent() override;

  const char* name() const override { return kExtensionName; }
  void on_start(engine::AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread. Ids are never reused within an agent.
  verbs::Result<std::uint32_t> add_service(verbs::Device& device, ServiceConfig config);
  // Closes (journal flushed, sessions closed) and frees it.
  bool remove_service(std::uint32_t id);
  OrderService* service(std::uint32_t id) const;
  // Starts (or stops) writing service `id`'s durable order events into the
  // fromEngine ring as kOrderEvents records. False if there is no such
  // service or no ring (an agent driven by hand).
  bool deliver_order_events(std::uint32_t id, bool on);
  std::size_t service_count() const { return services_.size(); }

 private:
  engine::AgentContext* context_ = nullptr;
  std::vector<std::pair<std::uint32_t, std::unique_ptr<OrderService>>> services_;
  std::uint32_t next_id_ = 1;
};

}  // namespace qpgate::orders
