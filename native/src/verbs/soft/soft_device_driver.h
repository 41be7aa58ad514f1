// The soft devices' driver: the duty cycle that drives every attached
// SoftDevice, without knowing what thread or loop runs it. The engine's
// adapter (engine/soft_device_agent.h) runs it as an agent on the engine
// thread (engine/engine.h); a test may run it in a loop.
//
//   do_work(now, &deadline)  per device: each QP's requester and pending
//                            responses, one sendmmsg flush (with the ACKs the
//                            last pass queued), recvmmsg batches → ingress →
//                            QPs, then the QPs' timers (soft_device.cc says
//                            why in that order); the earliest protocol timer
//                            of all devices (now, while answers wait to be
//                            sent) is returned and reported to the PollRegistry.
//   attach(device)           drive a device until it is destroyed (it
//                            detaches itself when its last object goes).
//
// PollRegistry is what the driver needs from whoever waits for it: the
// receive sockets to wait on (told as groups are joined and left) and the
// deadline that must end a wait. The engine's parker is one; nothing here
// depends on it (the layering is wire → verbs → engine).
//
// No locks: the driver and its devices belong to one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "verbs/error.h"
#include "verbs/soft/net.h"
#include "verbs/soft/soft_qp.h"  // kNoDeadline

namespace qpgate::verbs::soft {

class SoftDevice;
struct DeviceCore;

// Where the driver reports the fds and the timer a waiting loop must watch.
class PollRegistry {
 public:
  virtual ~PollRegistry() = default;
  // A receive socket (non-blocking; readable = packets to read) appeared / goes.
  virtual void add_fd(int fd) = 0;
  virtual void remove_fd(int fd) = 0;
  // CLOCK_MONOTONIC ns at which a wait must end: a protocol timer is due.
  virtual void arm_deadline(std::int64_t monotonic_deadline_ns) = 0;
};

class SoftDeviceDriver final : private FdObserver {
 public:
  SoftDeviceDriver() = default;
  ~SoftDeviceDriver() override;
  SoftDeviceDriver(const SoftDeviceDriver&) = delete;
  SoftDeviceDriver& operator=(const SoftDeviceDriver&) = delete;

  // Sets (or, with nullptr, clears) the registry; a new registry is told
  // every receive fd of the attached devices at once. The registry must
  // outlive its registration.
  void set_registry(PollRegistry* registry);

  // The device (its core) is driven until it is destroyed. Attaching a
  // device twice, or to two drivers, is EBUSY.
  Status attach(SoftDevice& device);
  std::size_t device_count() const { return cores_.size(); }

  // One duty cycle over every device. `next_deadline_ns` (may be null)
  // receives the earliest deadline or kNoDeadline; a deadline is also armed
  // on the registry. Returns the work done (0: nothing was ready).
  int do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns = nullptr);
  // The deadline armed last (0: none yet); for tests and stats.
  std::int64_t last_deadline_ns() const { return last_deadline_ns_; }

 private:
  friend struct DeviceCore;
  void detach(DeviceCore* core);
  void fd_added(int fd) override;
  void fd_removed(int fd) override;

  PollRegistry* registry_ = nullptr;
  std::vector<DeviceCore*> cores_;
  std::int64_t last_deadline_ns_ = 0;
};

}  // namespace qpgate::verbs::soft
