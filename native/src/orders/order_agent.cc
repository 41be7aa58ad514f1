#include "orders/order_agent.h"

#include <algorithm>

#include "common/clock.h"
#include "orders/order_events.h"

namespace qpgate::orders {
namespace {

// While sessions wait for a group commit or hold messages, come back soon
// even if nothing wakes the engine (the journal's delay is in microseconds).
constexpr std::uint64_t kBusyRecheckNs = 50'000;

}  // namespace

OrderAgent::OrderAgent(std::unique_ptr<FeedPublishers> feeds) : feeds_(std::move(feeds)) {}
OrderAgent::~OrderAgent() = default;

void OrderAgent::on_start(engine::AgentContext& context) { context_ = &context; }

void OrderAgent::on_close() {
  // The engine stops: journals are flushed and sessions closed now.
  const std::uint64_t now = qpgate::monotonic_ns();
  for (auto& [id, s] : services_) s->close(now);
  services_.clear();
  context_ = nullptr;
}

int OrderAgent::do_work(std::uint64_t now_ns) {
  int work = 0;
  bool busy = false;
  for (auto& [id, s] : services_) {
    work += s->do_work(now_ns);
    busy = busy || s->counters().pending_messages.get() != 0 || s->market_data().queued() != 0 || s->session_count() != 0;
  }
  // Completions have no fd here (the soft device is driven by its own agent,
  // ibv CQs are polled): keep the engine from parking long while sessions exist.
  if (busy && context_ != nullptr) context_->arm_deadline(now_ns + kBusyRecheckNs);
  return work;
}

verbs::Result<std::uint32_t> OrderAgent::add_service(verbs::Device& device, ServiceConfig config, verbs::Device* alternate) {
  const std::uint32_t publisher = config.feed_publisher_id;
  auto s = OrderService::open(device, std::move(config), alternate);
  if (!s.ok()) return s.error();
  if (publisher != 0) {
    FeedPublishers* feeds = feeds_.get();
    (*s)->set_market_data_sink([feeds, publisher](std::uint16_t channel, std::span<const std::uint8_t> m, std::uint64_t t) {
      return feeds == nullptr ? PublishOutcome::kFailed : feeds->publish(publisher, channel, m, t);
    });
  }
  const std::uint32_t id = next_id_++;
  services_.emplace_back(id, std::move(*s));
  return id;
}

bool OrderAgent::remove_service(std::uint32_t id) {
  auto it = std::find_if(services_.begin(), services_.end(), [&](const auto& e) { return e.first == id; });
  if (it == services_.end()) return false;
  it->second->close(qpgate::monotonic_ns());
  services_.erase(it);
  return true;
}

bool OrderAgent::deliver_order_events(std::uint32_t id, bool on) {
  OrderService* s = service(id);
  if (s == nullptr || context_ == nullptr || context_->from_engine == nullptr) return false;
  if (!on) {
    s->set_order_event_sink({});
    return true;
  }
  engine::SpscProducer* ring = context_->from_engine;
  s->set_order_event_sink([ring, id](std::span<const OrderEvent> events) {
    const std::size_t bytes = order_event_record::kHeaderBytes + events.size() * order_event_record::kEventBytes;
    std::byte* at = ring->claim(order_event_record::kOrderEvents, static_cast<std::int32_t>(bytes));
    if (at == nullptr) return false;  // the ring is full: JS is behind; try again next cycle
    encode_order_events(id, events, qpgate::monotonic_ns(), reinterpret_cast<std::uint8_t*>(at));
    return true;
  });
  return true;
}

OrderService* OrderAgent::service(std::uint32_t id) const {
  for (const auto& [i, s] : services_) {
    if (i == id) return s.get();
  }
  return nullptr;
}

}  // namespace qpgate::orders
