// Memory keys (lkey/rkey) from a CSPRNG.
//
// An rkey is a capability: whoever knows it may READ/WRITE/atomically
// update the region it names. Sequential keys (rxe: index << 8 | an 8-bit
// counter) let a peer guess its neighbours' keys; these are 32 random bits
// from getrandom(2), so a guess hits a given registered region with
// probability 2^-32. 0 and 0xFFFFFFFF are never produced.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "verbs/error.h"

namespace qpgate::verbs::soft {

class KeyGenerator {
 public:
  // Fills `n` bytes at `out`; false on failure. The default is getrandom(2).
  using RandomSource = std::function<bool(void* out, std::size_t n)>;

  KeyGenerator();
  explicit KeyGenerator(RandomSource source);  // for tests

  // A random key other than 0 and 0xFFFFFFFF; EIO if the source fails.
  Result<std::uint32_t> next();

 private:
  RandomSource source_;
  std::array<std::uint32_t, 64> pool_{};
  std::size_t left_ = 0;
};

// getrandom(2) until `n` bytes are filled (EINTR retried); false on error.
bool getrandom_fill(void* out, std::size_t n);

}  // namespace qpgate::verbs::soft
