// The journal: a restart rebuilds books, app_seqs and the duplicate table; a
// torn tail is truncated, never applied; corruption in the middle refuses to
// start and says where.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "orders/journal.h"
#include "support.h"

namespace qpgate::orders {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class JournalRestart : public ::testing::Test {
 protected:
  std::unique_ptr<OrderHandler> open_handler(std::string* error_out = nullptr) {
    std::string error;
    auto h = OrderHandler::open(small_config(path_), error);
    if (error_out != nullptr) *error_out = error;
    return h;
  }
  // Some trading: resting orders on both sides, a partial fill, a cancel, a
  // replace, a reject.
  void trade(OrderHandler& h) {
    send(h, kSessionB, sell(1, 110, 10));
    send(h, kSessionB, sell(2, 120, 10));
    send(h, kSessionA, buy(1, 110, 4));    // partial fill of B/1
    send(h, kSessionA, buy(2, 90, 5));
    send(h, kSessionA, buy(3, 95, 5));
    send(h, kSessionA, Cancel{4, 2, kInstrument});
    send(h, kSessionB, Replace{3, 2, kInstrument, 115, 8});
    send(h, kSessionA, buy(5, 101, 1));     // INVALID_PRICE (tick 5)
  }

  TempDir dir_;
  std::string path_ = dir_.file("orders.journal");
};

struct BookState {
  std::vector<LevelView> bids;
  std::vector<LevelView> asks;
  bool operator==(const BookState& o) const {
    auto eq = [](const std::vector<LevelView>& a, const std::vector<LevelView>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].price != b[i].price || a[i].quantity != b[i].quantity || a[i].order_count != b[i].order_count) return false;
      }
      return true;
    };
    return eq(bids, o.bids) && eq(asks, o.asks);
  }
};
BookState state_of(const OrderHandler& h) {
  BookState s;
  LevelView v[16];
  s.bids.assign(v, v + h.book(kInstrument)->top(Side::kBuy, v));
  s.asks.assign(v, v + h.book(kInstrument)->top(Side::kSell, v));
  return s;
}

TEST_F(JournalRestart, ARestartRebuildsBooksAppSeqsRiskAndTheDuplicateTable) {
  BookState before;
  std::uint64_t seq_a = 0, seq_b = 0, notional_b = 0;
  Ack original{};
  {
    auto h = open_handler();
    ASSERT_NE(h, nullptr);
    trade(*h);
    original = must<Ack>(send(*h, kSessionA, buy(6, 100, 2)), kSessionA);
    before = state_of(*h);
    seq_a = h->last_app_seq(kSessionA);
    seq_b = h->last_app_seq(kSessionB);
    notional_b = h->risk().find(kAccountB)->open_notional();
  }
  auto h = open_handler();
  ASSERT_NE(h, nullptr);
  EXPECT_GT(h->journal().stats().records_replayed, 8u);
  EXPECT_TRUE(state_of(*h) == before);
  EXPECT_EQ(before.bids.size(), 2u);  // 95 and 100 (90 was cancelled)
  EXPECT_EQ(before.asks.size(), 2u);  // 110 (partly filled) and 115 (replaced)
  EXPECT_EQ(h->last_app_seq(kSessionA), seq_a);
  EXPECT_EQ(h->last_app_seq(kSessionB), seq_b);
  EXPECT_EQ(h->risk().find(kAccountB)->open_notional(), notional_b);
  EXPECT_EQ(h->risk().find(kAccountA)->position(), 4);

  // The client did not see the Ack before the restart and resends.
  const auto again = send(*h, kSessionA, buy(6, 100, 2));
  const Ack* ack = first<Ack>(again, kSessionA);
  ASSERT_NE(ack, nullptr);
  EXPECT_TRUE(ack->possible_resend);
  EXPECT_EQ(ack->order_id, original.order_id);
  EXPECT_EQ(ack->app_seq, original.app_seq);
  const Reject* rj = first<Reject>(send(*h, kSessionA, buy(5, 100, 1)), kSessionA);
  ASSERT_NE(rj, nullptr) << "a rejected id keeps its reject across the restart";
  EXPECT_EQ(rj->reason, RejectReason::kInvalidPrice);

  // New work continues the numbering, and a restored order can be cancelled.
  const Ack* next = first<Ack>(send(*h, kSessionA, buy(7, 100, 1)), kSessionA);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->app_seq, seq_a + 1);
  EXPECT_EQ(next->order_id, original.order_id + 1);
  EXPECT_NE(first<CancelAck>(send(*h, kSessionA, Cancel{8, 3, kInstrument}), kSessionA), nullptr);
}

// What a remote FETCH_ADD / CMP_SWAP does to a word (the soft device's responder, or the NIC).
void remote_set(OrderHandler& h, std::uint64_t account, std::size_t word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>{*h.risk().find(account)->remote_word(word)}.store(value);
}

TEST_F(JournalRestart, AKillSwitchAnOrderWasCheckedAgainstSurvivesARestart) {
  {
    auto h = open_handler();
    ASSERT_NE(h, nullptr);
    remote_set(*h, kAccountA, RemoteOwnedWords::kCreditLimit, 1500);
    remote_set(*h, kAccountA, RemoteOwnedWords::kKillSwitch, 1);
    const Reject* rj = first<Reject>(send(*h, kSessionA, buy(1, 100, 1)), kSessionA);
    ASSERT_NE(rj, nullptr);
    EXPECT_EQ(rj->reason, RejectReason::kKillSwitch);
  }
  auto h = open_handler();
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->risk().find(kAccountA)->killed());
  EXPECT_EQ(h->risk().find(kAccountA)->credit_limit(), 1500u);
  EXPECT_FALSE(h->risk().find(kAccountB)->killed()) << "another account keeps its configured words";
  EXPECT_EQ(h->risk().find(kAccountB)->credit_limit(), 1'000'000'000u);
  const Reject* rj = first<Reject>(send(*h, kSessionA, buy(2, 100, 1)), kSessionA);
  ASSERT_NE(rj, nullptr);
  EXPECT_EQ(rj->reason, RejectReason::kKillSwitch);
}

TEST_F(JournalRestart, RiskWordsAreJournaledOnceForEachChangeAndTheLastValueIsRestored) {
  {
    auto h = open_handler();
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->journal_risk_words(1), 0u) << "the configured values need no record";
    remote_set(*h, kAccountB, RemoteOwnedWords::kKillSwitch, 7);
    EXPECT_EQ(h->journal_risk_words(2), 1u) << "the duty cycle's scan records a change no order followed";
    EXPECT_EQ(h->journal_risk_words(3), 0u);
    EXPECT_EQ(send(*h, kSessionB, sell(1, 100, 1)).size(), 1u);  // KILL_SWITCH, no second risk record
    remote_set(*h, kAccountB, RemoteOwnedWords::kKillSwitch, 0);  // lifted again: that is a change too
    remote_set(*h, kAccountB, RemoteOwnedWords::kCreditLimit, 500);
    EXPECT_NE(first<Reject>(send(*h, kSessionB, sell(2, 100, 6)), kSessionB), nullptr);  // 600 > 500
    EXPECT_EQ(h->counters().risk_word_records.get(), 2u);
    EXPECT_EQ(h->journal_risk_words(4), 0u);
  }
  auto h = open_handler();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->counters().risk_words_restored.get(), 2u);
  EXPECT_FALSE(h->risk().find(kAccountB)->killed());
  EXPECT_EQ(h->risk().find(kAccountB)->credit_limit(), 500u);
  const OrderHandler::RiskWords* journaled = h->journaled_risk_words(kAccountB);
  ASSERT_NE(journaled, nullptr);
  EXPECT_EQ(journaled->credit_limit, 500u);
  EXPECT_EQ(journaled->kill_switch, 0u);
  EXPECT_EQ(h->journal_risk_words(5), 0u) << "restored values are the journaled ones: nothing to record again";
  EXPECT_NE(first<Ack>(send(*h, kSessionB, sell(3, 100, 5)), kSessionB), nullptr);
}

TEST_F(JournalRestart, AnAnswerCheckedAgainstANewRiskWordWaitsForItsRecord) {
  HandlerConfig c = small_config(path_);
  c.journal.sync = SyncPolicy::kGroupCommit;
  c.journal.group_max_records = 1000;
  std::string error;
  auto h = OrderHandler::open(c, error);
  ASSERT_NE(h, nullptr) << error;
  remote_set(*h, kAccountA, RemoteOwnedWords::kKillSwitch, 1);
  const std::uint64_t before = h->journal().appended_position();
  OutBuffer out;
  h->on_message(kSessionA, bytes_of(buy(1, 100, 1)), 1, out);
  EXPECT_EQ(h->journal().stats().records_appended, 2u) << "the risk record, then the reject's";
  EXPECT_GT(out.durable_position(), before + kRecordHeaderBytes + sizeof(RiskWordsRecord))
      << "the reject is held past the risk record's end";
  EXPECT_LT(h->durable_position(), out.durable_position());
}

TEST_F(JournalRestart, ATornTailIsTruncatedAndNeverApplied) {
  BookState before;
  std::uint64_t seq_a = 0;
  {
    auto h = open_handler();
    trade(*h);
    before = state_of(*h);
    seq_a = h->last_app_seq(kSessionA);
    send(*h, kSessionA, buy(9, 100, 1));  // the record that the crash tears
  }
  auto bytes = read_file(path_);
  const std::size_t full = bytes.size();
  bytes.resize(full - 20);  // the crash happened in the middle of the last write
  write_file(path_, bytes);

  auto h = open_handler();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->journal().stats().torn_tail_bytes, full - 20 - h->journal().stats().torn_tail_offset);
  EXPECT_EQ(std::filesystem::file_size(path_), h->journal().stats().torn_tail_offset) << "truncated on disk";
  EXPECT_TRUE(state_of(*h) == before);
  EXPECT_EQ(h->last_app_seq(kSessionA), seq_a);
  const Ack* ack = first<Ack>(send(*h, kSessionA, buy(9, 100, 1)), kSessionA);
  ASSERT_NE(ack, nullptr);
  EXPECT_FALSE(ack->possible_resend) << "the torn order was never acknowledged: it is new";
}

TEST_F(JournalRestart, ALastRecordWithABadCrcIsATornTailToo) {
  {
    auto h = open_handler();
    trade(*h);
  }
  auto bytes = read_file(path_);
  bytes[bytes.size() - 3] ^= 0x40;  // its length is whole, its content is not
  write_file(path_, bytes);
  auto h = open_handler();
  ASSERT_NE(h, nullptr);
  EXPECT_GT(h->journal().stats().torn_tail_bytes, 0u);
}

TEST_F(JournalRestart, AFlippedBitInTheMiddleRefusesToStartAndSaysWhere) {
  {
    auto h = open_handler();
    trade(*h);
  }
  auto bytes = read_file(path_);
  const std::size_t first_record = kJournalHeaderBytes;
  bytes[first_record + kRecordHeaderBytes + 30] ^= 0x01;  // inside the first record's payload
  write_file(path_, bytes);
  std::string error;
  auto h = open_handler(&error);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(error.find("corrupt record at offset 16 (CRC mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find("refusing to start"), std::string::npos) << error;
  EXPECT_EQ(read_file(path_), bytes) << "nothing truncated";
}

TEST_F(JournalRestart, AFlippedBitInALengthInTheMiddleIsCorruptionNotATornTail) {
  {
    auto h = open_handler();
    trade(*h);
  }
  auto bytes = read_file(path_);
  bytes[kJournalHeaderBytes + 1] ^= 0x10;  // first record's length +4096
  write_file(path_, bytes);
  std::string error;
  EXPECT_EQ(open_handler(&error), nullptr);
  EXPECT_NE(error.find("corrupt record at offset 16 (length out of range"), std::string::npos) << error;
}

TEST_F(JournalRestart, NotAJournalIsRefused) {
  write_file(path_, std::vector<char>(64, 'x'));
  std::string error;
  EXPECT_EQ(open_handler(&error), nullptr);
  EXPECT_NE(error.find("not a qpgate order journal"), std::string::npos) << error;
}

TEST_F(JournalRestart, AChangedConfigurationThatReplaysDifferentlyRefusesToStart) {
  {
    auto h = open_handler();
    trade(*h);
  }
  HandlerConfig c = small_config(path_);
  c.instruments[0].book.instrument_id = 8;  // instrument 7 gone
  std::string error;
  EXPECT_EQ(OrderHandler::open(c, error), nullptr);
  EXPECT_NE(error.find("record at offset 16 (type 1): instrument 7"), std::string::npos) << error;
}

TEST(Journal, IsCreatedOwnerOnlyAndAnOlderWorldReadableOneIsTightened) {
  TempDir dir;
  const std::string path = dir.file("orders.journal");
  const mode_t was = ::umask(0);  // a permissive umask must not widen it
  std::string error;
  auto j = Journal::open(JournalConfig{path}, [](auto, auto, auto, auto&) { return true; }, error);
  ::umask(was);
  ASSERT_NE(j, nullptr) << error;
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  j.reset();
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  j = Journal::open(JournalConfig{path}, [](auto, auto, auto, auto&) { return true; }, error);
  ASSERT_NE(j, nullptr) << error;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Journal, EveryRecordPolicySyncsEachAppend) {
  TempDir dir;
  JournalConfig c{dir.file("j"), SyncPolicy::kEveryRecord, 64, 0, 1 << 16};
  std::string error;
  auto j = Journal::open(c, [](auto, auto, auto, auto&) { return true; }, error);
  ASSERT_NE(j, nullptr) << error;
  const std::uint8_t payload[5] = {1, 2, 3, 4, 5};
  const std::uint64_t end = j->append(9, payload, 0);
  EXPECT_EQ(end, kJournalHeaderBytes + kRecordHeaderBytes + 5);
  EXPECT_EQ(j->durable_position(), end);
  EXPECT_EQ(j->stats().syncs, 1u);
}

TEST(Journal, GroupCommitWaitsForItsDelay) {
  TempDir dir;
  JournalConfig c{dir.file("j"), SyncPolicy::kGroupCommit, 64, 100, 1 << 16};
  std::string error;
  auto j = Journal::open(c, [](auto, auto, auto, auto&) { return true; }, error);
  const std::uint8_t payload[1] = {1};
  j->append(1, payload, 1'000);
  EXPECT_FALSE(j->poll(50'000));
  EXPECT_TRUE(j->poll(101'000));
  EXPECT_EQ(j->durable_position(), j->appended_position());
}

TEST(Journal, WithASyncThreadTheCallerNeverSyncsAndDurabilityFollowsTheSyncer) {
  TempDir dir;
  JournalConfig c{dir.file("j"), SyncPolicy::kEveryRecord, 64, 0, 1 << 16, true};
  std::string error;
  auto j = Journal::open(c, [](auto, auto, auto, auto&) { return true; }, error);
  ASSERT_NE(j, nullptr) << error;
  const std::uint8_t payload[3] = {7, 8, 9};
  std::uint64_t end = 0;
  for (int i = 0; i < 50; ++i) end = j->append(2, payload, 0);
  // Every record is already written (a crash of the process loses none)...
  EXPECT_EQ(static_cast<std::uint64_t>(std::filesystem::file_size(c.path)), end);
  // ...and becomes durable when the syncer says so, seen at poll().
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (j->durable_position() < end && std::chrono::steady_clock::now() < deadline) j->poll(0);
  EXPECT_EQ(j->durable_position(), end);
  EXPECT_GE(j->stats().syncs, 1u);
  EXPECT_LE(j->stats().syncs, 50u) << "syncs are grouped by the syncer, never more than one per record";
  EXPECT_FALSE(j->failed());
}

TEST(Journal, WithASyncThreadSyncIsAFlushThatWaits) {
  TempDir dir;
  JournalConfig c{dir.file("j"), SyncPolicy::kGroupCommit, 1000, 1'000'000, 1 << 16, true};
  std::string error;
  auto j = Journal::open(c, [](auto, auto, auto, auto&) { return true; }, error);
  ASSERT_NE(j, nullptr) << error;
  const std::uint8_t payload[1] = {1};
  const std::uint64_t end = j->append(1, payload, 1'000);
  EXPECT_FALSE(j->poll(2'000)) << "the group's delay has not passed";
  EXPECT_LT(j->durable_position(), end);
  EXPECT_TRUE(j->sync());
  EXPECT_EQ(j->durable_position(), end);
  EXPECT_EQ(j->stats().syncs, 1u);
}

}  // namespace
}  // namespace qpgate::orders
