#include "orders/journal_syncer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qpgate::orders {

JournalSyncer::JournalSyncer(int fd, std::uint64_t durable, std::string path)
    : fd_(fd), path_(std::move(path)), durable_(durable), requested_(durable), asked_(durable) {
  thread_ = std::thread([this] { run(); });
}

JournalSyncer::~JournalSyncer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void JournalSyncer::request(std::uint64_t offset) {
  if (offset <= asked_) return;  // already asked: no lock, no wake
  asked_ = offset;
  {
    std::lock_guard lock(mutex_);
    requested_ = offset;
  }
  work_.notify_one();
}

bool JournalSyncer::wait_for(std::uint64_t offset) {
  std::unique_lock lock(mutex_);
  if (offset > requested_) requested_ = offset;
  work_.notify_one();
  done_.wait(lock, [&] { return durable_.load(std::memory_order_acquire) >= offset || failed_.load(); });
  return !failed_.load();
}

std::string JournalSyncer::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void JournalSyncer::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || requested_ > durable_.load(std::memory_order_relaxed); });
    const std::uint64_t target = requested_;
    if (target <= durable_.load(std::memory_order_relaxed)) return;  // stop_, nothing left to sync
    lock.unlock();
    // Everything up to `target` was write(2)n before it was requested: one
    // fdatasync covers it (and whatever was written since, harmlessly).
    const int rc = ::fdatasync(fd_);
    const int err = errno;
    lock.lock();
    if (rc != 0) {
      failure_ = "fdatasync " + path_ + ": " + std::strerror(err);
      failed_.store(true, std::memory_order_release);
      done_.notify_all();
      return;
    }
    syncs_.fetch_add(1, std::memory_order_relaxed);
    durable_.store(target, std::memory_order_release);
    done_.notify_all();
  }
}

}  // namespace qpgate::orders
