#include "feed/snapshot_store.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace qpgate::feed {

namespace L = snapshot_layout;

namespace {

std::uint64_t pack_key(std::uint16_t type, std::uint32_t instrument, std::uint16_t key) {
  return (std::uint64_t{type} << 48) | (std::uint64_t{key} << 32) | instrument;
}

std::uint64_t load_word(const std::uint64_t* w, std::memory_order order = std::memory_order_relaxed) {
  return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(w)).load(order);
}

void store_word(std::uint64_t* w, std::uint64_t v, std::memory_order order = std::memory_order_relaxed) {
  std::atomic_ref<std::uint64_t>(*w).store(v, order);
}

}  // namespace

SlotCheck check_slot(std::span<const std::uint8_t> slot, SlotContents* out) {
  if (!L::valid_slot_bytes(slot.size())) return SlotCheck::kCorrupt;
  const std::uint8_t* p = slot.data();
  const auto version = load_le<std::uint64_t>(p + L::kVersionOffset);
  if ((version & 1) != 0) return SlotCheck::kBeingWritten;
  if (load_le<std::uint64_t>(p + slot.size() - L::kSlotTrailerBytes) != version) return SlotCheck::kTorn;
  if (version == 0) return SlotCheck::kEmpty;
  const std::size_t length = load_le<std::uint16_t>(p + L::kMessageLengthOffset);
  if (length == 0) return SlotCheck::kEmpty;
  if (length < kMessageHeaderBytes || length > L::message_capacity(slot.size())) return SlotCheck::kCorrupt;
  const MessageHeaderView m(p + L::kSlotHeaderBytes);
  if (m.length() != length || m.type() != load_le<std::uint16_t>(p + L::kTypeOffset) ||
      m.instrument_id() != load_le<std::uint32_t>(p + L::kInstrumentOffset) ||
      m.key() != load_le<std::uint16_t>(p + L::kKeyOffset)) {
    return SlotCheck::kCorrupt;
  }
  if (out != nullptr) {
    out->version = version;
    out->seq = load_le<std::uint64_t>(p + L::kSequenceOffset);
    out->message = slot.subspan(L::kSlotHeaderBytes, length);
  }
  return SlotCheck::kOk;
}

SnapshotStore::SnapshotStore(std::uint16_t channel, std::uint32_t session, SnapshotConfig config)
    : channel_(channel),
      slot_bytes_(L::valid_slot_bytes(config.slot_bytes) ? config.slot_bytes : L::kDefaultSlotBytes),
      slot_count_(std::max<std::size_t>(config.slot_count, 1)),
      region_bytes_(L::kRegionHeaderBytes + slot_bytes_ * slot_count_),
      staging_(new std::uint64_t[slot_bytes_ / 8]),
      index_(slot_count_),
      base_(static_cast<std::uint8_t*>(::operator new(region_bytes_, std::align_val_t{64}))) {
  std::memset(base_, 0, region_bytes_);
  std::uint8_t h[16] = {};
  store_le(h + L::kMagicOffset, L::kMagic);
  store_le(h + L::kLayoutVersionOffset, L::kLayoutVersion);
  store_le(h + L::kChannelOffset, channel_);
  store_le(h + L::kSessionOffset, session);
  store_le(h + L::kSlotBytesOffset, static_cast<std::uint32_t>(slot_bytes_));
  std::memcpy(base_, h, sizeof h);
  store_le(base_ + L::kSlotCountOffset, static_cast<std::uint32_t>(slot_count_));
}

std::size_t SnapshotStore::reserved_bytes(const SnapshotConfig& c) {
  const std::size_t slot = L::valid_slot_bytes(c.slot_bytes) ? c.slot_bytes : L::kDefaultSlotBytes;
  const std::size_t count = std::max<std::size_t>(c.slot_count, 1);
  return L::kRegionHeaderBytes + slot * count + slot + SlotIndex::table_bytes(count);
}

SnapshotStore::~SnapshotStore() { ::operator delete(base_, std::align_val_t{64}); }

std::uint64_t* SnapshotStore::words(std::size_t slot) const {
  return static_cast<std::uint64_t*>(static_cast<void*>(base_ + slot_offset(slot)));  // 64-byte aligned
}

void SnapshotStore::store_header_word(std::size_t offset, std::uint64_t v) {
  store_word(static_cast<std::uint64_t*>(static_cast<void*>(base_ + offset)), v, std::memory_order_release);
}

// Words of a slot image (from offset 8) that hold the slot header and a
// message of `message_bytes`.
std::size_t SnapshotStore::image_words(std::size_t message_bytes) {
  return (L::kSlotHeaderBytes - 8 + message_bytes + 7) / 8;
}

// The length of the message slot `slot` holds (this thread is its only writer).
std::size_t SnapshotStore::held_length(std::size_t slot) const {
  return load_le<std::uint16_t>(base_ + slot_offset(slot) + L::kMessageLengthOffset);
}

std::uint64_t SnapshotStore::last_sequence() const {
  return load_word(static_cast<const std::uint64_t*>(static_cast<const void*>(base_ + L::kLastSequenceOffset)),
                   std::memory_order_acquire);
}

// Writer side of the seqlock (Boehm, "Can seqlocks get along with programming
// language memory models?"), with the version at both ends of the slot:
//   begin: leading := v+1, trailing := v+1, release fence
//   payload: relaxed word stores
//   end:   trailing := v+2 (release), leading := v+2 (release)
// A reader copying low to high reads the leading version first and the
// trailing one last: if any payload word it copied was being rewritten, the
// trailing copy it reads is already odd or newer than the leading one.
void SnapshotStore::write_begin(std::size_t slot) {
  std::uint64_t* w = words(slot);
  const std::size_t n = slot_bytes_ / 8;
  const std::uint64_t v = load_word(w);
  store_word(w, v + 1);
  store_word(w + n - 1, v + 1);
  std::atomic_thread_fence(std::memory_order_release);
}

void SnapshotStore::write_payload(std::size_t slot, std::span<const std::uint64_t> payload) {
  std::uint64_t* w = words(slot);
  const std::size_t n = std::min(payload.size(), slot_bytes_ / 8 - 2);
  for (std::size_t i = 0; i < n; ++i) store_word(w + 1 + i, payload[i]);
}

void SnapshotStore::write_end(std::size_t slot) {
  std::uint64_t* w = words(slot);
  const std::size_t n = slot_bytes_ / 8;
  const std::uint64_t v = load_word(w) + 1;  // odd + 1
  store_word(w + n - 1, v, std::memory_order_release);
  store_word(w, v, std::memory_order_release);
}

ApplyResult SnapshotStore::apply(const Message& m) {
  if (!is_snapshot_type(m.type())) {
    ++counters_.not_kept;
    return ApplyResult::kNotKept;
  }
  if (m.bytes.size() > L::message_capacity(slot_bytes_)) {
    ++counters_.too_large;
    return ApplyResult::kTooLarge;
  }
  const std::uint64_t key = pack_key(m.header.type(), m.instrument_id(), m.key());
  const std::uint32_t* found = index_.find(key);
  const bool fresh = found == nullptr;
  std::size_t slot = 0;
  if (fresh) {
    if (index_.size() == slot_count_) {
      ++counters_.full;
      return ApplyResult::kFull;
    }
    slot = index_.size();
    index_.insert(key, static_cast<std::uint32_t>(slot));
  } else if (load_word(words(*found) + 1) >= m.seq) {
    ++counters_.stale;
    return ApplyResult::kStale;
  } else {
    slot = *found;
  }

  // The slot image from offset 8, built off to the side: only the words the
  // message covers, and the words the slot's previous message covered beyond
  // them (zeroed), so a slot stays zero past its message without a whole-slot
  // clear per message (a 40-byte quote in a 256-byte slot writes 9 words, not 30).
  const std::size_t used = image_words(m.bytes.size());
  const std::size_t written = fresh ? used : std::max(used, image_words(held_length(slot)));
  std::uint64_t* image = staging_.get();
  std::fill(image, image + kHeaderImageWords, 0);
  std::fill(image + used - 1, image + written, 0);  // the message's last word, partly padding
  std::uint8_t* img = static_cast<std::uint8_t*>(static_cast<void*>(image));
  store_le(img + (L::kSequenceOffset - 8), m.seq);
  store_le(img + (L::kInstrumentOffset - 8), m.instrument_id());
  store_le(img + (L::kTypeOffset - 8), m.header.type());
  store_le(img + (L::kKeyOffset - 8), m.key());
  store_le(img + (L::kMessageLengthOffset - 8), static_cast<std::uint16_t>(m.bytes.size()));
  std::memcpy(img + (L::kSlotHeaderBytes - 8), m.bytes.data(), m.bytes.size());

  write_begin(slot);
  write_payload(slot, {image, written});
  write_end(slot);
  if (fresh) store_header_word(L::kSlotsUsedOffset, index_.size());
  if (m.seq > last_sequence()) store_header_word(L::kLastSequenceOffset, m.seq);
  ++counters_.stored;
  return ApplyResult::kStored;
}

std::size_t SnapshotStore::apply_frame(const ParsedFrame& f) {
  if (f.header().is_control() || (f.header().flags() & flags::kSnapshot) != 0) return 0;
  std::size_t stored = 0;
  for (const Message& m : f) stored += apply(m) == ApplyResult::kStored ? 1 : 0;
  if (f.header().end_seq() - 1 > last_sequence()) store_header_word(L::kLastSequenceOffset, f.header().end_seq() - 1);
  return stored;
}

void SnapshotStore::reset(std::uint32_t session) {
  const std::size_t n = slot_bytes_ / 8 - 2;
  std::memset(staging_.get(), 0, n * 8);
  for (std::size_t slot = 0; slot < index_.size(); ++slot) {
    write_begin(slot);
    write_payload(slot, {staging_.get(), n});
    write_end(slot);
  }
  index_.clear();
  store_header_word(L::kSlotsUsedOffset, 0);
  store_header_word(L::kLastSequenceOffset, 0);
  std::uint8_t w[8];
  store_le(w, session);
  store_le(w + 4, static_cast<std::uint32_t>(slot_bytes_));
  store_header_word(L::kSessionOffset, load_le<std::uint64_t>(w));
}

SlotCheck SnapshotStore::read_slot(std::size_t i, std::span<std::uint8_t> out, SlotContents* contents,
                                   int max_tries) const {
  if (i >= slot_count_ || out.size() < slot_bytes_) return SlotCheck::kCorrupt;
  const std::uint64_t* w = words(i);
  const std::size_t n = slot_bytes_ / 8;
  SlotCheck check = SlotCheck::kBeingWritten;
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    const std::uint64_t v1 = load_word(w, std::memory_order_acquire);
    store_le(out.data(), v1);
    for (std::size_t k = 1; k < n; ++k) store_le(out.data() + 8 * k, load_word(w + k));
    std::atomic_thread_fence(std::memory_order_acquire);
    const std::uint64_t v2 = load_word(w);
    check = v1 == v2 ? check_slot(out.first(slot_bytes_), contents) : SlotCheck::kTorn;
    if (check != SlotCheck::kTorn && check != SlotCheck::kBeingWritten) return check;
  }
  return check;
}

}  // namespace qpgate::feed
