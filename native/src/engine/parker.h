// Where an idle engine thread blocks: one epoll set holding
//   - an eventfd doorbell that JS (or any thread) rings,
//   - a timerfd (CLOCK_MONOTONIC, absolute) for agents' protocol deadlines,
//     with nanosecond resolution that epoll's millisecond timeout lacks,
//   - the fds agents register (sockets, completion channels).
// The park timeout itself goes to epoll_pwait2, which takes a timespec.
// Never a plain sleep: anything that can give the engine work can wake it.
#pragma once

#include <sys/epoll.h>

#include <cstdint>

namespace qpgate::engine {

enum WakeReason : unsigned {
  kWakeTimeout = 0,
  kWakeDoorbell = 1u << 0,
  kWakeTimer = 1u << 1,
  kWakeFd = 1u << 2,
  kWakeInterrupted = 1u << 3,
};

class Parker {
 public:
  Parker();  // throws std::system_error when the fds cannot be made
  ~Parker();
  Parker(const Parker&) = delete;
  Parker& operator=(const Parker&) = delete;

  // Any thread. One 8-byte write to the eventfd; further rings before the
  // engine wakes coalesce in the eventfd counter.
  void ring() noexcept;

  // Engine thread. Fires the timerfd at `deadline_ns` (CLOCK_MONOTONIC) unless an
  // earlier deadline is armed already. Agents re-check their own deadlines on
  // every duty cycle; the timerfd only matters while parked.
  void arm_deadline(std::uint64_t deadline_ns) noexcept;
  std::uint64_t armed_deadline() const { return armed_deadline_; }

  // Engine thread. Register or drop an fd whose readiness should end a park.
  bool add_fd(int fd, std::uint32_t epoll_events) noexcept;
  bool remove_fd(int fd) noexcept;

  // Engine thread. Blocks up to timeout_ns (< 0: no timeout) and returns a
  // mask of WakeReason. Drains the doorbell and timer so they re-arm.
  unsigned park(std::int64_t timeout_ns) noexcept { return take_wakes(wait(timeout_ns)); }

  // park() in its two halves, for an engine that lends its duty cycle while
  // it waits (Engine::park): wait() only blocks and touches nothing but the
  // kernel's epoll set, so another thread may run the agents (and arm
  // deadlines) meanwhile; take_wakes() drains the doorbell and the timer,
  // and runs once the engine has its duty cycle back.
  struct Ready {
    epoll_event events[16];
    int count = 0;  // < 0: interrupted (EINTR); a failed wait is 0, a timeout
  };
  Ready wait(std::int64_t timeout_ns) noexcept;
  unsigned take_wakes(const Ready& ready) noexcept;

  int doorbell_fd() const { return doorbell_fd_; }
  // Readable while park(0) would report a wake (epoll fds nest): what an
  // event loop watches for an engine it drives (Engine::start_driven).
  int epoll_fd() const { return epoll_fd_; }

 private:
  void close_all() noexcept;

  int epoll_fd_ = -1;
  int doorbell_fd_ = -1;
  int timer_fd_ = -1;
  std::uint64_t armed_deadline_ = 0;  // 0 = none
};

}  // namespace qpgate::engine
