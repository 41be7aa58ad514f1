#include "parker.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <system_error>

#include "common/clock.h"

namespace qpgate::engine {
namespace {

bool watch(int epoll_fd, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace

Parker::Parker() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  doorbell_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || doorbell_fd_ < 0 || timer_fd_ < 0 || !watch(epoll_fd_, doorbell_fd_) ||
      !watch(epoll_fd_, timer_fd_)) {
    const int err = errno;
    close_all();  // a throwing constructor runs no destructor
    throw std::system_error(err, std::generic_category(), "Parker: epoll/eventfd/timerfd setup");
  }
}

Parker::~Parker() { close_all(); }

void Parker::close_all() noexcept {
  if (timer_fd_ >= 0) close(timer_fd_);
  if (doorbell_fd_ >= 0) close(doorbell_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  timer_fd_ = doorbell_fd_ = epoll_fd_ = -1;
}

void Parker::ring() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is at its maximum: it is rung already.
  [[maybe_unused]] const ssize_t n = write(doorbell_fd_, &one, sizeof one);
}

void Parker::arm_deadline(std::uint64_t deadline_ns) noexcept {
  if (armed_deadline_ != 0 && armed_deadline_ <= deadline_ns) return;
  itimerspec spec{};
  // it_value 0 would disarm; a deadline in the past fires at once.
  const std::uint64_t at = deadline_ns == 0 ? 1 : deadline_ns;
  spec.it_value.tv_sec = static_cast<time_t>(at / 1'000'000'000ULL);
  spec.it_value.tv_nsec = static_cast<long>(at % 1'000'000'000ULL);
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0) armed_deadline_ = at;
}

bool Parker::add_fd(int fd, std::uint32_t epoll_events) noexcept {
  epoll_event ev{};
  ev.events = epoll_events;
  ev.data.fd = fd;
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool Parker::remove_fd(int fd) noexcept { return epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr) == 0; }

Parker::Ready Parker::wait(std::int64_t timeout_ns) noexcept {
  timespec timeout{};
  timespec* timeout_ptr = nullptr;
  if (timeout_ns >= 0) {
    timeout.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    timeout_ptr = &timeout;
  }
  Ready ready;
  ready.count = epoll_pwait2(epoll_fd_, ready.events, static_cast<int>(std::size(ready.events)), timeout_ptr, nullptr);
  if (ready.count < 0 && errno != EINTR) ready.count = 0;  // a failed wait is a timeout
  return ready;
}

unsigned Parker::take_wakes(const Ready& ready) noexcept {
  if (ready.count < 0) return kWakeInterrupted;
  unsigned reasons = kWakeTimeout;
  std::uint64_t drained = 0;
  for (int i = 0; i < ready.count; ++i) {
    const int fd = ready.events[i].data.fd;
    if (fd == doorbell_fd_) {
      [[maybe_unused]] const ssize_t r = read(doorbell_fd_, &drained, sizeof drained);
      reasons |= kWakeDoorbell;
    } else if (fd == timer_fd_) {
      [[maybe_unused]] const ssize_t r = read(timer_fd_, &drained, sizeof drained);
      armed_deadline_ = 0;
      reasons |= kWakeTimer;
    } else {
      reasons |= kWakeFd;
    }
  }
  // A deadline that passed while we were not parked leaves the timerfd
  // readable; forget it so the next arm_deadline re-programs the timer.
  if (armed_deadline_ != 0 && armed_deadline_ <= monotonic_ns()) {
    [[maybe_unused]] const ssize_t r = read(timer_fd_, &drained, sizeof drained);
    armed_deadline_ = 0;
  }
  return reasons;
}

}  // namespace qpgate::engine
