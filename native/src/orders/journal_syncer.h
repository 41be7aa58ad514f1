// The journal's fdatasync, on a thread of its own.
//
// fdatasync costs milliseconds here (3.5 ms p50, tens to hundreds of ms when
// the disk is busy); on the engine thread it would stop every poll loop —
// RC ACKs, retransmissions, the feed — for that long, and clients' QPs
// would time out. So under `fsync: interval|every` the engine thread only
// write(2)s and asks for a sync up to an offset; this thread syncs and
// publishes the offset it made durable; the engine reads that watermark
// each duty cycle and releases the answers behind it. Nothing on the ack
// path waits for this thread: answers simply go out in a later duty cycle.
// (Waking it costs the engine one futex call per group, against the
// fdatasync's milliseconds; the engine itself is never woken by it — it
// re-checks the watermark on its own deadline.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace qpgate::orders {

class JournalSyncer {
 public:
  // Starts the thread; `durable` is the offset already on disk.
  JournalSyncer(int fd, std::uint64_t durable, std::string path);
  // Stops the thread after a last sync of what was requested.
  ~JournalSyncer();
  JournalSyncer(const JournalSyncer&) = delete;
  JournalSyncer& operator=(const JournalSyncer&) = delete;

  // Engine thread: everything written up to `offset` should become durable.
  void request(std::uint64_t offset);
  // The offset known to be on disk (acquire: the fdatasync happened before).
  std::uint64_t durable() const noexcept { return durable_.load(std::memory_order_acquire); }
  // Blocks until `offset` is durable or a sync failed (shutdown, tests). False on failure.
  bool wait_for(std::uint64_t offset);
  // Set once: what failed (then nothing more becomes durable).
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::string failure() const;
  // Counted before durable() is published: read durable() first to see its sync.
  std::uint64_t syncs() const noexcept { return syncs_.load(std::memory_order_relaxed); }

 private:
  void run();

  const int fd_;
  const std::string path_;
  std::atomic<std::uint64_t> durable_;
  std::atomic<std::uint64_t> syncs_{0};
  std::atomic<bool> failed_{false};
  std::uint64_t requested_ = 0;  // guarded by mutex_, as below
  std::uint64_t asked_ = 0;      // engine thread only: the last offset passed to request()
  bool stop_ = false;
  std::string failure_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // requested_ rose, or stop_
  std::condition_variable done_;  // durable_ rose, or a failure
  std::thread thread_;
};

}  // namespace qpgate::orders
