// Engine counters: written by the engine thread only, read by anyone.
// A single writer needs no read-modify-write: a relaxed load and store is
// enough and costs no locked instruction on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

namespace qpgate::engine {

class SingleWriterCounter {
 public:
  void add(std::uint64_t n = 1) noexcept { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void set(std::uint64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void raise_to(std::uint64_t v) noexcept {
    if (v > value_.load(std::memory_order_relaxed)) value_.store(v, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// On their own cache lines, away from anything the JS thread writes.
struct alignas(64) EngineCounters {
  SingleWriterCounter duty_cycles;        // every pass over the agents
  SingleWriterCounter idle_cycles;        // passes that found no work
  SingleWriterCounter parks;              // blocked in epoll
  SingleWriterCounter doorbell_wakes;     // park ended by the eventfd
  SingleWriterCounter timer_wakes;        // park ended by the timerfd
  SingleWriterCounter fd_wakes;           // park ended by an agent's fd
  SingleWriterCounter js_wakes;           // ThreadSafeFunction calls queued
  SingleWriterCounter js_wake_retries;    // TSFN queue full: retried next cycle
  SingleWriterCounter records_in;         // consumed from toEngine
  SingleWriterCounter records_out;        // produced into fromEngine
  SingleWriterCounter rejected_records;   // toEngine records skipped: unknown type or too long to answer
  SingleWriterCounter to_engine_corrupt;  // 1 once a bad toEngine header was seen
  SingleWriterCounter max_cycle_ns;       // longest duty cycle that did work (Aeron's duty cycle tracker)
  SingleWriterCounter cycles_over_threshold;  // work cycles longer than the threshold (1 ms default)
  SingleWriterCounter task_errors;        // run_on_engine tasks that threw (their caller got the exception)
  SingleWriterCounter agent_errors;       // exceptions out of an agent's do_work or a record handler
  SingleWriterCounter agents_stopped;     // agents stopped because their do_work threw
};

}  // namespace qpgate::engine
