// The snapshot store's index: snapshot key → slot, open addressing with
// linear probing in one table allocated (and zeroed: touched) up front, at
// least twice as many entries as keys, so the live path never allocates and
// a probe run stays short. Keys are the store's packed (type, key,
// instrument) words; they come from the gateway's own publisher, not from a
// network peer. One thread.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace qpgate::feed {

class SlotIndex {
 public:
  explicit SlotIndex(std::size_t max_keys)
      : capacity_(capacity_for(max_keys)), table_(new Entry[capacity_]()) {}

  // What the constructor allocates.
  static std::size_t table_bytes(std::size_t max_keys) { return capacity_for(max_keys) * sizeof(Entry); }

  // The slot of `key`, or nullptr.
  const std::uint32_t* find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
      const Entry& e = table_[i];
      if (e.used == 0) return nullptr;
      if (e.key == key) return &e.slot;
    }
  }
  // Adds a key not present; the caller keeps size() under max_keys.
  void insert(std::uint64_t key, std::uint32_t slot) {
    std::size_t i = home(key);
    while (table_[i].used != 0) i = (i + 1) & (capacity_ - 1);
    table_[i] = Entry{key, slot, 1};
    ++size_;
  }
  std::size_t size() const { return size_; }
  void clear() {
    for (std::size_t i = 0; i < capacity_; ++i) table_[i] = Entry{};
    size_ = 0;
  }

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t slot = 0;
    std::uint32_t used = 0;
  };
  static std::size_t capacity_for(std::size_t max_keys) { return std::bit_ceil(std::max<std::size_t>(2 * max_keys, 2)); }
  // splitmix64's finalizer: every key bit reaches the low bits the mask keeps.
  std::size_t home(std::uint64_t k) const {
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ULL;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(k ^ (k >> 31)) & (capacity_ - 1);
  }

  std::size_t capacity_;
  std::unique_ptr<Entry[]> table_;
  std::size_t size_ = 0;
};

}  // namespace qpgate::feed
