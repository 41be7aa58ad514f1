// The snapshot region: latest message per key in fixed slots; seqlocked
// slots whose torn copies are detected, whether the copy is made by a racing
// reader thread or byte for byte as an RDMA READ would.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "feed/snapshot_store.h"
#include "test_util.h"

namespace qpgate::feed {
namespace {

namespace L = snapshot_layout;

// A one-message frame, kept alive with its Message view.
struct OneMessage {
  std::vector<std::uint8_t> frame;
  Message m;
};

OneMessage message(MessageType type, std::uint32_t instrument, std::uint64_t seq, std::vector<std::uint8_t> body,
                   std::uint16_t key = 0, BookAction action = BookAction::kNone) {
  FramePacker p;
  p.start(1, 99);
  EXPECT_EQ(p.append({type, instrument, key, action}, body), AppendStatus::kOk);
  const auto f = p.finish(seq, 0);
  OneMessage out{{f.begin(), f.end()}, {}};
  out.m = *parse_frame(out.frame).value().begin();
  return out;
}

std::vector<std::uint8_t> slot_copy(const SnapshotStore& s, std::size_t i) {
  const auto r = s.region().subspan(s.slot_offset(i), s.slot_bytes());
  return {r.begin(), r.end()};
}

TEST(SnapshotStore, KeepsTheLatestMessagePerTypeAndInstrument) {
  SnapshotStore s(1, 99, {.slot_bytes = 256, .slot_count = 16});
  const auto q1 = message(MessageType::kQuote, 7, 1, {1, 2, 3});
  const auto st = message(MessageType::kTradingStatus, 7, 2, {9});
  const auto q2 = message(MessageType::kQuote, 7, 3, {4, 5, 6, 7});
  EXPECT_EQ(s.apply(q1.m), ApplyResult::kStored);
  EXPECT_EQ(s.apply(st.m), ApplyResult::kStored);
  EXPECT_EQ(s.apply(q2.m), ApplyResult::kStored);
  EXPECT_EQ(s.slots_used(), 2u);  // the second quote replaced the first
  EXPECT_EQ(s.last_sequence(), 3u);

  std::vector<std::uint8_t> out(s.slot_bytes());
  SlotContents c;
  ASSERT_EQ(s.read_slot(0, out, &c), SlotCheck::kOk);
  EXPECT_EQ(c.seq, 3u);
  EXPECT_EQ(c.header().type(), static_cast<std::uint16_t>(MessageType::kQuote));
  EXPECT_EQ(std::vector<std::uint8_t>(c.message.begin(), c.message.end()),
            std::vector<std::uint8_t>(q2.m.bytes.begin(), q2.m.bytes.end()));
  ASSERT_EQ(s.read_slot(1, out, &c), SlotCheck::kOk);
  EXPECT_EQ(c.seq, 2u);
  EXPECT_EQ(s.read_slot(2, out), SlotCheck::kEmpty);
}

// apply() writes only the words a message covers: a shorter message that
// replaces a longer one must still leave the slot zero past it (a remote
// reader copies whole slots), and what it leaves is exactly its own bytes.
TEST(SnapshotStore, AShorterMessageReplacingALongerOneLeavesTheSlotZeroPastIt) {
  SnapshotStore s(1, 99, {.slot_bytes = 256, .slot_count = 4});
  const auto long_quote = message(MessageType::kQuote, 7, 1, std::vector<std::uint8_t>(150, 0xab));
  const auto short_quote = message(MessageType::kQuote, 7, 2, {1, 2, 3});
  ASSERT_EQ(s.apply(long_quote.m), ApplyResult::kStored);
  ASSERT_EQ(s.apply(short_quote.m), ApplyResult::kStored);
  const auto slot = slot_copy(s, 0);
  const std::size_t end = L::kSlotHeaderBytes + short_quote.m.bytes.size();
  EXPECT_EQ(std::vector<std::uint8_t>(slot.begin() + L::kSlotHeaderBytes, slot.begin() + end),
            std::vector<std::uint8_t>(short_quote.m.bytes.begin(), short_quote.m.bytes.end()));
  for (std::size_t i = end; i < slot.size() - L::kSlotTrailerBytes; ++i) {
    ASSERT_EQ(slot[i], 0) << "byte " << i << " of the slot after the short quote";
  }
  SlotContents c;
  std::vector<std::uint8_t> out(s.slot_bytes());
  ASSERT_EQ(s.read_slot(0, out, &c), SlotCheck::kOk);
  EXPECT_EQ(c.seq, 2u);
  EXPECT_EQ(c.message.size(), short_quote.m.bytes.size());
}

TEST(SnapshotStore, BookLevelsAreKeptPerSideAndLevelFromTheHeaderKey) {
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = 16});
  std::uint64_t seq = 1;
  std::vector<OneMessage> keep;
  for (std::uint8_t level = 0; level < 3; ++level) {
    for (const bool ask : {false, true}) {
      keep.push_back(message(MessageType::kBookLevelUpdate, 7, seq++, {level}, book_key(ask, level), BookAction::kAdd));
      EXPECT_EQ(s.apply(keep.back().m), ApplyResult::kStored);
    }
  }
  keep.push_back(message(MessageType::kBookLevelUpdate, 7, seq++, {}, book_key(true, 1), BookAction::kDelete));
  EXPECT_EQ(s.apply(keep.back().m), ApplyResult::kStored);
  EXPECT_EQ(s.slots_used(), 6u);
  std::vector<std::uint8_t> out(s.slot_bytes());
  SlotContents c;
  ASSERT_EQ(s.read_slot(3, out, &c), SlotCheck::kOk);  // ask level 1
  EXPECT_EQ(c.header().action(), static_cast<std::uint8_t>(BookAction::kDelete));
  EXPECT_EQ(c.seq, 7u);
}

TEST(SnapshotStore, RefusesWhatItDoesNotKeepWhatDoesNotFitAndWhatIsOld) {
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = 1});
  EXPECT_EQ(s.apply(message(MessageType::kHeartbeat, 0, 1, {}).m), ApplyResult::kNotKept);
  EXPECT_EQ(s.apply(message(MessageType::kQuote, 1, 2, test::body_of(L::message_capacity(128), 0)).m),
            ApplyResult::kTooLarge);
  EXPECT_EQ(s.apply(message(MessageType::kQuote, 1, 3, {1}).m), ApplyResult::kStored);
  EXPECT_EQ(s.apply(message(MessageType::kQuote, 1, 3, {2}).m), ApplyResult::kStale);
  EXPECT_EQ(s.apply(message(MessageType::kQuote, 2, 4, {1}).m), ApplyResult::kFull);
}

TEST(SnapshotStore, EveryReservedSlotTakesAKeyAndEachKeyFindsItsSlotAgain) {
  // The index is allocated with the store: filling it to the last slot, then
  // updating every key, must find each one (no key lost to a probe run).
  constexpr std::size_t kSlots = 1000;
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = kSlots});
  std::uint64_t seq = 1;
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    ASSERT_EQ(s.apply(message(MessageType::kQuote, 7919 * i, seq++, {1}).m), ApplyResult::kStored) << i;
  }
  EXPECT_EQ(s.apply(message(MessageType::kQuote, 12345678, seq++, {1}).m), ApplyResult::kFull);
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    ASSERT_EQ(s.apply(message(MessageType::kQuote, 7919 * i, seq++, {2}).m), ApplyResult::kStored) << i;
  }
  EXPECT_EQ(s.slots_used(), kSlots);
  std::vector<std::uint8_t> out(128);
  SlotContents c;
  ASSERT_EQ(s.read_slot(kSlots - 1, out, &c), SlotCheck::kOk);
  EXPECT_EQ(c.header().instrument_id(), 7919u * (kSlots - 1));
  EXPECT_EQ(c.seq, seq - 1);
  EXPECT_EQ(s.reserved_bytes(), SnapshotStore::reserved_bytes({.slot_bytes = 128, .slot_count = kSlots}));
}

TEST(SnapshotStore, TheRegionHeaderDescribesTheLayoutForARemoteReader) {
  SnapshotStore s(513, 0xfeedf00d, {.slot_bytes = 192, .slot_count = 10});
  s.apply(message(MessageType::kQuote, 1, 42, {1}).m);
  const std::uint8_t* h = s.region().data();
  EXPECT_EQ(load_le<std::uint32_t>(h + L::kMagicOffset), L::kMagic);
  EXPECT_EQ(load_le<std::uint16_t>(h + L::kLayoutVersionOffset), L::kLayoutVersion);
  EXPECT_EQ(load_le<std::uint16_t>(h + L::kChannelOffset), 513);
  EXPECT_EQ(load_le<std::uint32_t>(h + L::kSessionOffset), 0xfeedf00du);
  EXPECT_EQ(load_le<std::uint32_t>(h + L::kSlotBytesOffset), 192u);
  EXPECT_EQ(load_le<std::uint32_t>(h + L::kSlotCountOffset), 10u);
  EXPECT_EQ(load_le<std::uint64_t>(h + L::kSlotsUsedOffset), 1u);
  EXPECT_EQ(load_le<std::uint64_t>(h + L::kLastSequenceOffset), 42u);
  EXPECT_EQ(s.region().size(), L::kRegionHeaderBytes + 192 * 10);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s.region().data()) % 64, 0u);
}

TEST(SnapshotStore, ANewSessionClearsEverySlotThroughTheSeqlock) {
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = 4});
  s.apply(message(MessageType::kQuote, 1, 1, {1}).m);
  const auto before = slot_copy(s, 0);
  s.reset(100);
  EXPECT_EQ(s.slots_used(), 0u);
  EXPECT_EQ(check_slot(slot_copy(s, 0)), SlotCheck::kEmpty);
  EXPECT_GT(load_le<std::uint64_t>(slot_copy(s, 0).data()), load_le<std::uint64_t>(before.data()));
  EXPECT_EQ(load_le<std::uint32_t>(s.region().data() + L::kSessionOffset), 100u);
}

// --- torn reads ---------------------------------------------------------------

std::vector<std::uint64_t> payload_words(const SnapshotStore& s, std::uint64_t fill) {
  return std::vector<std::uint64_t>(s.slot_bytes() / 8 - 2, fill);
}

TEST(SlotSeqlock, ACopyTakenWhileTheWriterIsInsideTheSlotIsDetected) {
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = 1});
  s.apply(message(MessageType::kQuote, 1, 1, {1}).m);
  ASSERT_EQ(check_slot(slot_copy(s, 0)), SlotCheck::kOk);
  s.write_begin(0);
  EXPECT_EQ(check_slot(slot_copy(s, 0)), SlotCheck::kBeingWritten);
  s.write_payload(0, payload_words(s, 0x1111111111111111));
  EXPECT_EQ(check_slot(slot_copy(s, 0)), SlotCheck::kBeingWritten);
  s.write_end(0);
  EXPECT_NE(check_slot(slot_copy(s, 0)), SlotCheck::kBeingWritten);
}

TEST(SlotSeqlock, AnRdmaReadThatCopiesLowToHighAcrossAnUpdateIsDetectedAsTorn) {
  // The remote NIC copies the slot from low to high addresses while the
  // writer updates it: the leading bytes come from before the update, the
  // rest from after. Every split point must be detected.
  SnapshotStore s(1, 99, {.slot_bytes = 128, .slot_count = 1});
  s.apply(message(MessageType::kQuote, 1, 1, {1, 1, 1}).m);
  for (std::size_t split = 8; split < s.slot_bytes(); split += 8) {
    const auto before = slot_copy(s, 0);
    s.apply(message(MessageType::kQuote, 1, 2 + split, {2, 2, 2}).m);
    const auto after = slot_copy(s, 0);
    std::vector<std::uint8_t> dma(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(split));
    dma.insert(dma.end(), after.begin() + static_cast<std::ptrdiff_t>(split), after.end());
    EXPECT_EQ(check_slot(dma), SlotCheck::kTorn) << "split at " << split;
  }
  // And a copy that reads the leading half mid-write, the trailer after it.
  const auto before = slot_copy(s, 0);
  s.write_begin(0);
  s.write_payload(0, payload_words(s, 0x2222222222222222));
  const auto mid = slot_copy(s, 0);
  s.write_end(0);
  std::vector<std::uint8_t> dma(before.begin(), before.begin() + 64);
  dma.insert(dma.end(), mid.begin() + 64, mid.end());
  EXPECT_EQ(check_slot(dma), SlotCheck::kTorn);
}

TEST(SlotSeqlock, AReaderThreadRacingAWriterThreadNeverAcceptsATornSlot) {
  // The writer fills the whole payload with one repeated word that depends on
  // its sequence; any accepted copy must be uniform. Readers copy word by
  // word with relaxed loads, low to high, as a DMA engine would.
  SnapshotStore s(1, 99, {.slot_bytes = 256, .slot_count = 1});
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> torn{0}, ok{0}, bad{0};

  std::thread reader([&] {
    const std::size_t n = s.slot_bytes() / 8;
    std::vector<std::uint8_t> copy(s.slot_bytes());
    auto* words = static_cast<std::uint64_t*>(static_cast<void*>(const_cast<std::uint8_t*>(s.region().data() + s.slot_offset(0))));
    while (!stop.load(std::memory_order_relaxed) || ok.load() == 0) {
      for (std::size_t k = 0; k < n; ++k) {
        store_le(copy.data() + 8 * k, std::atomic_ref<std::uint64_t>(words[k]).load(std::memory_order_relaxed));
      }
      const auto c = check_slot(copy);
      if (c == SlotCheck::kTorn || c == SlotCheck::kBeingWritten) {
        torn.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      // Written by write_payload below: every payload word equal.
      const auto first = load_le<std::uint64_t>(copy.data() + 8);
      bool uniform = true;
      for (std::size_t k = 1; k + 1 < n; ++k) uniform &= load_le<std::uint64_t>(copy.data() + 8 * k) == first;
      if (first != 0 && !uniform) bad.fetch_add(1);
      ok.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread local_reader([&] {
    std::vector<std::uint8_t> out(s.slot_bytes());
    while (!stop.load(std::memory_order_relaxed)) {
      const auto c = s.read_slot(0, out, nullptr, 1000);
      if (c != SlotCheck::kTorn && c != SlotCheck::kBeingWritten) {
        ok.fetch_add(1, std::memory_order_relaxed);
        const auto first = load_le<std::uint64_t>(out.data() + 8);
        for (std::size_t k = 1; k + 1 < s.slot_bytes() / 8; ++k) {
          if (first != 0 && load_le<std::uint64_t>(out.data() + 8 * k) != first) bad.fetch_add(1);
        }
      }
    }
  });
  for (std::uint64_t i = 1; i <= 20'000; ++i) {
    s.write_begin(0);
    s.write_payload(0, payload_words(s, i * 0x0101010101010101ULL));
    s.write_end(0);
    if (i % 4 == 0) std::this_thread::yield();  // let readers also find the slot at rest
  }
  stop = true;
  reader.join();
  local_reader.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(ok.load(), 0u);
  std::printf("copies: %llu consistent (remote-style and read_slot), %llu remote-style detected torn\n",
              static_cast<unsigned long long>(ok.load()), static_cast<unsigned long long>(torn.load()));
}

}  // namespace
}  // namespace qpgate::feed
