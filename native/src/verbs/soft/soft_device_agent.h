// The soft devices' engine agent: drives every attached SoftDevice on the
// engine thread (DESIGN.md "Threads and data paths").
//
//   on_start   registers each device's receive sockets with the engine's
//              parker (AgentContext::add_fd), so a parked engine wakes when
//              a packet arrives; sockets of groups joined later are added
//              (and removed on leave) as they come and go.
//   do_work    per device: recvmmsg a batch → ingress → QPs, each QP's
//              do_work(now), one sendmmsg flush; then arms the engine's
//              deadline with the earliest protocol timer of all QPs.
//
// Devices are attached on the engine thread (Engine::run_on_engine) or
// before the engine starts; a device detaches itself when its last object
// is destroyed. No locks: the agent and the devices belong to one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/agent.h"
#include "verbs/soft/net.h"

namespace qpgate::verbs::soft {

class SoftDevice;
struct DeviceCore;

class SoftDeviceAgent final : public engine::Agent, private FdObserver {
 public:
  SoftDeviceAgent() = default;
  ~SoftDeviceAgent() override;
  SoftDeviceAgent(const SoftDeviceAgent&) = delete;
  SoftDeviceAgent& operator=(const SoftDeviceAgent&) = delete;

  const char* name() const override { return "soft_devices"; }
  void on_start(engine::AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  void on_close() override;

  // Engine thread (or before start). The device (its core) is driven until
  // it is destroyed. Attaching a device twice, or to two agents, is EBUSY.
  Status attach(SoftDevice& device);
  std::size_t device_count() const { return cores_.size(); }
  // The deadline this agent armed last (0: none); for tests and stats.
  std::uint64_t last_deadline_ns() const { return last_deadline_ns_; }

 private:
  friend struct DeviceCore;
  void detach(DeviceCore* core);
  void fd_added(int fd) override;
  void fd_removed(int fd) override;

  engine::AgentContext* context_ = nullptr;
  std::vector<DeviceCore*> cores_;
  std::uint64_t last_deadline_ns_ = 0;
};

}  // namespace qpgate::verbs::soft
