#include "orders/resend_rebuilder.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "engine/clock.h"

namespace qpgate::orders {

namespace {

// Linux keeps a nice value per thread: this lowers the worker's alone. A
// refusal (RLIMIT_NICE cannot forbid lowering) leaves it at the engine's.
void lower_priority(int nice) { (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice); }

}  // namespace

ResendRebuilder::ResendRebuilder(HandlerConfig config, std::uint32_t resend_capacity)
    : config_(std::move(config)), resend_capacity_(resend_capacity) {}

ResendRebuilder::~ResendRebuilder() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    for (const RebuildJob& j : queue_) cancelled_.push_back(j.id);
    queue_.clear();
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ResendRebuilder::ask(const RebuildJob& job) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(job);
  }
  ++outstanding_;
  if (!thread_.joinable()) {
    thread_ = std::thread([this] {
      lower_priority(kWorkerNice);
      run();
    });
  }
  work_.notify_one();
}

void ResendRebuilder::cancel(std::uint64_t job_id) {
  std::lock_guard lock(mutex_);
  cancelled_.push_back(job_id);
}

bool ResendRebuilder::cancelled(std::uint64_t job_id) const {
  std::lock_guard lock(mutex_);
  return stop_ || std::find(cancelled_.begin(), cancelled_.end(), job_id) != cancelled_.end();
}

std::vector<RebuildResult> ResendRebuilder::take_done() {
  if (!done_ready_.load(std::memory_order_acquire)) return {};
  std::vector<RebuildResult> out;
  {
    std::lock_guard lock(mutex_);
    out.swap(done_);
    done_ready_.store(false, std::memory_order_relaxed);
  }
  outstanding_ -= std::min(outstanding_, out.size());
  return out;
}

void ResendRebuilder::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_
    const RebuildJob job = queue_.front();
    queue_.pop_front();
    RebuildResult result{job, false, true, {}, nullptr, 0};
    if (std::find(cancelled_.begin(), cancelled_.end(), job.id) == cancelled_.end()) {
      lock.unlock();
      result = rebuild(job);
      lock.lock();
    }
    std::erase(cancelled_, job.id);
    done_.push_back(std::move(result));
    done_ready_.store(true, std::memory_order_release);
  }
}

RebuildResult ResendRebuilder::rebuild(const RebuildJob& job) {
  const std::uint64_t started = engine::monotonic_ns();
  RebuildResult r{job, false, false, {}, nullptr, 0};
  try {
    r.store = std::make_unique<ResendStore>(resend_capacity_);
  } catch (const std::bad_alloc&) {
    r.error = "out of memory for the resend store";
    return r;
  }
  ResendStore& store = *r.store;
  // Checking for a cancel costs a lock: every 1024 records is often enough
  // to stop within a millisecond or so.
  std::uint32_t records = 0;
  r.ok = OrderHandler::replay_messages(
      config_, job.end,
      [&](const OutBuffer& out) {
        for (const OutMessage& m : out.messages()) {
          if (m.session == job.session && m.app_seq >= job.from) store.put(m.app_seq, out.bytes_of(m));
        }
        if (++records % 1024 != 0 || !cancelled(job.id)) return true;
        r.cancelled = true;
        return false;
      },
      r.error);
  r.took_ns = engine::monotonic_ns() - started;
  return r;
}

}  // namespace qpgate::orders
