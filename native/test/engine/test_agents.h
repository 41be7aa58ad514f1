// What the engine tests share: a quiet config and an agent that counts its duty cycles.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/engine.h"

namespace qpgate::engine::testing {

inline EngineConfig quiet_config() {
  EngineConfig c;
  c.to_engine_capacity = 1 << 16;
  c.from_engine_capacity = 1 << 16;
  c.huge_pages = false;
  return c;
}

// Counts its duty cycles, so a test can see that a command ran between them
// or that the engine still turns.
class CountingAgent final : public Agent {
 public:
  const char* name() const override { return "counting"; }
  void on_start(AgentContext&) override {}
  int do_work(std::uint64_t) override {
    cycles.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::atomic<std::uint64_t> cycles{0};
};

}  // namespace qpgate::engine::testing
