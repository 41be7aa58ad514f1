#include "engine/soft_device_agent.h"

#include <sys/epoll.h>

namespace qpgate::engine {

SoftDeviceAgent::~SoftDeviceAgent() { driver_.set_registry(nullptr); }

void SoftDeviceAgent::on_start(AgentContext& context) {
  context_ = &context;
  driver_.set_registry(this);
}

int SoftDeviceAgent::do_work(std::uint64_t now_ns) { return driver_.do_work(static_cast<std::int64_t>(now_ns)); }

void SoftDeviceAgent::on_close() {
  driver_.set_registry(nullptr);
  context_ = nullptr;
}

void SoftDeviceAgent::add_fd(int fd) {
  if (context_ != nullptr) context_->add_fd(fd, EPOLLIN);
}

void SoftDeviceAgent::remove_fd(int fd) {
  if (context_ != nullptr) context_->remove_fd(fd);
}

void SoftDeviceAgent::arm_deadline(std::int64_t monotonic_deadline_ns) {
  if (context_ != nullptr) context_->arm_deadline(static_cast<std::uint64_t>(monotonic_deadline_ns));
}

}  // namespace qpgate::engine
