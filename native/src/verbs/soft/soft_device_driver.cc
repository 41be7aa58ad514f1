// The soft devices' driver (soft_device_driver.h).
#include <algorithm>

#include "verbs/soft/device_core.h"

namespace qpgate::verbs::soft {

SoftDeviceDriver::~SoftDeviceDriver() {
  for (DeviceCore* core : cores_) {
    core->driver = nullptr;
    core->set_fd_observer(nullptr);
  }
}

void SoftDeviceDriver::set_registry(PollRegistry* registry) {
  registry_ = registry;
  if (registry_ == nullptr) return;
  for (DeviceCore* core : cores_) {
    for (int fd : core->receive_fds()) registry_->add_fd(fd);
  }
}

Status SoftDeviceDriver::attach(SoftDevice& device) {
  DeviceCore* core = device.core().get();
  if (core->driver != nullptr) {
    return Error{EBUSY, "soft device " + core->name + " is already driven by an engine"};
  }
  core->driver = this;
  core->set_fd_observer(this);
  cores_.push_back(core);
  if (registry_ != nullptr) {
    for (int fd : core->receive_fds()) registry_->add_fd(fd);
  }
  return {};
}

void SoftDeviceDriver::detach(DeviceCore* core) {
  auto it = std::find(cores_.begin(), cores_.end(), core);
  if (it == cores_.end()) return;
  if (registry_ != nullptr) {
    for (int fd : core->receive_fds()) registry_->remove_fd(fd);
  }
  core->set_fd_observer(nullptr);
  core->driver = nullptr;
  cores_.erase(it);
}

void SoftDeviceDriver::fd_added(int fd) {
  if (registry_ != nullptr) registry_->add_fd(fd);
}

void SoftDeviceDriver::fd_removed(int fd) {
  if (registry_ != nullptr) registry_->remove_fd(fd);
}

int SoftDeviceDriver::do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns) {
  int work = 0;
  std::int64_t earliest = kNoDeadline;
  for (DeviceCore* core : cores_) {
    std::int64_t deadline = kNoDeadline;
    work += core->do_work(now_ns, &deadline);
    earliest = std::min(earliest, deadline);
  }
  if (earliest != kNoDeadline) {
    last_deadline_ns_ = std::max<std::int64_t>(earliest, 1);
    if (registry_ != nullptr) registry_->arm_deadline(last_deadline_ns_);
  }
  if (next_deadline_ns != nullptr) *next_deadline_ns = earliest;
  return work;
}

}  // namespace qpgate::verbs::soft
