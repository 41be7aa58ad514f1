// A/B arbitration: the first copy of a sequence wins, the other is dropped
// and counted; a hole on one line is filled from the other; a hole on both is
// reported as a gap; a new session resynchronises.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feed/arbiter.h"
#include "test_util.h"

namespace qpgate::feed {
namespace {

constexpr std::uint32_t kS = 0x5e55;

// Records what the arbiter said, as short strings: "A1+3" = frame from line A
// starting at 1 with 3 messages; "gap 4+2"; "session 0>21845 @1".
struct Recorder : ArbiterSink {
  std::vector<std::string> events;
  void deliver(Line line, const ParsedFrame& f, std::uint16_t skip) override {
    events.push_back(std::string(line == Line::kA ? "A" : "B") + std::to_string(f.header().first_seq()) + "+" +
                     std::to_string(f.message_count()) + (skip ? " skip " + std::to_string(skip) : ""));
  }
  void gap(std::uint64_t from, std::uint64_t count) override {
    events.push_back("gap " + std::to_string(from) + "+" + std::to_string(count));
  }
  void session_change(std::uint32_t o, std::uint32_t n, std::uint64_t next) override {
    events.push_back("session " + std::to_string(o) + ">" + std::to_string(n) + " @" + std::to_string(next));
  }
};

struct Feed {
  Arbiter arb;
  Recorder rec;
  std::uint64_t now = 1000;
  explicit Feed(ArbiterConfig c = {.window_frames = 4, .max_wait_ns = 1000}) : arb(c) {}
  void on(Line l, std::uint64_t first, std::uint16_t count = 2, std::uint32_t session = kS) {
    const auto bytes = test::data_frame(session, first, count);
    arb.on_frame(l, test::parsed(bytes), now, rec);
  }
  void hb(Line l, std::uint64_t next) {
    const auto bytes = test::heartbeat(kS, next);
    arb.on_frame(l, test::parsed(bytes), now, rec);
  }
  std::vector<std::string> take() { return std::exchange(rec.events, {}); }
};

using V = std::vector<std::string>;
constexpr Line A = Line::kA;
constexpr Line B = Line::kB;

TEST(Arbiter, AThenBDeliversAOnceAndDropsB) {
  Feed f;
  f.on(A, 1);
  f.on(B, 1);
  f.on(A, 3);
  f.on(B, 3);
  EXPECT_EQ(f.take(), (V{"session 0>24149 @1", "A1+2", "A3+2"}));
  EXPECT_EQ(f.arb.counters().line[0].won, 2u);
  EXPECT_EQ(f.arb.counters().line[1].duplicates, 2u);
}

TEST(Arbiter, BThenADeliversBOnceAndDropsA) {
  Feed f;
  f.on(B, 1);
  f.on(A, 1);
  f.on(A, 3);  // lines may take turns being first
  f.on(B, 3);
  EXPECT_EQ(f.take(), (V{"session 0>24149 @1", "B1+2", "A3+2"}));
  EXPECT_EQ(f.arb.counters().line[0].duplicates, 1u);
  EXPECT_EQ(f.arb.counters().line[1].duplicates, 1u);
}

TEST(Arbiter, AHoleOnAIsFilledByBAndWhatAHeldIsReleasedInOrder) {
  Feed f;
  f.on(A, 1);
  f.on(B, 1);
  f.on(A, 5);  // A lost 3..4
  f.on(A, 7);
  EXPECT_EQ(f.arb.held(), 2u);
  f.on(B, 3);  // B has it
  f.on(B, 5);
  f.on(B, 7);
  EXPECT_EQ(f.take(), (V{"session 0>24149 @1", "A1+2", "B3+2", "A5+2", "A7+2"}));
  EXPECT_EQ(f.arb.held(), 0u);
  f.now += 1'000'000;
  f.arb.poll(f.now, f.rec);
  EXPECT_TRUE(f.take().empty());  // no gap was ever declared
  EXPECT_EQ(f.arb.counters().gaps, 0u);
}

TEST(Arbiter, AHoleOnBothLinesIsReportedAsAGapWhenItHasWaitedLongEnough) {
  Feed f;
  f.on(A, 1);
  f.on(B, 1);
  f.on(A, 5);
  f.on(B, 5);  // both lost 3..4
  f.take();
  f.now += 999;
  f.arb.poll(f.now, f.rec);
  EXPECT_TRUE(f.take().empty());  // still within max_wait_ns
  f.now += 1;
  f.arb.poll(f.now, f.rec);
  EXPECT_EQ(f.take(), (V{"gap 3+2", "A5+2"}));
  EXPECT_EQ(f.arb.expected(), 7u);
  EXPECT_EQ(f.arb.counters().gap_messages, 2u);
  f.on(B, 3);  // a late straggler is a duplicate now
  EXPECT_TRUE(f.take().empty());
}

TEST(Arbiter, AHoleOnBothLinesIsReportedAsSoonAsTheWindowOverflows) {
  Feed f;  // window of 4 frames
  f.on(A, 1);
  for (std::uint64_t s = 5; s <= 13; s += 2) f.on(A, s);  // 5 frames ahead of the 3..4 hole
  EXPECT_EQ(f.take(), (V{"session 0>24149 @1", "A1+2", "gap 3+2", "A5+2", "A7+2", "A9+2", "A11+2", "A13+2"}));
}

TEST(Arbiter, AHeartbeatAheadOnBothLinesRevealsALossAtTheTail) {
  Feed f;
  f.on(A, 1);
  f.hb(A, 5);  // the publisher is at 5, we are at 3
  f.hb(B, 5);
  f.take();
  f.now += 1000;
  f.arb.poll(f.now, f.rec);
  EXPECT_EQ(f.take(), (V{"gap 3+2"}));
}

TEST(Arbiter, ANewSessionResynchronisesAndTheOldSessionsStragglersAreDropped) {
  Feed f;
  f.on(A, 100);
  f.on(A, 105, 2, 0x77);  // gateway restarted; the new session starts wherever its first frame is
  f.on(B, 102);           // B still delivering the old session
  f.on(B, 105, 2, 0x77);
  f.on(A, 107, 2, 0x77);
  EXPECT_EQ(f.take(), (V{"session 0>24149 @100", "A100+2", "session 24149>119 @105", "A105+2", "A107+2"}));
  EXPECT_EQ(f.arb.counters().line[1].other_session_frames, 1u);
  EXPECT_EQ(f.arb.counters().session_changes, 1u);
}

TEST(Arbiter, AFrameThatOverlapsWhatWasDeliveredIsDeliveredFromTheFirstNewMessage) {
  Feed f;
  f.on(A, 1, 4);  // 1..4
  f.on(B, 3, 4);  // 3..6 (a line packed differently)
  EXPECT_EQ(f.take(), (V{"session 0>24149 @1", "A1+4", "B3+4 skip 2"}));
}

}  // namespace
}  // namespace qpgate::feed
