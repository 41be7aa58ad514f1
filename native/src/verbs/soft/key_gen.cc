#include "verbs/soft/key_gen.h"

#include <sys/random.h>

#include <cerrno>

namespace qpgate::verbs::soft {

bool getrandom_fill(void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

KeyGenerator::KeyGenerator() : source_(getrandom_fill) {}
KeyGenerator::KeyGenerator(RandomSource source) : source_(std::move(source)) {}

Result<std::uint32_t> KeyGenerator::next() {
  for (int attempt = 0; attempt < 1024; ++attempt) {
    if (left_ == 0) {
      if (!source_(pool_.data(), sizeof pool_)) {
        return Error{EIO, "the random source (getrandom) failed; no memory key can be made"};
      }
      left_ = pool_.size();
    }
    const std::uint32_t k = pool_[--left_];
    pool_[left_] = 0;  // do not keep used key material around
    if (k != 0 && k != 0xffffffffu) return k;
  }
  return Error{EIO, "the random source returned only 0 and 0xFFFFFFFF"};
}

}  // namespace qpgate::verbs::soft
