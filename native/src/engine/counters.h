// Engine counters: written by the engine thread only, read by anyone.
// A single writer needs no read-modify-write: a relaxed load and store is
// enough and costs no locked instruction on the hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "engine/engine_counters.def"

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

// What a declared counter is to JS (engine_counters.def, feed_counters.def):
// a number, or a 0/1 flag given as a boolean.
enum class CounterKind : std::uint8_t { kCount, kFlag };

// For a struct made of a declared list L: `L(QPGATE_COUNTER_MEMBER)` declares
// its counters, `L(QPGATE_COUNTER_VISIT)` in a for_each(fn) calls
// fn(std::string_view name, CounterKind kind, std::uint64_t value) for each.
#define QPGATE_COUNTER_MEMBER(name, kind, help, family, label) ::qpgate::engine::SingleWriterCounter name;
#define QPGATE_COUNTER_VISIT(name, kind, help, family, label) \
  fn(std::string_view(#name), ::qpgate::engine::CounterKind::kind, name.get());

// On their own cache lines, away from anything the JS thread writes. The
// list is engine_counters.def.
struct alignas(64) EngineCounters {
  QPGATE_ENGINE_COUNTERS(QPGATE_COUNTER_MEMBER)
};

}  // namespace qpgate::engine
