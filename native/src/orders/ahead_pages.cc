#include "orders/ahead_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace qpgate::orders {

AheadPages::AheadPages(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 1)) {
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc{};
  base_ = static_cast<unsigned char*>(p);
  // Best effort: a kernel without THP refuses the advice, and has nothing to undo.
  (void)::madvise(base_, bytes_, MADV_NOHUGEPAGE);
}

AheadPages::~AheadPages() { ::munmap(base_, bytes_); }

void AheadPages::populate(std::size_t from, std::size_t to) noexcept {
  to = std::min(to, bytes_);
  from = from / kPageBytes * kPageBytes;
  if (from >= to) return;
  unsigned char* at = base_ + from;
  const std::size_t n = to - from;
  if (::madvise(at, n, MADV_POPULATE_WRITE) != 0) {
    // A kernel before 5.14 (or pages larger than 4 KiB): a read of a page
    // maps the shared zero page, not one of ours, so write each byte back
    // as it is (populate runs on the owner's thread, its only writer).
    for (std::size_t i = 0; i < n; i += kPageBytes) {
      volatile unsigned char* b = at + i;
      *b = *b;
    }
  }
}

}  // namespace qpgate::orders
