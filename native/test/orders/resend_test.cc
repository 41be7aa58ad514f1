// The resend stores (order_service.h): they cost what was sent, are freed when
// a session closes, and a closed (or restarted) session's next Hello gets
// what it missed rebuilt from the journal. Addresses 127.66.<test>.x as in
// session_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "session_support.h"

namespace qpgate::orders::test {
namespace {

using namespace std::chrono_literals;

TEST(OrderSessions, ResendStoresCostWhatWasSentAndAreFreedOnClose) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.resend_capacity = 4096;
  cfg.max_queued_messages = 4096;
  Gateway gw("127.66.16.1", cfg);
  ASSERT_TRUE(gw.service);
  Client a("127.66.16.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  EXPECT_EQ(gw.service->resend_bytes(), 0u) << "no store before the Hello";
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= 40; ++i) a.send(buy(i, 100, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 40; }));
  // The Welcome and 40 Acks, and the slots of the next messages made resident by idle cycles: not the 4096 slots.
  EXPECT_LE(gw.service->resend_bytes(), (41u + ResendStore::kAheadSlots) * 400u);
  EXPECT_GT(gw.service->resend_bytes(), 41u * 300u);
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  EXPECT_EQ(gw.service->resend_bytes(), 0u) << "a closed session holds no resend store";
}


TEST(ResendStore, AMessageStaysWhereItWasPutAndTheNextSlotsAreResidentBeforeTheyAreNeeded) {
  // A ring that grew as it filled moved every message it kept at each
  // doubling (18-23 ms of one put() at the 4,097th message, on the engine
  // thread). This one is mapped whole, written in place, and an idle
  // cycle's populate_ahead() makes the next messages' pages resident.
  ResendStore store(8192);
  const std::uint8_t message[64] = {7};
  store.put(1, {message, sizeof message});
  store.put(2, {message, sizeof message});
  const std::uint8_t* first = store.get(1).data();
  // Where message n's bytes are: the ring's slots follow one another, n's at n mod 8192.
  const std::uintptr_t slot_bytes = reinterpret_cast<std::uintptr_t>(store.get(2).data()) - reinterpret_cast<std::uintptr_t>(first);
  const auto slot_of = [&](std::uint64_t n) {
    return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(first) + ((n % 8192) - 1) * slot_bytes);
  };
  std::size_t checked = 0;
  for (std::uint64_t seq = 3; seq <= 20'000; ++seq) {
    store.populate_ahead();
    if (seq % 97 == 0) {
      const std::uint64_t ahead = seq + ResendStore::kAheadSlots - 1;
      ASSERT_TRUE(resident(slot_of(ahead))) << "the slot of message " << ahead << " when " << seq << " is sent";
      ++checked;
    }
    store.put(seq, {message, sizeof message});
    if (seq <= 8192) ASSERT_EQ(store.get(1).data(), first) << "message 1 moved when message " << seq << " was put";
  }
  EXPECT_GT(checked, 100u);
  EXPECT_EQ(store.first(), 20'000u - 8192 + 1) << "the newest 8192 are kept";
  ASSERT_EQ(store.get(20'000).size(), sizeof message);
  EXPECT_EQ(store.get(20'000)[0], 7);
}

TEST(ResendStore, IdleSessionsCostTheirFewMessagesNotTheRing) {
  ResendStore store(8192);
  const std::uint8_t message[64] = {};
  for (std::uint64_t seq = 1; seq <= 10; ++seq) store.put(seq, {message, sizeof message});
  store.populate_ahead();
  EXPECT_LE(store.bytes_reserved(), (10u + ResendStore::kAheadSlots) * 400u);
  EXPECT_EQ(store.populate_ahead(), 0u) << "far enough ahead: nothing more until more is sent";
}

TEST(OrderSessions, AHelloForMessagesNoLongerKeptResendsWhatIsKeptAndCountsTheGap) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.resend_capacity = 16;  // the least config_limits.def allows
  cfg.back_pressure_messages = 16;
  cfg.max_queued_messages = 16;
  Gateway gw("127.66.10.1", cfg);
  ASSERT_TRUE(gw.service);
  Client a("127.66.10.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= 18; ++i) a.send(buy(i, 100, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.answers == 18; }));
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  Client again("127.66.10.3");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  again.send(Hello{0});
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.received.size() == 17; }));
  gw.run_for({&again}, 20ms);
  ASSERT_EQ(again.received.size(), 17u);
  const Welcome* w = again.received[0]->as<Welcome>();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->app_seq, 18u);
  EXPECT_EQ(w->resend_from, 1u);
  std::vector<std::uint64_t> kept;
  for (std::uint64_t s = 3; s <= 18; ++s) kept.push_back(s);
  EXPECT_EQ(app_seqs(again), kept);  // 1 and 2 are no longer kept
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 2u);
}

// Fills made while a session was closed, and answers it was sent but did
// not process, come back from the journal: exactly the missed app_seqs, in
// order, the same messages; a later Hello that missed nothing replays nothing.
TEST(OrderSessions, AClosedSessionGetsWhatItMissedRebuiltFromTheJournal) {
  TempDir dir;
  Gateway gw("127.66.17.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.17.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, /*cancel_on_disconnect=*/false).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= 3; ++i) a.send(buy(i, 105 - 5 * static_cast<std::int64_t>(i), 10));  // 100, 95, 90
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 3; }));
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  EXPECT_EQ(gw.service->resend_bytes(), 0u);

  // While A is away its resting buys trade: Fills 4 and 5 for A.
  Client b("127.66.17.3");
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  b.send(Hello{0});
  b.send(sell(1, 95, 15));
  ASSERT_TRUE(gw.run_until({&b}, [&] { return b.all<Fill>().size() == 2; }));

  Client again("127.66.17.4");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  again.send(Hello{2});  // it processed the first two Acks only
  ASSERT_TRUE(gw.run_until({&again}, [&] { return app_seqs(again).size() == 3; }));
  gw.run_for({&again}, 20ms);
  EXPECT_EQ(again.all<Welcome>()[0]->app_seq, 5u);
  EXPECT_EQ(app_seqs(again), one_to(5, 3));
  ASSERT_EQ(again.all<Ack>().size(), 1u);
  EXPECT_EQ(again.all<Ack>()[0]->client_order_id, 3u);
  EXPECT_EQ(again.all<Ack>()[0]->app_seq, 3u);
  const auto fills = again.all<Fill>();
  ASSERT_EQ(fills.size(), 2u);
  // Price priority: the 100 buy (clid 1) first, all of it; then 5 of the 95 (clid 2).
  EXPECT_EQ(fills[0]->client_order_id, 1u);
  EXPECT_EQ(fills[0]->quantity, 10);
  EXPECT_EQ(fills[0]->leaves_quantity, 0);
  EXPECT_EQ(fills[1]->client_order_id, 2u);
  EXPECT_EQ(fills[1]->quantity, 5);
  EXPECT_EQ(fills[1]->leaves_quantity, 5);
  EXPECT_EQ(fills[0]->trade_id, b.all<Fill>()[0]->trade_id);
  EXPECT_EQ(gw.service->counters().resend_rebuilds.get(), 1u);
  EXPECT_EQ(gw.service->counters().resend_rebuild_failures.get(), 0u);
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 0u);

  // Live again: new answers go on from 6 and into its store.
  again.send(buy(4, 90, 1));
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.all<Ack>().size() == 2; }));
  EXPECT_EQ(again.all<Ack>()[1]->app_seq, 6u);
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  Client third("127.66.17.5");
  ASSERT_TRUE(third.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  third.send(Hello{6});
  ASSERT_TRUE(gw.run_until({&third}, [&] { return third.all<Welcome>().size() == 1; }));
  gw.run_for({&third}, 20ms);
  EXPECT_TRUE(app_seqs(third).empty());
  EXPECT_EQ(gw.service->counters().resend_rebuilds.get(), 1u) << "a Hello that missed nothing replays nothing";
}

// The rebuild runs on its own thread (resend_rebuilder.h) while the engine
// goes on: what the session is sent while it runs waits in its store and
// follows the resent messages, each app_seq once, in order, whenever the
// rebuild finishes relative to it.
TEST(OrderSessions, AnswersMadeWhileARebuildRunsFollowTheResentOnes) {
  TempDir dir;
  Gateway gw("127.66.19.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.19.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, /*cancel_on_disconnect=*/false).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= 3; ++i) a.send(buy(i, 105 - 5 * static_cast<std::int64_t>(i), 10));  // 100, 95, 90
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 3; }));
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));

  Client b("127.66.19.3");
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  b.send(Hello{0});
  b.send(sell(1, 95, 15));  // A's Fills 4 and 5, made while A is away
  ASSERT_TRUE(gw.run_until({&b}, [&] { return b.all<Fill>().size() == 2; }));

  Client again("127.66.19.4");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  again.send(Hello{0});
  b.send(sell(2, 95, 5));  // A's Fill 6, made while (or just after) its missed messages are read back
  ASSERT_TRUE(gw.run_until({&again, &b}, [&] { return app_seqs(again).size() == 6; }));
  gw.run_for({&again, &b}, 20ms);
  EXPECT_EQ(app_seqs(again), one_to(6));
  const auto fills = again.all<Fill>();
  ASSERT_EQ(fills.size(), 3u);
  EXPECT_EQ(fills[2]->client_order_id, 2u);
  EXPECT_EQ(fills[2]->leaves_quantity, 0);
  EXPECT_EQ(gw.service->counters().resend_rebuilds.get(), 1u);
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 0u);
  EXPECT_GT(gw.service->counters().resend_rebuild_ns.get(), 0u);
}

// A journal that cannot be read back: the rebuild fails with its reason,
// counted; what it could not get back is counted as resend gaps, and the
// session goes on with new answers.
TEST(OrderSessions, ARebuildThatCannotReadTheJournalSaysWhyAndTheSessionGoesOn) {
  TempDir dir;
  const std::string journal = dir.file("journal");
  Gateway gw("127.66.20.1", service_config(journal));
  ASSERT_TRUE(gw.service);
  Client a("127.66.20.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= 3; ++i) a.send(buy(i, 90, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 3; }));
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  ASSERT_TRUE(gw.service->handler().flush());
  {  // Damage the records behind the header (the live journal only appends: it never reads them again).
    std::FILE* f = std::fopen(journal.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, 0, SEEK_END), 0);
    const long size = std::ftell(f);
    ASSERT_EQ(std::fseek(f, size / 2, SEEK_SET), 0);
    const unsigned char junk[16] = {0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef};
    ASSERT_EQ(std::fwrite(junk, 1, sizeof junk, f), sizeof junk);
    std::fclose(f);
  }

  Client again("127.66.20.3");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false).ok());
  again.send(Hello{0});
  ASSERT_TRUE(gw.run_until({&again}, [&] { return gw.service->counters().resend_rebuild_failures.get() == 1; }));
  EXPECT_EQ(gw.service->last_rebuild_failure().rfind("session 1: ", 0), 0u) << gw.service->last_rebuild_failure();
  EXPECT_GT(gw.service->last_rebuild_failure().size(), std::string{"session 1: "}.size());
  again.send(buy(4, 90, 1));
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.all<Ack>().size() >= 1 && again.all<Ack>().back()->client_order_id == 4; }));
  EXPECT_EQ(again.all<Ack>().back()->app_seq, 4u);
  EXPECT_EQ(again.all<Welcome>().size(), 1u);
  // What the replay got before the damage is resent; the rest is counted missing.
  const std::size_t resent = app_seqs(again).size() - 1;
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 3u - resent);
}

// Many sessions, each opened, greeted, answered and closed: the resend
// stores' memory goes back to nothing every time (RSS is measured end to end
// in test/orders/session-memory.test.ts).
TEST(OrderSessions, SessionsOpenedAndClosedLeaveNoResendStoreBehind) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  Gateway gw("127.66.18.1", cfg);
  ASSERT_TRUE(gw.service);
  constexpr std::uint32_t kSessions = 40;
  for (std::uint32_t i = 0; i < kSessions; ++i) {
    const std::uint32_t id = 100 + i;
    Client c("127.66.18.2");
    ASSERT_TRUE(c.handshake(*gw.service, id, SessionRole::kTrading, {kAccountA}).ok());
    c.send(Hello{0});
    c.send(buy(1, 90, 1));
    ASSERT_TRUE(gw.run_until({&c}, [&] { return c.answers == 1; }));
    EXPECT_GT(gw.service->resend_bytes(), 0u);
    ASSERT_TRUE(gw.service->close_session(id, qpgate::monotonic_ns()));
    EXPECT_EQ(gw.service->resend_bytes(), 0u) << "session " << id;
  }
  EXPECT_EQ(gw.service->counters().resend_rebuilds.get(), 0u);
}

// A session that closes between the end of its rebuild and the duty cycle
// that takes the result cancels a finished job: that must not be remembered
// for good (one id per such close, for the life of the gateway).
TEST(ResendRebuilder, CancellingAFinishedJobLeavesNothingBehind) {
  TempDir dir;
  const HandlerConfig config = small_config(dir.file("journal"));
  std::string error;
  std::unique_ptr<OrderHandler> live = OrderHandler::open(config, error);
  ASSERT_TRUE(live) << error;
  ResendRebuilder rebuilder(config, 64);
  const std::uint64_t end = live->journal().written_position();

  rebuilder.ask(RebuildJob{1, kSessionA, 1, end});
  std::vector<RebuildResult> done;
  for (int i = 0; i < 10000 && done.empty(); ++i) {
    done = rebuilder.take_done();
    if (done.empty()) std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  rebuilder.cancel(1);
  EXPECT_EQ(rebuilder.cancellations_pending(), 0u);

  // A job cancelled while queued or running is remembered until it is finished.
  rebuilder.ask(RebuildJob{2, kSessionA, 1, end});
  rebuilder.cancel(2);
  done.clear();
  for (int i = 0; i < 10000 && done.empty(); ++i) {
    done = rebuilder.take_done();
    if (done.empty()) std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(rebuilder.cancellations_pending(), 0u);
  EXPECT_EQ(rebuilder.outstanding(), 0u);
}

// After a restart every session that reconnects needs a rebuild, each a
// replay of the whole journal. One replay serves all the jobs queued when it
// starts (resend_rebuilder.h): eight sessions asking together cost the first
// one replay and the other seven at most one more, not eight. Each job gets
// its own session's messages, from its own `from`, of records before its own
// `end`, byte for byte as the live handler made them.
TEST(ResendRebuilder, OneReplayServesEveryJobQueuedWhenItStarts) {
  TempDir dir;
  HandlerConfig config = small_config(dir.file("journal"));
  config.journal.sync = SyncPolicy::kNoSync;  // 40,000 fdatasyncs would be the test's whole time
  config.client_order_id_capacity = 1 << 17;
  constexpr std::uint32_t kSessions = 8;
  for (std::uint32_t s = 3; s <= kSessions; ++s) {
    config.sessions.push_back(SessionConfig{s, {s % 2 == 1 ? kAccountA : kAccountB}, ThrottleConfig{0, 1}, true});
  }
  std::string error;
  std::unique_ptr<OrderHandler> live = OrderHandler::open(config, error);
  ASSERT_TRUE(live) << error;
  // Odd sessions buy, even ones sell, in turn: every pair trades (an Ack and
  // a Fill each), so the book stays empty however long the journal grows.
  std::map<std::uint32_t, std::map<std::uint64_t, std::vector<std::uint8_t>>> made;
  std::uint64_t halfway = 0;
  constexpr int kOrders = 40'000;
  for (int i = 0; i < kOrders; ++i) {
    const std::uint32_t s = 1 + static_cast<std::uint32_t>(i) % kSessions;
    const std::uint64_t clid = 1 + static_cast<std::uint64_t>(i) / kSessions;
    const NewOrder o = s % 2 == 1 ? buy(clid, 100, 1, kAccountA) : sell(clid, 100, 1, kAccountB);
    OutBuffer out;
    live->on_message(s, bytes_of(o), 1'000'000'000, out);
    for (const OutMessage& m : out.messages()) {
      const auto b = out.bytes_of(m);
      if (m.app_seq != 0) made[m.session][m.app_seq].assign(b.begin(), b.end());
    }
    if (i == kOrders / 2 - 1) {
      ASSERT_TRUE(live->write_out());
      halfway = live->journal().written_position();
    }
  }
  ASSERT_TRUE(live->write_out());
  const std::uint64_t end = live->journal().written_position();
  ASSERT_EQ(made[1].rbegin()->first, 2u * kOrders / kSessions) << "an Ack and a Fill per order";

  constexpr std::uint32_t kCapacity = 1 << 14;
  ResendRebuilder rebuilder(config, kCapacity);
  // Session 3 asked when the journal was half written: nothing after that is its rebuild's.
  for (std::uint32_t s = 1; s <= kSessions; ++s) rebuilder.ask(RebuildJob{s, s, 10 * s, s == 3 ? halfway : end});
  std::vector<RebuildResult> done;
  for (int i = 0; i < 60'000 && done.size() < kSessions; ++i) {
    for (RebuildResult& r : rebuilder.take_done()) done.push_back(std::move(r));
    if (done.size() < kSessions) std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(done.size(), kSessions);
  int replays = 0;
  for (const RebuildResult& r : done) {
    if (r.ran_replay) {
      ++replays;
      std::printf("# a replay of %llu journal bytes served %s in %.0f ms\n", static_cast<unsigned long long>(end),
                  r.job.id == 1 ? "the first job" : "the jobs behind it", static_cast<double>(r.took_ns) / 1e6);
    }
    ASSERT_TRUE(r.ok) << "session " << r.job.session << ": " << r.error;
    const std::uint32_t s = r.job.session;
    const std::uint64_t last = s == 3 ? 2u * kOrders / 2 / kSessions : made[s].rbegin()->first;
    EXPECT_EQ(r.store->first(), r.job.from) << "session " << s;
    EXPECT_EQ(r.store->last(), last) << "session " << s;
    for (std::uint64_t seq = r.job.from; seq <= last; ++seq) {
      const auto b = r.store->get(seq);
      ASSERT_TRUE(std::equal(b.begin(), b.end(), made[s][seq].begin(), made[s][seq].end()))
          << "session " << s << " app_seq " << seq;
    }
  }
  EXPECT_GE(replays, 1);
  EXPECT_LE(replays, 2) << "the first job's replay, then one for the seven queued behind it";
  EXPECT_EQ(rebuilder.outstanding(), 0u);
}

}  // namespace
}  // namespace qpgate::orders::test
