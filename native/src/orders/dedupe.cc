#include "orders/dedupe.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

namespace qpgate::orders {

DedupeTable::DedupeTable(std::size_t capacity, const SipKey& key)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity * 2, 16))),
      mask_(slots_ - 1),
      capacity_(std::max<std::size_t>(capacity, 1)),
      key_(key) {
  // Anonymous pages read as zero (empty entries) and cost memory only once written.
  void* p = ::mmap(nullptr, slots_ * sizeof(DedupeEntry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc{};
  // Never huge pages: where transparent huge pages are "always" (the rdma-vm
  // guest's Debian kernel), a write fault or khugepaged makes each touched
  // 2 MiB of the table resident, so a few hundred ids spread over a 128 MiB
  // table made it all resident, in the background, minutes later (the fault
  // campaign's soak: +100 MB with no new order, test/campaign/campaign.test.ts).
  // Best effort: a kernel without THP refuses the advice, and has nothing to undo.
  (void)::madvise(p, slots_ * sizeof(DedupeEntry), MADV_NOHUGEPAGE);
  entries_ = static_cast<DedupeEntry*>(p);
}

DedupeTable::~DedupeTable() { ::munmap(entries_, slots_ * sizeof(DedupeEntry)); }

std::size_t DedupeTable::home(std::uint32_t session, std::uint64_t id) const noexcept {
  const std::uint64_t words[2] = {id, session};
  return static_cast<std::size_t>(siphash24(key_, words, sizeof words)) & mask_;
}

DedupeEntry* DedupeTable::find(std::uint32_t session, std::uint64_t client_order_id) noexcept {
  for (std::size_t i = home(session, client_order_id);; i = (i + 1) & mask_) {
    DedupeEntry& e = entries_[i];
    if (e.kind == ResponseKind::kEmpty) return nullptr;
    if (e.client_order_id == client_order_id && e.session == session) return &e;
  }
}

DedupeEntry* DedupeTable::insert(std::uint32_t session, std::uint64_t client_order_id) noexcept {
  if (full()) return nullptr;
  for (std::size_t i = home(session, client_order_id);; i = (i + 1) & mask_) {
    DedupeEntry& e = entries_[i];
    if (e.kind == ResponseKind::kEmpty) {
      e = DedupeEntry{};
      e.session = session;
      e.client_order_id = client_order_id;
      e.kind = ResponseKind::kAck;  // the caller sets the real kind
      ++size_;
      return &e;
    }
  }
}

}  // namespace qpgate::orders
