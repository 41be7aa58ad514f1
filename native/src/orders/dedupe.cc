#include "orders/dedupe.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

namespace qpgate::orders {

namespace {

constexpr std::size_t kPageBytes = 4096;
static_assert(sizeof(DedupeEntry) == 64, "a page holds a whole number of entries");
constexpr std::size_t kEntriesPerPage = kPageBytes / sizeof(DedupeEntry);

void* map_anonymous(std::size_t bytes, int extra_flags) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc{};
  return p;
}

}  // namespace

DedupeTable::DedupeTable(std::size_t capacity, const SipKey& key)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity * 2, 16))),
      mask_(slots_ - 1),
      capacity_(std::max<std::size_t>(capacity, 1)),
      key_(key) {
  // The index is resident from here on (MAP_POPULATE): the hash lands anywhere in it.
  index_ = static_cast<std::uint32_t*>(map_anonymous(slots_ * sizeof(std::uint32_t), MAP_POPULATE));
  try {
    // Anonymous pages read as zero and cost memory only once written.
    entries_ = static_cast<DedupeEntry*>(map_anonymous(capacity_ * sizeof(DedupeEntry), MAP_NORESERVE));
  } catch (const std::bad_alloc&) {
    ::munmap(index_, slots_ * sizeof(std::uint32_t));
    throw;
  }
  // Never huge pages (see dedupe.h). Best effort: a kernel without THP refuses the advice.
  (void)::madvise(entries_, capacity_ * sizeof(DedupeEntry), MADV_NOHUGEPAGE);
  populate(kAheadEntries);
}

DedupeTable::~DedupeTable() {
  ::munmap(entries_, capacity_ * sizeof(DedupeEntry));
  ::munmap(index_, slots_ * sizeof(std::uint32_t));
}

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
  // Whole pages: the next call's start stays page aligned.
  const std::size_t to = std::min((resident_ + entries + kEntriesPerPage - 1) / kEntriesPerPage * kEntriesPerPage, capacity_);
  if (to <= resident_) return;
  auto* from = reinterpret_cast<unsigned char*>(entries_ + resident_);
  const std::size_t bytes = (to - resident_) * sizeof(DedupeEntry);
  if (::madvise(from, bytes, MADV_POPULATE_WRITE) != 0) {
    // A kernel before 5.14 (or larger pages): write each page (zero onto zero) so the fault is taken here.
    for (std::size_t at = 0; at < bytes; at += kPageBytes) *reinterpret_cast<volatile unsigned char*>(from + at) = 0;
  }
  resident_ = to;
}

}  // namespace qpgate::orders
