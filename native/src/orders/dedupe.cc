#include "orders/dedupe.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

namespace qpgate::orders {

namespace {

static_assert(AheadPages::kPageBytes % sizeof(DedupeEntry) == 0, "a page holds a whole number of entries");
constexpr std::size_t kEntriesPerPage = AheadPages::kPageBytes / sizeof(DedupeEntry);

}  // namespace

DedupeTable::DedupeTable(std::size_t capacity, const SipKey& key)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity * 2, 16))),
      mask_(slots_ - 1),
      capacity_(std::max<std::size_t>(capacity, 1)),
      key_(key),
      entry_pages_(capacity_ * sizeof(DedupeEntry)),
      entries_(static_cast<DedupeEntry*>(entry_pages_.data())) {
  // The index is resident from here on (MAP_POPULATE): the hash lands anywhere in it.
  void* p = ::mmap(nullptr, slots_ * sizeof(std::uint32_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc{};
  index_ = static_cast<std::uint32_t*>(p);
  populate(kAheadEntries);
}

DedupeTable::~DedupeTable() { ::munmap(index_, slots_ * sizeof(std::uint32_t)); }

std::size_t DedupeTable::home(std::uint32_t session, std::uint64_t id) const noexcept {
  const std::uint64_t words[2] = {id, session};
  return static_cast<std::size_t>(siphash24(key_, words, sizeof words)) & mask_;
}

DedupeEntry* DedupeTable::find(std::uint32_t session, std::uint64_t client_order_id) noexcept {
  for (std::size_t i = home(session, client_order_id);; i = (i + 1) & mask_) {
    const std::uint32_t n = index_[i];
    if (n == 0) return nullptr;
    DedupeEntry& e = entries_[n - 1];
    if (e.client_order_id == client_order_id && e.session == session) return &e;
  }
}

DedupeEntry* DedupeTable::insert(std::uint32_t session, std::uint64_t client_order_id) noexcept {
  if (full()) return nullptr;
  std::size_t i = home(session, client_order_id);
  while (index_[i] != 0) i = (i + 1) & mask_;
  DedupeEntry& e = entries_[size_];
  e.session = session;
  e.client_order_id = client_order_id;
  e.kind = ResponseKind::kAck;  // the caller sets the real kind
  index_[i] = static_cast<std::uint32_t>(++size_);
  return &e;
}

std::size_t DedupeTable::populate_ahead() noexcept {
  const std::size_t want = std::min(size_ + kAheadEntries, capacity_);
  if (resident_ >= want) return 0;
  const std::size_t before = resident_;
  populate(std::min(want - resident_, kPopulateStepEntries));
  return resident_ - before;
}

void DedupeTable::populate(std::size_t entries) noexcept {
  // Whole pages, so that the next call starts where this one ended.
  const std::size_t to = std::min((resident_ + entries + kEntriesPerPage - 1) / kEntriesPerPage * kEntriesPerPage, capacity_);
  if (to <= resident_) return;
  entry_pages_.populate(resident_ * sizeof(DedupeEntry), to * sizeof(DedupeEntry));
  resident_ = to;
}

}  // namespace qpgate::orders
