// Little-endian loads and stores for feed frames and the snapshot region.
//
// Feed frames are little-endian (docs/protocol.md Part 2), unlike the RoCEv2
// headers around them. Fields are not aligned (messages are packed), so these
// go through memcpy; on x86 and arm64 that is one unaligned load or store.
// The header views in frame.h and the snapshot slot layout are the only
// users. qpgate targets little-endian hosts (x86-64, arm64): the snapshot
// region is read raw by remote RDMA READs, so its in-memory words must
// already be in wire order.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace qpgate::feed {

static_assert(std::endian::native == std::endian::little,
              "qpgate feed frames and snapshot slots assume a little-endian host");

template <class T>
inline T load_le(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store_le(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace qpgate::feed
