// Completion queue storage of the soft device: a fixed-depth ring of Wc.
//
// A full CQ is an error, not a reason to overwrite: push() refuses the
// completion, the CQ latches `overflowed`, and the first overflow raises
// IBV_EVENT_CQ_ERR on the async queue (in the IBA a CQ overrun is an
// affiliated asynchronous error; the QPs using the CQ go to ERR, which is the
// caller's to do when push() fails). Completions already in the ring are
// still delivered; after them poll() answers EOVERFLOW, for good.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "verbs/device.h"
#include "verbs/error.h"
#include "verbs/soft/async_queue.h"
#include "verbs/wr.h"

namespace qpgate::verbs::soft {

class CqRing {
 public:
  // events may be null (no async reporting).
  CqRing(std::uint32_t depth, std::uint32_t handle, std::uint64_t context, AsyncEventQueue* events);

  // False when the ring is full (or already overflowed): nothing is overwritten.
  bool push(const Wc& wc);
  // Oldest first; up to out.size(). EOVERFLOW once overflowed and drained.
  Result<std::size_t> poll(std::span<Wc> out);

  std::uint32_t depth() const { return static_cast<std::uint32_t>(ring_.size()); }
  std::uint32_t size() const { return count_; }
  bool overflowed() const { return overflowed_; }
  std::uint64_t lost() const { return lost_; }  // completions refused after the ring filled
  std::uint32_t handle() const { return handle_; }

 private:
  std::vector<Wc> ring_;
  std::uint32_t head_ = 0;  // next to poll
  std::uint32_t count_ = 0;
  std::uint32_t handle_;
  std::uint64_t context_;
  AsyncEventQueue* events_;
  bool overflowed_ = false;
  std::uint64_t lost_ = 0;
};

// The soft backend's CompletionQueue: a CqRing behind the interface.
class SoftCompletionQueue final : public CompletionQueue {
 public:
  SoftCompletionQueue(std::uint32_t cqe, std::uint32_t handle, std::uint64_t context, AsyncEventQueue* events)
      : ring_(cqe, handle, context, events) {}
  Result<std::size_t> poll(std::span<Wc> out) override { return ring_.poll(out); }
  std::uint32_t cqe() const override { return ring_.depth(); }
  std::uint32_t handle() const override { return ring_.handle(); }
  CqRing& ring() { return ring_; }

 private:
  CqRing ring_;
};

}  // namespace qpgate::verbs::soft
