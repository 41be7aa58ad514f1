#include "feed/sequencer.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace qpgate::feed {

std::uint32_t new_session_id(std::uint32_t previous) {
  for (;;) {
    std::uint32_t v = 0;
    const ssize_t n = getrandom(&v, sizeof v, 0);
    if (n != static_cast<ssize_t>(sizeof v)) {
      if (n < 0 && errno == EINTR) continue;
      // No entropy source (very old kernel, seccomp): fall back to the clock,
      // which still differs across restarts.
      v = static_cast<std::uint32_t>(std::chrono::system_clock::now().time_since_epoch().count() * 2654435761ULL);
    }
    if (v != 0 && v != previous) return v;
  }
}

}  // namespace qpgate::feed
