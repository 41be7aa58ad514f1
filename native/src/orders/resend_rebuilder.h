// Rebuilds a reconnecting session's missed messages from the journal, on a
// thread of its own.
//
// A session's resend store is freed when it closes (order_service.h), so
// the Hello of its next connection may ask for messages only the journal
// still holds. Reading them back means replaying the journal file through a
// private handler (OrderHandler::replay_messages): tens to hundreds of
// milliseconds for a journal of thousands of records. On the engine thread
// that stopped every session, the feed and the RC timers for as long (one
// client's QP ran out of retries during one). So the engine thread only
// asks, here, and picks the finished store up in a later duty cycle; the
// session's sequenced messages wait behind its Welcome until then.
//
// One worker thread at a lower priority than the engine (nice kWorkerNice):
// a rebuild must never take the CPU from the duty cycle on a 2-CPU host.
// One replay serves every job queued when it starts: after a restart each
// reconnecting session needs one, and replaying the journal once per session
// made the last of 8 wait for 8 in a row. Each
// job keeps its session's messages from records before its own `end`; a job
// asked during a replay waits for the next one. A job whose session went
// away is cancelled, and the replay stops once no job of it is wanted.
// Neither side waits for the other: ask() and take_done() hold the lock only
// to move jobs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "orders/order_handler.h"
#include "orders/resend_store.h"

namespace qpgate::orders {

struct RebuildJob {
  std::uint64_t id = 0;        // the asker's name for it (OrderService: one per Hello that needs one)
  std::uint32_t session = 0;
  std::uint64_t from = 1;      // the first app_seq wanted
  std::uint64_t end = 0;       // the journal's written_position() when asked: the replay reads up to here
};

struct RebuildResult {
  RebuildJob job;
  bool ok = false;
  bool cancelled = false;
  std::string error;                     // why, when !ok
  std::unique_ptr<ResendStore> store;    // the session's messages from job.from on (the newest capacity of them)
  std::uint64_t took_ns = 0;             // the worker's time for the replay that served it (shared by its batch)
  bool ran_replay = false;               // the first result of its replay: count the replay and took_ns once
};

class ResendRebuilder {
 public:
  static constexpr int kWorkerNice = 10;

  // `config` is the live handler's (its journal path, instruments, accounts).
  ResendRebuilder(HandlerConfig config, std::uint32_t resend_capacity);
  // Cancels what is queued or running and joins the worker.
  ~ResendRebuilder();
  ResendRebuilder(const ResendRebuilder&) = delete;
  ResendRebuilder& operator=(const ResendRebuilder&) = delete;

  // Engine thread. The worker starts with the first job.
  void ask(const RebuildJob& job);
  // Engine thread: the job is no longer wanted (its session closed or said Hello again).
  void cancel(std::uint64_t job_id);
  // Engine thread: finished jobs, oldest first. Cheap when there are none (one atomic load).
  std::vector<RebuildResult> take_done();
  // Jobs asked and not yet taken back.
  std::size_t outstanding() const noexcept { return outstanding_; }
  // Cancellations still remembered: bounded by the jobs queued or running.
  std::size_t cancellations_pending() const;

 private:
  void run();
  // One replay for the batch; a result per job, in its order.
  std::vector<RebuildResult> rebuild(const std::vector<RebuildJob>& batch);
  // Marks the results whose job was cancelled since; false when none is still wanted.
  bool mark_cancelled(std::vector<RebuildResult>& results) const;
  bool cancelled_locked(std::uint64_t job_id) const;

  const HandlerConfig config_;
  const std::uint32_t resend_capacity_;
  std::size_t outstanding_ = 0;  // engine thread only
  std::atomic<bool> done_ready_{false};
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<RebuildJob> queue_;          // guarded by mutex_
  std::vector<std::uint64_t> cancelled_;  // guarded by mutex_: ids queued or running and cancelled
  std::vector<std::uint64_t> running_;    // guarded by mutex_: the jobs the worker's replay serves
  std::vector<RebuildResult> done_;       // guarded by mutex_
  bool stop_ = false;                     // guarded by mutex_
  std::thread thread_;
};

}  // namespace qpgate::orders
