// The async events of the devices the hardware drives (the ibv backend) as
// an engine agent: the soft backend's transport runs in SoftDeviceAgent, an
// RDMA NIC (or the kernel's rxe) runs its own, so what the engine must do
// for such a device is what ibv_get_async_event asks of a program (wait
// on the async fd, get each event, ack it):
//
//   attach     the device's async fd joins the parker's epoll set, so a
//              parked engine wakes for a port going down or a QP in error;
//   do_work    takes every pending event (ibv_get_async_event acks each),
//              counts it by type and keeps it for JS (bounded; when JS
//              does not take them, the oldest go and are counted lost);
//   detach     before the device is destroyed (its fd closes with it).
//
// Completions are polled by the agents that own the CQs (feed, orders); a
// parked engine polls them again within BackoffParams::max_park_ns.
// Only verbs::Device is used, so this agent does not depend on libibverbs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/agent.h"
#include "verbs/device.h"

namespace qpgate::engine {

class DeviceEventsAgent final : public Agent {
 public:
  static constexpr std::size_t kMaxKeptEvents = 256;
  // Indexed by verbs::EventType's value (ibv_event_type, 0..kEventTypes-1).
  static constexpr std::size_t kEventTypes = verbs::kEventTypeCount;

  // Written by the engine thread, read from any thread (relaxed): the
  // control plane reads them without waiting for a duty cycle.
  struct Counts {
    std::array<std::atomic<std::uint64_t>, kEventTypes> by_type{};
    std::atomic<std::uint64_t> lost{0};  // kept events dropped because JS did not take them
  };

  DeviceEventsAgent() = default;
  DeviceEventsAgent(const DeviceEventsAgent&) = delete;
  DeviceEventsAgent& operator=(const DeviceEventsAgent&) = delete;

  const char* name() const override { return "device_events"; }
  void on_start(AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread (or before start). EBUSY when attached already.
  verbs::Status attach(verbs::Device& device);
  // Engine thread. No-op for a device not attached.
  void detach(const verbs::Device& device);
  // Engine thread: the oldest event kept for `device`, if any.
  std::optional<verbs::AsyncEvent> next_event(const verbs::Device& device);
  // Engine thread. Null for a device not attached; the counts outlive the
  // device's detach, for whoever holds them.
  std::shared_ptr<const Counts> counts(const verbs::Device& device) const;
  std::size_t device_count() const { return devices_.size(); }

 private:
  struct Attached {
    verbs::Device* device = nullptr;
    std::deque<verbs::AsyncEvent> kept;
    std::shared_ptr<Counts> counts;
  };
  Attached* find(const verbs::Device& device);
  const Attached* find(const verbs::Device& device) const;
  static int drain(Attached& a);

  AgentContext* context_ = nullptr;
  std::vector<Attached> devices_;
};

}  // namespace qpgate::engine
