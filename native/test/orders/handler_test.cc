// The ack path: what a session gets back for each request, and what the
// gateway enforces before it acknowledges.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <string>

#include "support.h"

namespace qpgate::orders {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)

class HandlerTest : public ::testing::Test {
 protected:
  void open(HandlerConfig c) {
    std::string error;
    handler_ = OrderHandler::open(c, error);
    ASSERT_NE(handler_, nullptr) << error;
  }
  void SetUp() override { open(small_config(dir_.file("journal"))); }
  OrderHandler& h() { return *handler_; }
  std::uint64_t rejects(RejectReason r) { return h().counters().rejects[static_cast<std::size_t>(r)].get(); }

  TempDir dir_;
  std::unique_ptr<OrderHandler> handler_;
};

TEST_F(HandlerTest, AMatchSendsAckThenFillsToBothSides) {
  auto rb = send(h(), kSessionB, sell(1, 100, 10));
  ASSERT_NE(first<Ack>(rb, kSessionB), nullptr);
  EXPECT_EQ(first<Ack>(rb, kSessionB)->app_seq, 1u);

  OutBuffer out;
  h().on_message(kSessionA, bytes_of(buy(1, 100, 4)), 1, out);
  const auto r = decode_all(out);
  ASSERT_EQ(r.size(), 3u);
  const Ack* ack = std::get_if<Ack>(&r[0].message);
  ASSERT_NE(ack, nullptr) << "the Ack goes before the fills";
  EXPECT_EQ(ack->app_seq, 1u);
  const Fill* taker = first<Fill>(r, kSessionA);
  const Fill* maker = first<Fill>(r, kSessionB);
  ASSERT_TRUE(taker && maker);
  EXPECT_EQ(taker->liquidity, Liquidity::kTaker);
  EXPECT_EQ(taker->leaves_quantity, 0);
  EXPECT_EQ(taker->app_seq, 2u);
  EXPECT_EQ(maker->liquidity, Liquidity::kMaker);
  EXPECT_EQ(maker->leaves_quantity, 6);
  EXPECT_EQ(maker->app_seq, 2u) << "each session has its own sequence";
  EXPECT_EQ(taker->trade_id, maker->trade_id);
  EXPECT_EQ(maker->client_order_id, 1u);
  ASSERT_EQ(out.trades().size(), 1u);
  EXPECT_EQ(out.trades()[0].aggressor_side, Side::kBuy);
  EXPECT_EQ(out.trades()[0].trade_id, taker->trade_id);
  ASSERT_EQ(out.level_changes().size(), 1u);
  EXPECT_EQ(out.level_changes()[0].quantity, 6);
  EXPECT_EQ(out.level_changes()[0].action, LevelAction::kModify);
}

TEST_F(HandlerTest, RejectsAreSequencedToo) {
  send(h(), kSessionA, buy(1, 100, 1));
  const auto r = send(h(), kSessionA, NewOrder{2, 99, Side::kBuy, 100, 1, TimeInForce::kDay, kAccountA});
  const Reject* rj = first<Reject>(r, kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kUnknownInstrument);
  EXPECT_EQ(rj->app_seq, 2u);
  EXPECT_EQ(rj->client_order_id, 2u);
  EXPECT_EQ(h().last_app_seq(kSessionA), 2u);
  EXPECT_EQ(rejects(RejectReason::kUnknownInstrument), 1u);
}

TEST_F(HandlerTest, AResentOrderGetsItsOriginalAckNotASecondOrder) {
  const Ack original = must<Ack>(send(h(), kSessionA, buy(5, 100, 1)), kSessionA);
  const auto again = send(h(), kSessionA, buy(5, 100, 1));
  ASSERT_EQ(again.size(), 1u);
  const Ack* ack = first<Ack>(again, kSessionA);
  ASSERT_NE(ack, nullptr) << "not a DUPLICATE reject";
  EXPECT_TRUE(ack->possible_resend);
  EXPECT_EQ(ack->app_seq, original.app_seq);
  EXPECT_EQ(ack->order_id, original.order_id);
  EXPECT_EQ(h().book(kInstrument)->resting_orders(), 1u);
  EXPECT_EQ(h().last_app_seq(kSessionA), 1u) << "a resend consumes no sequence number";
  EXPECT_EQ(h().counters().resends.get(), 1u);
}

TEST_F(HandlerTest, AResentRejectedIdGetsTheOriginalRejectEvenIfItWouldPassNow) {
  std::atomic_ref<std::uint64_t>{*h().risk().find(kAccountA)->remote_word(RemoteOwnedWords::kKillSwitch)}.store(1);
  const Reject first_answer = must<Reject>(send(h(), kSessionA, buy(5, 100, 1)), kSessionA);
  std::atomic_ref<std::uint64_t>{*h().risk().find(kAccountA)->remote_word(RemoteOwnedWords::kKillSwitch)}.store(0);
  const Reject* again = first<Reject>(send(h(), kSessionA, buy(5, 100, 1)), kSessionA);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->reason, RejectReason::kKillSwitch);
  EXPECT_EQ(again->app_seq, first_answer.app_seq);
  EXPECT_TRUE(again->possible_resend);
}

TEST_F(HandlerTest, KillSwitchSetByARemoteAtomicRejectsTheNextOrderButNotCancels) {
  send(h(), kSessionA, buy(1, 100, 1));
  auto* word = h().risk().find(kAccountA)->remote_word(RemoteOwnedWords::kKillSwitch);
  std::atomic_ref<std::uint64_t>{*word}.fetch_add(1);  // what the HCA's FETCH_ADD does
  const Reject* rj = first<Reject>(send(h(), kSessionA, buy(2, 100, 1)), kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kKillSwitch);
  EXPECT_NE(rj->text.find("account 100: kill switch is set"), std::string_view::npos) << rj->text;
  EXPECT_NE(first<CancelAck>(send(h(), kSessionA, Cancel{3, 1, kInstrument}), kSessionA), nullptr)
      << "a killed account can still pull its orders";
  EXPECT_EQ(rejects(RejectReason::kKillSwitch), 1u);
}

TEST_F(HandlerTest, CreditLimitCountsOpenNotionalAndFreesItOnCancel) {
  auto* limit = h().risk().find(kAccountA)->remote_word(RemoteOwnedWords::kCreditLimit);
  std::uint64_t expected = 1'000'000'000;
  ASSERT_TRUE(std::atomic_ref<std::uint64_t>{*limit}.compare_exchange_strong(expected, 1000));  // a remote CMP_SWAP
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(1, 100, 6)), kSessionA), nullptr);  // 600
  EXPECT_EQ(h().risk().find(kAccountA)->open_notional(), 600u);
  const Reject* rj = first<Reject>(send(h(), kSessionA, buy(2, 100, 5)), kSessionA);  // 600 + 500 > 1000
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kCreditLimit);
  EXPECT_NE(rj->text.find("open notional 600 + order notional 500 exceeds credit limit 1000"), std::string_view::npos)
      << rj->text;
  send(h(), kSessionA, Cancel{3, 1, kInstrument});
  EXPECT_EQ(h().risk().find(kAccountA)->open_notional(), 0u);
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(4, 100, 5)), kSessionA), nullptr);
}

TEST_F(HandlerTest, FillsMoveLocalOwnedWordsOnly) {
  send(h(), kSessionB, sell(1, 100, 10));
  send(h(), kSessionA, buy(1, 100, 4));
  RiskRegion& a = *h().risk().find(kAccountA);
  RiskRegion& b = *h().risk().find(kAccountB);
  EXPECT_EQ(a.position(), 4);
  EXPECT_EQ(b.position(), -4);
  EXPECT_EQ(a.open_notional(), 0u);
  EXPECT_EQ(b.open_notional(), 600u);
  EXPECT_EQ(a.open_orders(), 0u);
  EXPECT_EQ(b.open_orders(), 1u);
  EXPECT_EQ(a.traded_notional(), 400u);
  EXPECT_EQ(a.version() % 2, 0u) << "no update in progress";
  EXPECT_EQ(a.credit_limit(), 1'000'000'000u) << "remote-owned words untouched";
}

TEST_F(HandlerTest, ThrottleRejectsOverTheRateAndRefills) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.sessions[0].throttle = ThrottleConfig{1, 2};
  open(c);
  const std::uint64_t t = 5'000'000'000;
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(1, 100, 1), t), kSessionA), nullptr);
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(2, 100, 1), t), kSessionA), nullptr);
  const Reject* rj = first<Reject>(send(h(), kSessionA, buy(3, 100, 1), t), kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kThrottled);
  EXPECT_NE(first<CancelAck>(send(h(), kSessionA, Cancel{4, 1, kInstrument}, t), kSessionA), nullptr)
      << "cancels are not throttled";
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(5, 100, 1), t + 1'000'000'000), kSessionA), nullptr);
  EXPECT_EQ(rejects(RejectReason::kThrottled), 1u);
}

TEST_F(HandlerTest, ThrottledRequestsAreNotSequencedJournaledOrRemembered) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.sessions[0].throttle = ThrottleConfig{1, 2};
  open(c);
  const std::uint64_t t = 5'000'000'000;
  const std::uint64_t records = h().journal().stats().records_appended;
  // A flood of invalid orders (an instrument nobody trades), cancels of
  // orders that do not exist and undecodable bytes: the throttle comes
  // before any of them is checked, journaled or remembered.
  std::uint64_t throttled = 0;
  for (std::uint64_t i = 1; i <= 300; ++i) {
    NewOrder bad = buy(i, 100, 1);
    bad.instrument_id = 999;
    const OrderMessage m = i % 3 == 0 ? OrderMessage{Cancel{i, 77'000 + i, kInstrument}} : OrderMessage{bad};
    for (const Received& r : send(h(), kSessionA, m, t)) {
      const Reject* rj = std::get_if<Reject>(&r.message);
      ASSERT_NE(rj, nullptr);
      if (rj->reason != RejectReason::kThrottled) continue;
      ++throttled;
      EXPECT_EQ(rj->app_seq, 0u) << "a THROTTLED reject is not sequenced";
      EXPECT_EQ(r.app_seq, 0u);
      EXPECT_EQ(rj->client_order_id, i);
    }
  }
  OutBuffer out;
  const std::uint8_t garbage[] = {0xff, 0xff, 0xff};
  h().on_message(kSessionA, garbage, t, out);
  const auto g = decode_all(out);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(std::get<Reject>(g[0].message).reason, RejectReason::kThrottled) << "undecodable bytes take a token too";

  EXPECT_EQ(throttled, 298u) << "the burst of 2 is all that was checked";
  EXPECT_EQ(h().journal().stats().records_appended - records, 2u) << "only the two checked rejects were journaled";
  EXPECT_EQ(h().dedupe().size(), 2u);
  EXPECT_EQ(h().last_app_seq(kSessionA), 2u);
  // Nothing was remembered for a throttled id: it may be used again once the rate allows.
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(4, 100, 1), t + 1'000'000'000), kSessionA), nullptr);
}

TEST_F(HandlerTest, ASessionPastItsShareOfClientOrderIdsGetsIdLimitAndOthersGoOn) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.max_client_order_ids = 3;
  open(c);
  for (std::uint64_t i = 1; i <= 3; ++i) EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(i, 100, 1)), kSessionA), nullptr);
  const Reject& rj = must<Reject>(send(h(), kSessionA, buy(4, 100, 1)), kSessionA);
  EXPECT_EQ(rj.reason, RejectReason::kIdLimit);
  EXPECT_EQ(rj.app_seq, 0u);
  EXPECT_NE(std::string_view{rj.text}.find("maxClientOrderIds"), std::string_view::npos) << rj.text;
  EXPECT_EQ(h().last_app_seq(kSessionA), 3u);
  // Its ids already answered still get their answers; another session is not touched.
  EXPECT_TRUE(must<Ack>(send(h(), kSessionA, buy(2, 100, 1)), kSessionA).possible_resend);
  EXPECT_NE(first<Ack>(send(h(), kSessionB, sell(1, 200, 1)), kSessionB), nullptr);
  EXPECT_EQ(rejects(RejectReason::kIdLimit), 1u);
}

TEST_F(HandlerTest, AFullDuplicateTableRefusesNewIdsWithoutGrowing) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.client_order_id_capacity = 4;
  open(c);
  ASSERT_EQ(h().dedupe().capacity(), 4u);
  for (std::uint64_t i = 1; i <= 2; ++i) ASSERT_NE(first<Ack>(send(h(), kSessionA, buy(i, 100, 1)), kSessionA), nullptr);
  for (std::uint64_t i = 1; i <= 2; ++i) ASSERT_NE(first<Ack>(send(h(), kSessionB, sell(i, 200, 1)), kSessionB), nullptr);
  const Reject& rj = must<Reject>(send(h(), kSessionB, sell(3, 200, 1)), kSessionB);
  EXPECT_EQ(rj.reason, RejectReason::kIdLimit);
  EXPECT_NE(std::string_view{rj.text}.find("clientOrderIdCapacity"), std::string_view::npos) << rj.text;
  EXPECT_EQ(h().dedupe().size(), 4u);
  EXPECT_EQ(h().dedupe().capacity(), 4u);

  // A journal with more ids than the table holds refuses to start, naming the key.
  handler_.reset();
  c.client_order_id_capacity = 3;
  std::string error;
  EXPECT_EQ(OrderHandler::open(c, error), nullptr);
  EXPECT_NE(error.find("clientOrderIdCapacity"), std::string::npos) << error;
}

TEST_F(HandlerTest, AFailedJournalAnswersJournalFailureAtOnceAndRecordsNothing) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.journal.sync = SyncPolicy::kNoSync;
  c.journal.buffer_bytes = 1;  // every append is written at once
  open(c);
  ASSERT_NE(first<Ack>(send(h(), kSessionA, buy(1, 100, 1)), kSessionA), nullptr);
  // The file may not grow: the next write(2) fails with EFBIG.
  struct rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit capped = old;
  capped.rlim_cur = h().journal().appended_position();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &capped), 0);
  OutBuffer out;
  h().on_message(kSessionA, bytes_of(buy(2, 100, 1)), 1, out);
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_TRUE(h().journal().failed());
  const auto r = decode_all(out);
  ASSERT_EQ(r.size(), 1u);
  const Reject& rj = std::get<Reject>(r[0].message);
  EXPECT_EQ(rj.reason, RejectReason::kJournalFailure);
  EXPECT_EQ(rj.app_seq, 0u) << "not sequenced: nothing was done";
  EXPECT_EQ(out.durable_position(), 0u) << "nothing to wait for: the answer goes out now";
  EXPECT_NE(std::string_view{rj.text}.find("journal failed"), std::string_view::npos) << rj.text;
  // Every later request, a Hello included, is answered the same way at once.
  for (const OrderMessage& m : {OrderMessage{buy(3, 100, 1)}, OrderMessage{Cancel{4, 1, kInstrument}}, OrderMessage{Hello{0}}}) {
    OutBuffer o;
    h().on_message(kSessionA, bytes_of(m), 1, o);
    const auto rr = decode_all(o);
    ASSERT_EQ(rr.size(), 1u);
    EXPECT_EQ(std::get<Reject>(rr[0].message).reason, RejectReason::kJournalFailure);
    EXPECT_EQ(o.durable_position(), 0u);
  }
  EXPECT_EQ(h().last_app_seq(kSessionA), 1u);
  EXPECT_EQ(rejects(RejectReason::kJournalFailure), 4u);
}

TEST(DedupeTable, TheSlotOfAnIdDependsOnTheKeySoCollisionsCannotBeChosen) {
  // Ids that share a slot under one key are spread under another.
  DedupeTable one(1000, SipKey{1, 2});
  DedupeTable two(1000, SipKey{3, 4});
  for (std::uint64_t id = 1; id <= 1000; ++id) {
    ASSERT_NE(one.insert(kSessionA, id), nullptr);
    ASSERT_NE(two.insert(kSessionA, id), nullptr);
  }
  for (std::uint64_t id = 1; id <= 1000; ++id) {
    ASSERT_NE(one.find(kSessionA, id), nullptr);
    EXPECT_EQ(one.find(kSessionB, id), nullptr);
  }
  std::size_t same_slot = 0;
  for (std::uint64_t id = 1; id <= 1000; ++id) same_slot += one.home(kSessionA, id) == two.home(kSessionA, id);
  EXPECT_LT(same_slot, 20u) << "the layout must change with the key";
  EXPECT_EQ(one.insert(kSessionA, 5000), nullptr) << "full at its capacity: it never grows";
}

// What /proc/self/smaps says of the mapping holding `at`: its VmFlags line and its Rss.
struct MappingOf {
  std::string vm_flags;
  long rss_kb = -1;
};
MappingOf mapping_of(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(at);
  MappingOf m;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2) {  // a mapping's header line
      inside = a >= from && a < to;
      continue;
    }
    if (!inside) continue;
    long kb = 0;
    if (std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) m.rss_kb = kb;
    if (line.rfind("VmFlags:", 0) == 0) m.vm_flags = line;
  }
  return m;
}

TEST(DedupeTable, EntriesFillPagesInOrderAheadOfTheInsertsNeverAsHugePages) {
  // The gateway's default size (1 << 20 ids). The hash spreads ids over the
  // index (resident from the start), never over the entries: they follow one
  // another, so ids touch a page per 64 of them. populate_ahead(), as an idle
  // duty cycle runs it between orders, keeps the pages of the next ids
  // resident before an insert writes there (no page fault on an order's
  // path), and no further: memory follows the ids. Huge pages (THP
  // "always", or khugepaged later) would make 2 MiB resident at a time; the
  // no-huge-page advice ("nh" in VmFlags) holds wherever THP is configured.
  DedupeTable t(std::size_t{1} << 20, SipKey{5, 6});
  EXPECT_EQ(t.resident_entries(), DedupeTable::kAheadEntries) << "the first ids' pages, at construction";
  DedupeEntry* const first = t.insert(kSessionA, 1);
  ASSERT_NE(first, nullptr);
  for (std::uint64_t id = 2; id <= 20'000; ++id) {
    t.populate_ahead();
    if (id % 64 == 0) {
      ASSERT_TRUE(resident(first + (id - 1) + DedupeTable::kAheadEntries - 1))
          << "the page " << DedupeTable::kAheadEntries << " ids ahead of id " << id << " is resident before it is needed";
    }
    DedupeEntry* e = t.insert(kSessionA, id);
    ASSERT_EQ(e, first + (id - 1)) << "entries in the order ids arrive";
    e->kind = ResponseKind::kAck;
  }
  EXPECT_LE(t.resident_entries(), 20'000 + DedupeTable::kAheadEntries + DedupeTable::kPopulateStepEntries);
  EXPECT_FALSE(resident(first + 20'000 + 4 * DedupeTable::kAheadEntries)) << "nothing far past the ids is made resident";
  EXPECT_EQ(t.find(kSessionA, 12'345), first + 12'344);
  const MappingOf m = mapping_of(first);
  ASSERT_GE(m.rss_kb, 0) << "the table's mapping is in /proc/self/smaps";
  EXPECT_NE(m.vm_flags.find(" nh"), std::string::npos) << "MADV_NOHUGEPAGE on the entries: " << m.vm_flags;
  // 20,000 ids of 64 B and the populated pages ahead of them, far below one more huge page (2048 KiB).
  EXPECT_LE(m.rss_kb, (20'000 + DedupeTable::kAheadEntries + DedupeTable::kPopulateStepEntries) * 64 / 1024 + 4) << "resident KiB";
}

TEST(SipHash, MatchesTheReferenceVectors) {
  // The reference implementation's vectors: key 00..0f, messages 00..(n-1).
  SipKey key;
  std::uint8_t k[16];
  for (int i = 0; i < 16; ++i) k[i] = static_cast<std::uint8_t>(i);
  std::memcpy(&key.k0, k, 8);
  std::memcpy(&key.k1, k + 8, 8);
  std::uint8_t m[16];
  for (int i = 0; i < 16; ++i) m[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(siphash24(key, m, 0), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(siphash24(key, m, 1), 0x74f839c593dc67fdULL);
  EXPECT_EQ(siphash24(key, m, 8), 0x93f5f5799a932462ULL);
  EXPECT_EQ(siphash24(key, m, 15), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(siphash24(key, m, 16), 0x3f2acc7f57c29bdbULL);
}

TEST(TokenBucket, BurstThenRate) {
  TokenBucket b{ThrottleConfig{1000, 3}};
  const std::uint64_t t = 1'000'000;
  EXPECT_TRUE(b.try_take(t));
  EXPECT_TRUE(b.try_take(t));
  EXPECT_TRUE(b.try_take(t));
  EXPECT_FALSE(b.try_take(t));
  EXPECT_FALSE(b.try_take(t + 999'999));
  EXPECT_TRUE(b.try_take(t + 1'000'000)) << "one token per ms at 1000/s";
  EXPECT_EQ(b.tokens_now(t + 3'600'000'000'000), 3u) << "never above the burst, no overflow after an hour";
}

TEST_F(HandlerTest, PriceCollarInTicksAroundTheReferenceThenTheLastTrade) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.instruments[0].collar = CollarConfig{CollarMode::kTicks, 10, 1000};  // +-50 at tick 5
  open(c);
  const Reject* rj = first<Reject>(send(h(), kSessionA, buy(1, 1055, 1)), kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kPriceCollar);
  EXPECT_NE(rj->text.find("buy price 1055 is above the collar bound 1050 (reference 1000)"), std::string_view::npos)
      << rj->text;
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(2, 1050, 1)), kSessionA), nullptr);
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(3, 500, 1)), kSessionA), nullptr) << "a passive buy far below is fine";
  EXPECT_EQ(must<Reject>(send(h(), kSessionB, sell(1, 945, 1)), kSessionB).reason, RejectReason::kPriceCollar);
  send(h(), kSessionB, sell(2, 1050, 1));  // trades at 1050: the new reference
  EXPECT_NE(first<Ack>(send(h(), kSessionA, buy(4, 1100, 1)), kSessionA), nullptr);
}

TEST(PriceCollar, BasisPointsRoundDownToTicks) {
  PriceCollar c{CollarConfig{CollarMode::kBps, 150, 10000}, 7};  // 1.5% of 10000 = 150 -> 147
  EXPECT_EQ(c.bounds().upper, 10147);
  EXPECT_EQ(c.bounds().lower, 9853);
  PriceCollar none{CollarConfig{CollarMode::kBps, 150, 0}, 1};
  EXPECT_TRUE(none.allows(true, 1'000'000)) << "no reference yet: no collar";
}

TEST_F(HandlerTest, SelfMatchIsRejectedUpFront) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.sessions[0].accounts = {kAccountA, kAccountB};
  open(c);
  send(h(), kSessionA, buy(1, 100, 5, kAccountA));
  const Reject* rj = first<Reject>(send(h(), kSessionA, sell(2, 100, 5, kAccountA)), kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kSelfMatch);
  EXPECT_NE(first<Ack>(send(h(), kSessionA, sell(3, 100, 5, kAccountB)), kSessionA), nullptr);
}

TEST_F(HandlerTest, SelfMatchAfterPartialFillsCancelsTheAggressorsRest) {
  send(h(), kSessionB, sell(1, 100, 2));            // B
  // A rests a sell at 105 under its own account, then buys through B's 100 and its own 105.
  send(h(), kSessionA, NewOrder{1, kInstrument, Side::kSell, 105, 2, TimeInForce::kDay, kAccountA});
  const auto r = send(h(), kSessionA, buy(2, 105, 5));
  ASSERT_EQ(all<Fill>(r, kSessionA).size(), 1u);
  const CancelAck* ca = first<CancelAck>(r, kSessionA);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->reason, CancelReason::kSelfMatch);
  EXPECT_EQ(ca->cancelled_quantity, 3);
  EXPECT_EQ(ca->orig_client_order_id, 2u);
}

TEST_F(HandlerTest, IocRemainderIsCancelledUnsolicited) {
  send(h(), kSessionB, sell(1, 100, 2));
  const auto r = send(h(), kSessionA, buy(1, 100, 5, kAccountA, TimeInForce::kIoc));
  const CancelAck* ca = first<CancelAck>(r, kSessionA);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->reason, CancelReason::kIocRemainder);
  EXPECT_EQ(ca->cancelled_quantity, 3);
  EXPECT_EQ(ca->app_seq, 3u) << "Ack 1, Fill 2, CancelAck 3";
  EXPECT_EQ(h().book(kInstrument)->resting_orders(), 0u);
  EXPECT_EQ(h().risk().find(kAccountA)->open_orders(), 0u);
  EXPECT_EQ(h().pool().in_use(), 0u);
}

TEST_F(HandlerTest, CancelOfAnOrderThatIsNotOpenSaysWhy) {
  const Reject* none = first<Reject>(send(h(), kSessionA, Cancel{2, 1, kInstrument}), kSessionA);
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->reason, RejectReason::kUnknownOrder);
  EXPECT_NE(none->text.find("has no order with client_order_id 1"), std::string_view::npos) << none->text;
  send(h(), kSessionB, sell(1, 100, 1));
  send(h(), kSessionA, buy(3, 100, 1));  // fills B's order
  const Reject* filled = first<Reject>(send(h(), kSessionB, Cancel{2, 1, kInstrument}), kSessionB);
  ASSERT_NE(filled, nullptr);
  EXPECT_NE(filled->text.find("is no longer open"), std::string_view::npos) << filled->text;
  const Reject* other = first<Reject>(send(h(), kSessionB, Cancel{3, 3, kInstrument}), kSessionB);
  ASSERT_NE(other, nullptr) << "a session cannot cancel another session's order";
  EXPECT_EQ(other->reason, RejectReason::kUnknownOrder);
}

TEST_F(HandlerTest, ReplaceAnswersWithThePriorityRule) {
  send(h(), kSessionA, buy(1, 100, 5));
  const ReplaceAck* down = first<ReplaceAck>(send(h(), kSessionA, Replace{2, 1, kInstrument, 100, 3}), kSessionA);
  ASSERT_NE(down, nullptr);
  EXPECT_TRUE(down->priority_kept);
  EXPECT_EQ(h().risk().find(kAccountA)->open_notional(), 300u);
  const ReplaceAck* moved = first<ReplaceAck>(send(h(), kSessionA, Replace{3, 1, kInstrument, 105, 3}), kSessionA);
  ASSERT_NE(moved, nullptr);
  EXPECT_FALSE(moved->priority_kept);
  EXPECT_EQ(moved->order_id, down->order_id);
  LevelView best{};
  ASSERT_TRUE(h().book(kInstrument)->best(Side::kBuy, best));
  EXPECT_EQ(best.price, 105);
  const auto r = send(h(), kSessionB, sell(1, 105, 3));
  const Fill* f = first<Fill>(r, kSessionA);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->client_order_id, 1u) << "fills name the order's own id";
}

TEST_F(HandlerTest, CancelOnDisconnectCancelsTheSessionsRestingOrders) {
  send(h(), kSessionA, buy(1, 100, 5));
  send(h(), kSessionA, buy(2, 95, 5));
  send(h(), kSessionB, sell(1, 200, 5));
  OutBuffer out;
  h().on_disconnect(kSessionA, 1, out);
  const auto r = decode_all(out);
  const auto cancels = all<CancelAck>(r, kSessionA);
  ASSERT_EQ(cancels.size(), 2u);
  EXPECT_EQ(cancels[0].reason, CancelReason::kDisconnect);
  EXPECT_EQ(cancels[0].orig_client_order_id, 1u) << "oldest first";
  EXPECT_EQ(cancels[1].app_seq, 4u) << "sequenced: the client sees them when it resumes";
  LevelView v{};
  EXPECT_FALSE(h().book(kInstrument)->best(Side::kBuy, v));
  EXPECT_TRUE(h().book(kInstrument)->best(Side::kSell, v)) << "other sessions' orders stay";
  EXPECT_EQ(out.level_changes().size(), 2u);
}

TEST_F(HandlerTest, CancelOnDisconnectCanBeTurnedOff) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.sessions[0].cancel_on_disconnect = false;
  open(c);
  send(h(), kSessionA, buy(1, 100, 5));
  OutBuffer out;
  h().on_disconnect(kSessionA, 1, out);
  EXPECT_TRUE(out.messages().empty());
  EXPECT_EQ(h().book(kInstrument)->resting_orders(), 1u);
}

TEST_F(HandlerTest, GarbageIsRejectedMalformedWithTheDecodersReasonAndCounted) {
  const std::vector<std::uint8_t> garbage{0x12, 0x03, 0x08, 0x2a, 0x00};
  OutBuffer out;
  h().on_message(kSessionA, garbage, 1, out);
  const auto r = decode_all(out);
  const Reject* rj = first<Reject>(r, kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kMalformed);
  EXPECT_EQ(rj->client_order_id, 42u);
  EXPECT_NE(rj->text.find("invalid field number"), std::string_view::npos) << rj->text;
  EXPECT_EQ(h().counters().decode_errors[static_cast<std::size_t>(DecodeError::kInvalidTag)].get(), 1u);
  EXPECT_EQ(rejects(RejectReason::kMalformed), 1u);
  const Reject* gw = first<Reject>(send(h(), kSessionA, Ack{1, 1, 1, false}), kSessionA);
  ASSERT_NE(gw, nullptr);
  EXPECT_NE(gw->text.find("Ack is a gateway message"), std::string_view::npos) << gw->text;
}

TEST_F(HandlerTest, EntitlementAndValidation) {
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(1, 100, 1, kAccountB)), kSessionA).reason,
            RejectReason::kNotEntitled);
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(2, 100, 1, 999)), kSessionA).reason, RejectReason::kUnknownAccount);
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(3, 101, 1)), kSessionA).reason, RejectReason::kInvalidPrice);
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(4, 100, -1)), kSessionA).reason, RejectReason::kInvalidQuantity);
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(7, 100, 0)), kSessionA).reason, RejectReason::kMalformed)
      << "proto3 leaves a zero quantity off the wire: it is missing";
  EXPECT_EQ(must<Reject>(send(h(), kSessionA, buy(5, 100, 10001)), kSessionA).reason, RejectReason::kInvalidQuantity);
  EXPECT_EQ(must<Reject>(send(h(), 77, buy(6, 100, 1)), 77).reason, RejectReason::kNotEntitled)
      << "an unconfigured session";
}

TEST_F(HandlerTest, HelloGetsWelcomeOrSequenceAhead) {
  send(h(), kSessionA, buy(1, 100, 1));
  send(h(), kSessionA, buy(2, 100, 1));
  const Welcome* w = first<Welcome>(send(h(), kSessionA, Hello{1}), kSessionA);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->app_seq, 2u);
  EXPECT_EQ(w->resend_from, 2u);
  const Reject* ahead = first<Reject>(send(h(), kSessionA, Hello{9}), kSessionA);
  ASSERT_NE(ahead, nullptr);
  EXPECT_EQ(ahead->reason, RejectReason::kSequenceAhead);
  EXPECT_EQ(ahead->app_seq, 0u) << "not sequenced";
  EXPECT_EQ(h().last_app_seq(kSessionA), 2u);
}

TEST_F(HandlerTest, GroupCommitHoldsAnswersUntilTheJournalIsDurable) {
  HandlerConfig c = small_config(dir_.file("journal2"));
  c.journal.sync = SyncPolicy::kGroupCommit;
  c.journal.group_max_records = 3;
  open(c);
  OutBuffer out;
  h().on_message(kSessionA, bytes_of(buy(1, 100, 1)), 1, out);
  EXPECT_LT(h().durable_position(), out.durable_position()) << "not yet durable: hold the Ack";
  EXPECT_TRUE(h().poll(2)) << "the duty cycle's poll syncs the batch";
  EXPECT_GE(h().durable_position(), out.durable_position());
  for (std::uint64_t i = 2; i <= 4; ++i) {
    out.clear();
    h().on_message(kSessionA, bytes_of(buy(i, 100, 1)), 3, out);
  }
  EXPECT_GE(h().durable_position(), out.durable_position()) << "the third record of a group syncs by itself";
  EXPECT_EQ(h().journal().stats().syncs, 2u);
}

// A risk client cannot learn durability from its atomic's ACK; it READs the
// durable_* words, which follow the journal's durable position (issue 13 item 7).
TEST_F(HandlerTest, RiskWordsReachTheDurableWordsOnlyOnceTheirRecordIsDurable) {
  HandlerConfig c = small_config(dir_.file("journal-risk"));
  c.journal.sync = SyncPolicy::kGroupCommit;
  c.journal.group_max_records = 64;
  c.journal.group_max_delay_us = 1'000'000;  // the poll at t=2 does not sync yet, the one at t=2 s does
  open(c);
  RiskRegion& r = *h().risk().find(kAccountA);
  EXPECT_EQ(r.durable_credit_limit(), 1'000'000'000u) << "the configured limit: what a restart comes back with";
  std::atomic_ref<std::uint64_t>{*r.remote_word(RemoteOwnedWords::kKillSwitch)}.fetch_add(1);
  std::atomic_ref<std::uint64_t>{*r.remote_word(RemoteOwnedWords::kCreditLimit)}.fetch_sub(1000);
  EXPECT_EQ(h().journal_risk_words(1), 1u);
  h().poll(2);
  EXPECT_EQ(r.durable_kill_switch(), 0u) << "journaled, not yet durable";
  EXPECT_EQ(r.durable_credit_limit(), 1'000'000'000u);
  EXPECT_TRUE(h().poll(2'000'000'000));
  EXPECT_EQ(r.durable_kill_switch(), 1u);
  EXPECT_EQ(r.durable_credit_limit(), 999'999'000u);
  EXPECT_EQ(r.version() % 2, 0u);

  handler_.reset();  // a restart: replay puts the words and their durable copies back
  open(c);
  RiskRegion& again = *h().risk().find(kAccountA);
  EXPECT_TRUE(again.killed());
  EXPECT_EQ(again.durable_kill_switch(), 1u);
  EXPECT_EQ(again.durable_credit_limit(), 999'999'000u);
}

}  // namespace
}  // namespace qpgate::orders
