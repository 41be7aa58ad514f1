// fuzz_order_codec: arbitrary bytes into the order decoder. A decode never
// reads outside the input (ASan), a refusal always says something, and what
// decodes re-encodes to bytes that decode to the same encoding again
// (encode(decode(encode(decode(x)))) == encode(decode(x))).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "orders/codec.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qpgate::orders;  // NOLINT(google-build-using-namespace)
  std::vector<std::uint8_t> input(data, data + size);  // exact-sized, so ASan sees any overread
  OrderMessage m;
  const DecodeResult r = decode(input, m);
  if (!r.ok()) {
    check(!r.text().empty());
    check(r.offset <= size);
    return 0;
  }
  std::vector<std::uint8_t> once(kMaxEncodedBytes);
  once.resize(encode(m, once));
  check(!once.empty());
  OrderMessage again;
  check(decode(once, again).ok());
  check(again.index() == m.index());
  std::vector<std::uint8_t> twice(kMaxEncodedBytes);
  twice.resize(encode(again, twice));
  check(once == twice);
  return 0;
}
