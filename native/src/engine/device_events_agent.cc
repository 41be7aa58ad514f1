#include "engine/device_events_agent.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

namespace qpgate::engine {

void DeviceEventsAgent::on_start(AgentContext& context) {
  context_ = &context;
  for (const Attached& a : devices_) context_->add_fd(a.device->async_fd(), EPOLLIN);
}

int DeviceEventsAgent::do_work(std::uint64_t /*now_ns*/) {
  int work = 0;
  for (Attached& a : devices_) work += drain(a);
  return work;
}

void DeviceEventsAgent::on_close() {
  if (context_ != nullptr) {
    for (const Attached& a : devices_) context_->remove_fd(a.device->async_fd());
  }
  context_ = nullptr;
}

verbs::Status DeviceEventsAgent::attach(verbs::Device& device) {
  if (find(device) != nullptr) return verbs::Error{EBUSY, "device " + std::string(device.name()) + " is attached already"};
  if (device.async_fd() < 0) {
    return verbs::Error{EINVAL, "device " + std::string(device.name()) + " has no async fd (a soft device raises its events itself)"};
  }
  devices_.push_back(Attached{&device, {}, std::make_shared<Counts>()});
  if (context_ != nullptr) context_->add_fd(device.async_fd(), EPOLLIN);
  return {};
}

void DeviceEventsAgent::detach(const verbs::Device& device) {
  auto it = std::find_if(devices_.begin(), devices_.end(), [&](const Attached& a) { return a.device == &device; });
  if (it == devices_.end()) return;
  if (context_ != nullptr) context_->remove_fd(device.async_fd());
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
  }
  return n;
}

}  // namespace qpgate::engine
