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
// One worker thread, one job at a time, in the order asked, at a lower
// priority than the engine (nice kWorkerNice): a rebuild must never take the
// CPU from the duty cycle on a 2-CPU host. A job whose session went away is
// cancelled: the replay stops at its next record. Neither side waits for the
// other: ask() and take_done() hold the lock only to move a job.
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
  std::uint64_t took_ns = 0;             // the worker's time for it
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

 private:
  void run();
  RebuildResult rebuild(const RebuildJob& job);
  bool cancelled(std::uint64_t job_id) const;

  const HandlerConfig config_;
  const std::uint32_t resend_capacity_;
  std::size_t outstanding_ = 0;  // engine thread only
  std::atomic<bool> done_ready_{false};
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<RebuildJob> queue_;          // guarded by mutex_
  std::vector<std::uint64_t> cancelled_;  // guarded by mutex_: ids asked and cancelled, not yet finished
  std::vector<RebuildResult> done_;       // guarded by mutex_
  bool stop_ = false;                     // guarded by mutex_
  std::thread thread_;
};

}  // namespace qpgate::orders
