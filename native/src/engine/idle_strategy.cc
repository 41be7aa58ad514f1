#include "idle_strategy.h"

#include <sched.h>

#include <algorithm>

#include "cpu_list.h"

namespace qpgate::engine {

const char* idle_kind_name(IdleKind kind) {
  switch (kind) {
    case IdleKind::kSpin: return "spin";
    case IdleKind::kYield: return "yield";
    case IdleKind::kBackoff: return "backoff";
  }
  return "backoff";
}

bool parse_idle_kind(std::string_view name, IdleKind& out) {
  if (name == "spin") out = IdleKind::kSpin;
  else if (name == "yield") out = IdleKind::kYield;
  else if (name == "backoff") out = IdleKind::kBackoff;
  else return false;
  return true;
}

IdleKind default_idle_kind(std::string* why) {
  const std::size_t cpus = process_allowed_cpus().size();
  const IdleKind kind = cpus < 4 ? IdleKind::kBackoff : IdleKind::kSpin;
  if (why != nullptr) {
    *why = "default for " + std::to_string(cpus) + " allowed CPUs: " +
           (kind == IdleKind::kBackoff ? "backoff (fewer than 4 CPUs: a spinner would starve the Node thread)"
                                       : "spin (4 or more CPUs)");
  }
  return kind;
}

void IdleStrategy::idle() {
  switch (kind_) {
    case IdleKind::kSpin:
      cpu_relax();
      return;
    case IdleKind::kYield:
      sched_yield();
      return;
    case IdleKind::kBackoff:
      if (spins_ < params_.max_spins) {
        ++spins_;
        cpu_relax();
      } else if (yields_ < params_.max_yields) {
        ++yields_;
        sched_yield();
      } else {
        site_.park(park_ns_);
        park_ns_ = std::min(park_ns_ * 2, params_.max_park_ns);
      }
      return;
  }
}

}  // namespace qpgate::engine
