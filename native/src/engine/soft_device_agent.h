// The soft devices as an engine agent: runs the verbs-level driver
// (verbs/soft/soft_device_driver.h) in the engine's duty cycle and gives it
// the engine's parker as its PollRegistry.
//
//   on_start   the driver's receive sockets join the parker's epoll set, so
//              a parked engine wakes when a packet arrives; sockets of
//              groups joined later are added (and removed on leave) as they
//              come and go.
//   do_work    the driver's duty cycle; its earliest protocol timer arms
//              the engine's deadline (AgentContext::arm_deadline).
//   on_close   the parker goes with the engine: the driver forgets it.
//
// Devices are attached on the engine thread (Engine::run_on_engine) or
// before the engine starts. This is the only place where the engine meets
// the soft backend: verbs does not depend on the engine.
#pragma once

#include <cstdint>

#include "engine/agent.h"
#include "verbs/soft/soft_device_driver.h"

namespace qpgate::engine {

class SoftDeviceAgent final : public Agent, private verbs::soft::PollRegistry {
 public:
  SoftDeviceAgent() = default;
  ~SoftDeviceAgent() override;
  SoftDeviceAgent(const SoftDeviceAgent&) = delete;
  SoftDeviceAgent& operator=(const SoftDeviceAgent&) = delete;

  const char* name() const override { return "soft_devices"; }
  void on_start(AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread (or before start). EBUSY when the device is driven already.
  verbs::Status attach(verbs::soft::SoftDevice& device) { return driver_.attach(device); }
  std::size_t device_count() const { return driver_.device_count(); }
  // The deadline armed last (0: none); for tests and stats.
  std::uint64_t last_deadline_ns() const { return static_cast<std::uint64_t>(driver_.last_deadline_ns()); }
  verbs::soft::SoftDeviceDriver& driver() { return driver_; }

 private:
  void add_fd(int fd) override;
  void remove_fd(int fd) override;
  void arm_deadline(std::int64_t monotonic_deadline_ns) override;

  AgentContext* context_ = nullptr;
  verbs::soft::SoftDeviceDriver driver_;
};

}  // namespace qpgate::engine
