#include "command_agent.h"

#include <cstring>

#include "clock.h"
#include "record_types.h"

namespace qpgate::engine {

int CommandAgent::do_work(std::uint64_t /*now_ns*/) {
  SpscConsumer& in = *context_->to_engine;
  SpscProducer& out = *context_->from_engine;
  EngineCounters& counters = *context_->counters;
  if (in.corrupt()) return 0;
  // One receive time per batch: the records of a batch arrived together.
  // Read here, not at the top of the duty cycle, so earlier agents' work
  // does not count as ring latency.
  std::uint64_t received = 0;
  std::uint64_t echoed = 0;
  std::uint64_t rejected = 0;
  const std::int32_t max_echo = out.ring().max_record_length() - ring_layout::kHeaderLength - 8;
  const int consumed = in.read(
      [&](std::int32_t type, const std::byte* payload, std::int32_t length) {
        if (type != record_type::kEcho || length > max_echo) {
          ++rejected;  // unknown type, or no room for the timestamp: skipped, counted
          return true;
        }
        std::byte* dst = out.claim(record_type::kEcho, length + 8);
        if (dst == nullptr) return false;  // fromEngine full: leave it in toEngine, JS will drain
        if (received == 0) received = monotonic_ns();
        std::memcpy(dst, payload, static_cast<std::size_t>(length));
        std::memcpy(dst + length, &received, sizeof received);
        ++echoed;
        return true;
      },
      kBatchLimit);
  if (in.corrupt()) counters.to_engine_corrupt.set(1);
  counters.records_in.add(static_cast<std::uint64_t>(consumed));
  counters.records_out.add(echoed);
  counters.rejected_records.add(rejected);
  return consumed;
}

}  // namespace qpgate::engine
