// Anonymous memory written in order (front to back, or round a ring) whose
// pages an idle duty cycle makes resident before the writer gets there.
//
// A first write to a page of anonymous memory is a page fault: 10-17 us on
// the 2-vCPU VM of bench/README.md, taken on the engine thread in the
// middle of an order's handling. Writing in order needs a new page only
// every 4 KiB, and populate() (MADV_POPULATE_WRITE: one call for many
// pages, no fault per page) lets an idle cycle take those pages first. The
// memory is mapped at its full size and costs only what is written or
// populated, never huge pages (with transparent huge pages "always",
// khugepaged makes every 2 MiB range written to resident), and is given
// back whole when the owner goes (no growing, no copying, no allocator).
// The users: the duplicate table's entries (dedupe.h) and each session's
// resend ring (resend_store.h).
#pragma once

#include <cstddef>

namespace qpgate::orders {

class AheadPages {
 public:
  static constexpr std::size_t kPageBytes = 4096;

  // std::bad_alloc if `bytes` of address space cannot be mapped.
  explicit AheadPages(std::size_t bytes);
  ~AheadPages();
  AheadPages(const AheadPages&) = delete;
  AheadPages& operator=(const AheadPages&) = delete;

  void* data() const noexcept { return base_; }
  std::size_t size() const noexcept { return bytes_; }

  // Makes the pages holding bytes [from, to) resident (clamped to size()).
  void populate(std::size_t from, std::size_t to) noexcept;

 private:
  unsigned char* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace qpgate::orders
