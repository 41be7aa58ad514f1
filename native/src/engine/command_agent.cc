#include "command_agent.h"

#include <cstdio>
#include <cstring>

#include "clock.h"

namespace qpgate::engine {

bool CommandAgent::set_handler(std::int32_t type, RecordHandler* handler) {
  if (type <= record_type::kEcho || type >= record_type::kMaxRoutedType) return false;
  handlers_[static_cast<std::size_t>(type)] = handler;
  return true;
}

RecordHandler* CommandAgent::handler(std::int32_t type) const {
  if (type <= record_type::kEcho || type >= record_type::kMaxRoutedType) return nullptr;
  return handlers_[static_cast<std::size_t>(type)];
}

int CommandAgent::do_work(std::uint64_t /*now_ns*/) {
  SpscConsumer& in = *context_->to_engine;
  SpscProducer& out = *context_->from_engine;
  EngineCounters& counters = *context_->counters;
  int consumed = 0;
  if (!in.corrupt()) {
    // One receive time per batch: the records of a batch arrived together.
    // Read here, not at the top of the duty cycle, so earlier agents' work
    // does not count as ring latency.
    std::uint64_t received = 0;
    std::uint64_t answered = 0;
    std::uint64_t rejected = 0;
    const std::int32_t max_echo = out.ring().max_record_length() - ring_layout::kHeaderLength - 8;
    consumed = in.read(
        [&](std::int32_t type, const std::byte* payload, std::int32_t length) {
          if (type != record_type::kEcho) {
            RecordHandler* h = handler(type);
            if (h == nullptr) {
              ++rejected;  // unknown type: skipped, counted
              return true;
            }
            return offer(*h, type, payload, length);
          }
          if (length > max_echo) {
            ++rejected;  // no room for the timestamp: skipped, counted
            return true;
          }
          std::byte* dst = out.claim(record_type::kEcho, length + 8);
          if (dst == nullptr) return false;  // fromEngine full: leave it in toEngine, JS will drain
          if (received == 0) received = monotonic_ns();
          std::memcpy(dst, payload, static_cast<std::size_t>(length));
          std::memcpy(dst + length, &received, sizeof received);
          ++answered;
          return true;
        },
        kBatchLimit);
    if (in.corrupt()) counters.to_engine_corrupt.set(1);
    counters.records_in.add(static_cast<std::uint64_t>(consumed));
    counters.records_out.add(answered);
    counters.rejected_records.add(rejected);
  }
  return consumed;
}

bool CommandAgent::offer(RecordHandler& handler, std::int32_t type, const std::byte* payload, std::int32_t length) {
  try {
    return handler.on_record(type, payload, length);
  } catch (...) {
    if (context_->counters != nullptr) context_->counters->agent_errors.add();
    if (context_->faults != nullptr) {
      char who[48];
      std::snprintf(who, sizeof who, "record handler (type %d)", static_cast<int>(type));
      context_->faults->report(who, std::current_exception(), false);
    }
    return true;  // skipped: offering it again would throw again
  }
}

}  // namespace qpgate::engine
