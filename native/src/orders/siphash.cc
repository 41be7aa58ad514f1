#include "orders/siphash.h"

#include <sys/random.h>

#include <cerrno>

namespace qpgate::orders {

bool random_sip_key(SipKey& key) {
  auto* p = reinterpret_cast<std::uint8_t*>(&key);
  std::size_t got = 0;
  while (got < sizeof key) {
    const ssize_t n = getrandom(p + got, sizeof key - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

}  // namespace qpgate::orders
