// The async events of the devices the hardware drives (the ibv backend) as
// an engine agent: the soft backend's transport runs in SoftDeviceAgent, an
// RDMA NIC (or the kernel's rxe) runs its own, so what the engine must do
// for such a device is what ibv_get_async_event asks of a program (wait
// on the async fd, get each event, ack it):
//
//   attach     the device's async fd and its completion channel's fd join
//              the parker's epoll set, so a parked engine wakes for a port
//              going down, a QP in error, or a completion on any of its CQs;
//   do_work    takes every pending event (ibv_get_async_event acks each),
//              counts it by type and keeps it for JS (bounded; when JS
//              does not take them, the oldest go and are counted lost)
//              and publishes it to JS as a kDeviceEvent record (the
//              gateway's log; a full ring counts it lost too);
//              takes the completion events, which re-arms their CQs, and
//              counts them as work, so the cycle after this one runs before
//              any park and the CQs' owners poll after the re-arm (the race
//              ibv_rc_pingpong --events closes the same way);
//   detach     before the device is destroyed (its fds close with it).
//
// Completions are polled by whoever owns the CQs (the feed and order agents
// in their do_work; a JS client after the driven engine's cycles).
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
    std::atomic<std::uint64_t> completion_events{0};  // CQ events taken (each one a CQ re-armed)
    std::atomic<std::uint64_t> completion_errors{0};  // take_completion_events failures
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
  int drain(Attached& a);
  void publish(const verbs::AsyncEvent& e, std::uint32_t device_index, Counts& counts);
  static int take_completions(Attached& a);
  void watch(const verbs::Device& device);
  void unwatch(const verbs::Device& device);

  AgentContext* context_ = nullptr;
  std::vector<Attached> devices_;
};

}  // namespace qpgate::engine
