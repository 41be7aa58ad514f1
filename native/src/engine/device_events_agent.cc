#include "engine/device_events_agent.h"

#include <sys/epoll.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "engine/record_types.h"

namespace qpgate::engine {

void DeviceEventsAgent::on_start(AgentContext& context) {
  context_ = &context;
  for (const Attached& a : devices_) watch(*a.device);
}

int DeviceEventsAgent::do_work(std::uint64_t /*now_ns*/) {
  int work = 0;
  for (Attached& a : devices_) work += drain(a) + take_completions(a);
  return work;
}

void DeviceEventsAgent::on_close() {
  if (context_ != nullptr) {
    for (const Attached& a : devices_) unwatch(*a.device);
  }
  context_ = nullptr;
}

verbs::Status DeviceEventsAgent::attach(verbs::Device& device) {
  if (find(device) != nullptr) return verbs::Error{EBUSY, "device " + std::string(device.name()) + " is attached already"};
  if (device.async_fd() < 0) {
    return verbs::Error{EINVAL, "device " + std::string(device.name()) + " has no async fd (a soft device raises its events itself)"};
  }
  devices_.push_back(Attached{&device, {}, std::make_shared<Counts>()});
  if (context_ != nullptr) watch(device);
  return {};
}

void DeviceEventsAgent::detach(const verbs::Device& device) {
  auto it = std::find_if(devices_.begin(), devices_.end(), [&](const Attached& a) { return a.device == &device; });
  if (it == devices_.end()) return;
  if (context_ != nullptr) unwatch(device);
  devices_.erase(it);
}

std::optional<verbs::AsyncEvent> DeviceEventsAgent::next_event(const verbs::Device& device) {
  Attached* a = find(device);
  if (a == nullptr) return std::nullopt;
  drain(*a);  // what is pending now, even when the engine has not cycled since
  if (a->kept.empty()) return std::nullopt;
  verbs::AsyncEvent e = a->kept.front();
  a->kept.pop_front();
  return e;
}

std::shared_ptr<const DeviceEventsAgent::Counts> DeviceEventsAgent::counts(const verbs::Device& device) const {
  const Attached* a = find(device);
  return a == nullptr ? nullptr : a->counts;
}

DeviceEventsAgent::Attached* DeviceEventsAgent::find(const verbs::Device& device) {
  for (Attached& a : devices_) {
    if (a.device == &device) return &a;
  }
  return nullptr;
}

const DeviceEventsAgent::Attached* DeviceEventsAgent::find(const verbs::Device& device) const {
  return const_cast<DeviceEventsAgent*>(this)->find(device);
}

void DeviceEventsAgent::watch(const verbs::Device& device) {
  context_->add_fd(device.async_fd(), EPOLLIN);
  if (device.completion_fd() >= 0) context_->add_fd(device.completion_fd(), EPOLLIN);
}

void DeviceEventsAgent::unwatch(const verbs::Device& device) {
  context_->remove_fd(device.async_fd());
  if (device.completion_fd() >= 0) context_->remove_fd(device.completion_fd());
}

// The completion channel is level-triggered in the parker too: every event
// is taken (and its CQ re-armed) here.
int DeviceEventsAgent::take_completions(Attached& a) {
  verbs::Result<std::size_t> n = a.device->take_completion_events();
  if (!n.ok()) {
    a.counts->completion_errors.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (*n != 0) a.counts->completion_events.fetch_add(*n, std::memory_order_relaxed);
  return static_cast<int>(*n);
}

// Takes every pending event: the async fd is level-triggered in the parker,
// so an event left pending would end every park.
int DeviceEventsAgent::drain(Attached& a) {
  int n = 0;
  while (std::optional<verbs::AsyncEvent> e = a.device->get_async_event()) {
    ++n;
    const auto type = static_cast<std::size_t>(e->event_type);
    if (type < kEventTypes) a.counts->by_type[type].fetch_add(1, std::memory_order_relaxed);
    if (a.kept.size() == kMaxKeptEvents) {
      a.kept.pop_front();
      a.counts->lost.fetch_add(1, std::memory_order_relaxed);
    }
    a.kept.push_back(*e);
    publish(*e, a.device->index(), *a.counts);
  }
  return n;
}

void DeviceEventsAgent::publish(const verbs::AsyncEvent& e, std::uint32_t device_index, Counts& counts) {
  if (context_ == nullptr || context_->from_engine == nullptr) return;
  std::array<std::uint8_t, record_type::kDeviceEventBytes> p{};
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put32(0, static_cast<std::uint32_t>(e.event_type));
  put32(4, static_cast<std::uint32_t>(e.element));
  put32(8, e.element_id);
  put32(12, device_index);
  for (int i = 0; i < 8; ++i) p[16 + i] = static_cast<std::uint8_t>(e.context >> (8 * i));
  if (!context_->from_engine->append(record_type::kDeviceEvent, p.data(), record_type::kDeviceEventBytes)) {
    counts.lost.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace qpgate::engine
