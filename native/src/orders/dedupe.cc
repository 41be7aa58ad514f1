#include "orders/dedupe.h"

#include <algorithm>
#include <bit>

namespace qpgate::orders {

DedupeTable::DedupeTable(std::size_t expected_ids) {
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(expected_ids * 2, 16));
  entries_.resize(capacity);
  mask_ = capacity - 1;
}

std::size_t DedupeTable::home(std::uint32_t session, std::uint64_t id) const noexcept {
  std::uint64_t x = id ^ (std::uint64_t{session} << 32 | session);  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<std::size_t>(x) & mask_;
}

DedupeEntry* DedupeTable::find(std::uint32_t session, std::uint64_t client_order_id) noexcept {
  for (std::size_t i = home(session, client_order_id);; i = (i + 1) & mask_) {
    DedupeEntry& e = entries_[i];
    if (e.kind == ResponseKind::kEmpty) return nullptr;
    if (e.client_order_id == client_order_id && e.session == session) return &e;
  }
}

DedupeEntry& DedupeTable::insert(std::uint32_t session, std::uint64_t client_order_id) {
  if ((size_ + 1) * 2 > entries_.size()) grow();
  for (std::size_t i = home(session, client_order_id);; i = (i + 1) & mask_) {
    DedupeEntry& e = entries_[i];
    if (e.kind == ResponseKind::kEmpty) {
      e = DedupeEntry{};
      e.session = session;
      e.client_order_id = client_order_id;
      e.kind = ResponseKind::kAck;  // the caller sets the real kind
      ++size_;
      return e;
    }
  }
}

void DedupeTable::grow() {
  std::vector<DedupeEntry> old;
  old.swap(entries_);
  entries_.resize(old.size() * 2);
  mask_ = entries_.size() - 1;
  ++growths_;
  for (const DedupeEntry& e : old) {
    if (e.kind == ResponseKind::kEmpty) continue;
    for (std::size_t i = home(e.session, e.client_order_id);; i = (i + 1) & mask_) {
      if (entries_[i].kind == ResponseKind::kEmpty) {
        entries_[i] = e;
        break;
      }
    }
  }
}

}  // namespace qpgate::orders
