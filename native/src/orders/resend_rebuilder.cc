#include "orders/resend_rebuilder.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "common/clock.h"

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
  // A job that already finished is not remembered: run() would never erase its id.
  const bool queued = std::any_of(queue_.begin(), queue_.end(), [&](const RebuildJob& j) { return j.id == job_id; });
  const bool running = std::find(running_.begin(), running_.end(), job_id) != running_.end();
  if (queued || running) cancelled_.push_back(job_id);
}

bool ResendRebuilder::cancelled_locked(std::uint64_t job_id) const {
  return stop_ || std::find(cancelled_.begin(), cancelled_.end(), job_id) != cancelled_.end();
}

bool ResendRebuilder::mark_cancelled(std::vector<RebuildResult>& results) const {
  std::lock_guard lock(mutex_);
  bool wanted = false;
  for (RebuildResult& r : results) {
    if (!r.cancelled && cancelled_locked(r.job.id)) r.cancelled = true;
    wanted = wanted || (!r.cancelled && r.store != nullptr);
  }
  return wanted;
}

std::size_t ResendRebuilder::cancellations_pending() const {
  std::lock_guard lock(mutex_);
  return cancelled_.size();
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
    std::vector<RebuildJob> batch;
    for (; !queue_.empty(); queue_.pop_front()) {
      const RebuildJob& job = queue_.front();
      if (!cancelled_locked(job.id)) {
        batch.push_back(job);
        running_.push_back(job.id);
        continue;
      }
      std::erase(cancelled_, job.id);
      done_.push_back(RebuildResult{job, false, true, {}, nullptr, 0, false});
    }
    std::vector<RebuildResult> results;
    if (!batch.empty()) {
      lock.unlock();
      results = rebuild(batch);
      lock.lock();
    }
    running_.clear();
    for (RebuildResult& r : results) {
      std::erase(cancelled_, r.job.id);
      done_.push_back(std::move(r));
    }
    done_ready_.store(true, std::memory_order_release);
  }
}

std::vector<RebuildResult> ResendRebuilder::rebuild(const std::vector<RebuildJob>& batch) {
  const std::uint64_t started = qpgate::monotonic_ns();
  std::vector<RebuildResult> results;
  results.reserve(batch.size());
  std::uint64_t end = 0;
  for (const RebuildJob& job : batch) {
    RebuildResult& r = results.emplace_back(RebuildResult{job, false, false, {}, nullptr, 0, false});
    try {
      r.store = std::make_unique<ResendStore>(resend_capacity_);
    } catch (const std::bad_alloc&) {
      r.error = "out of memory for the resend store";
      continue;
    }
    end = std::max(end, job.end);
  }
  // Each message goes to the jobs of its session: found by binary search, as
  // a batch may hold every session of the gateway.
  std::vector<std::pair<std::uint32_t, std::size_t>> by_session;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].store != nullptr) by_session.emplace_back(results[i].job.session, i);
  }
  std::sort(by_session.begin(), by_session.end());
  std::string error;
  bool ok = true;
  if (!by_session.empty()) {
    // Checking for cancels costs a lock: every 1024 records is often enough
    // to stop within a millisecond or so.
    std::uint32_t records = 0;
    ok = OrderHandler::replay_messages(
        config_, end,
        [&](const OutBuffer& out, std::uint64_t record_at) {
          for (const OutMessage& m : out.messages()) {
            auto [it, last] = std::equal_range(by_session.begin(), by_session.end(), std::pair{m.session, std::size_t{0}},
                                               [](const auto& a, const auto& b) { return a.first < b.first; });
            for (; it != last; ++it) {
              RebuildResult& r = results[it->second];
              if (record_at < r.job.end && m.app_seq >= r.job.from && !r.cancelled) r.store->put(m.app_seq, out.bytes_of(m));
            }
          }
          return ++records % 1024 != 0 || mark_cancelled(results);
        },
        error);
  }
  mark_cancelled(results);
  const std::uint64_t took = qpgate::monotonic_ns() - started;
  for (RebuildResult& r : results) {
    r.took_ns = took;
    if (r.cancelled || r.store == nullptr) continue;
    r.ok = ok;
    if (!ok) r.error = error;
  }
  results.front().ran_replay = !by_session.empty();
  return results;
}

}  // namespace qpgate::orders
