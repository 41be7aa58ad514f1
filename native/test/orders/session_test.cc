// Order entry over RC sessions on real UDP loopback with soft devices: the
// OrderService (the engine agent's duty cycle) driven by hand, clients with
// their own devices and QPs doing the handshake through the service API.
// Addresses 127.66.<test>.x, one set per test.
#include <gtest/gtest.h>

#include <protozero/pbf_reader.hpp>

#include <algorithm>
#include <optional>
#include <thread>

#include "feed/frame.h"
#include "session_support.h"

namespace qpgate::orders::test {
namespace {

using namespace std::chrono_literals;

const RegionGrant* grant(const SessionAnswer& a, const std::string& name, std::uint64_t account) {
  for (const RegionGrant& g : a.regions) {
    if (g.name == name && g.account == account) return &g;
  }
  return nullptr;
}

// Market data the service published, as (type, body) pairs.
struct Published {
  std::uint16_t channel;
  std::uint16_t type;
  std::uint16_t key;
  std::uint8_t action;
  std::vector<std::uint8_t> body;
};

// Session A connected, greeted, with one resting buy acknowledged; its grants.
std::optional<SessionAnswer> one_resting_order(Gateway& gw, Client& a) {
  auto ga = a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA});
  if (!ga.ok()) return std::nullopt;
  a.send(Hello{0});
  a.send(buy(1, 100, 10));
  if (!gw.run_until({&a}, [&] { return a.answers == 1; })) return std::nullopt;
  return *ga;
}

TEST(OrderSessions, HandshakeThenAcksAndFillsOnBothSidesWithConsecutiveAppSeqs) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.feed_publisher_id = 1;
  cfg.feeds.push_back(InstrumentFeed{kInstrument, 3, 2});
  Gateway gw("127.66.1.1", cfg);
  ASSERT_TRUE(gw.service);
  std::vector<Published> published;
  gw.service->set_market_data_sink([&](std::uint16_t channel, std::span<const std::uint8_t> m, std::uint64_t) {
    const feed::MessageHeaderView h(m.data());
    EXPECT_EQ(h.length(), m.size());
    published.push_back(Published{channel, h.type(), h.key(), h.action(),
                                  std::vector<std::uint8_t>(m.begin() + feed::kMessageHeaderBytes, m.end())});
    return PublishOutcome::kPublished;
  });
  Client a("127.66.1.2"), b("127.66.1.3");
  auto aa = a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA});
  ASSERT_TRUE(aa.ok()) << aa.error().message;
  auto ab = b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB});
  ASSERT_TRUE(ab.ok()) << ab.error().message;
  EXPECT_EQ(aa->gid, gw.device->gid());
  EXPECT_EQ(aa->mtu, verbs::Mtu::MTU_1024);
  // A trading session is granted its accounts' local-owned page, read-only.
  ASSERT_EQ(aa->regions.size(), 1u);
  EXPECT_EQ(aa->regions[0].name, "risk.local");
  EXPECT_EQ(aa->regions[0].account, kAccountA);
  EXPECT_EQ(aa->regions[0].access, verbs::AccessFlags(verbs::Access::REMOTE_READ));

  a.send(Hello{0});
  b.send(Hello{0});
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.received.size() == 1 && b.received.size() == 1; }));
  ASSERT_NE(a.received[0]->as<Welcome>(), nullptr);
  EXPECT_EQ(a.received[0]->as<Welcome>()->app_seq, 0u);
  EXPECT_EQ(a.received[0]->as<Welcome>()->resend_from, 1u);

  for (std::uint64_t i = 1; i <= 3; ++i) a.send(buy(i, 100 + 5 * static_cast<std::int64_t>(i), 10));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.all<Ack>().size() == 3; }));
  b.send(sell(1, 105, 15));  // crosses 115 (10) and 110 (5)
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.all<Fill>().size() == 2 && b.all<Fill>().size() == 2; }));

  EXPECT_EQ(app_seqs(a), one_to(5));  // 3 acks, 2 fills
  EXPECT_EQ(app_seqs(b), one_to(3));  // ack, 2 fills
  const auto fa = a.all<Fill>();
  EXPECT_EQ(fa[0]->client_order_id, 3u);
  EXPECT_EQ(fa[0]->price, 115);
  EXPECT_EQ(fa[0]->quantity, 10);
  EXPECT_EQ(fa[1]->client_order_id, 2u);
  EXPECT_EQ(fa[1]->quantity, 5);
  EXPECT_EQ(fa[1]->leaves_quantity, 5);
  const auto fb = b.all<Fill>();
  EXPECT_EQ(fb[1]->leaves_quantity, 0);
  EXPECT_EQ(fb[0]->liquidity, Liquidity::kTaker);

  EXPECT_EQ(gw.service->counters().received.get(), 6u);
  EXPECT_EQ(gw.service->counters().sent.get(), 10u);
  EXPECT_EQ(gw.service->ack_latency().total(), 4u);  // 4 answers to orders
  const auto infos = gw.service->sessions();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].state, verbs::QpState::RTS);
  EXPECT_EQ(infos[0].last_app_seq, 5u);
  EXPECT_EQ(infos[0].received, 4u);

  // The feed got two trades and the level changes of a depth-2 book on channel 3.
  gw.run_until({&a, &b}, [&] { return gw.service->market_data().queued() == 0; });
  std::vector<const Published*> trades, levels;
  for (const auto& p : published) {
    EXPECT_EQ(p.channel, 3);
    (p.type == 4 ? trades : levels).push_back(&p);
  }
  ASSERT_EQ(trades.size(), 2u);
  protozero::pbf_reader t(reinterpret_cast<const char*>(trades[0]->body.data()), trades[0]->body.size());
  std::int64_t price = 0, size = 0;
  std::int32_t aggressor = 0;
  while (t.next()) {
    switch (t.tag()) {
      case 2: price = t.get_int64(); break;
      case 3: size = t.get_int64(); break;
      case 4: aggressor = t.get_enum(); break;
      default: t.skip();
    }
  }
  EXPECT_EQ(price, 115);
  EXPECT_EQ(size, 10);
  EXPECT_EQ(aggressor, 2);  // the seller aggressed
  // Bids after the three orders: level 0 = 115, level 1 = 110 (depth 2: 105 not shown);
  // after the sweep: level 0 = 110 (5 left), level 1 = 105.
  ASSERT_FALSE(levels.empty());
  const Published* last = levels.back();
  EXPECT_EQ(last->type, 5);
  EXPECT_EQ(last->key, feed::book_key(false, 1));
  EXPECT_EQ(last->action, static_cast<std::uint8_t>(feed::BookAction::kModify));
  EXPECT_EQ(gw.service->market_data().counters().md_unpublished.get(), 0u);
}

TEST(OrderSessions, CloseCancelsRestingOrdersAndTheSameSessionResumesAfterHello) {
  TempDir dir;
  Gateway gw("127.66.2.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.2.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  a.send(Hello{0});
  a.send(buy(1, 100, 10));
  a.send(buy(2, 95, 10));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 2; }));
  EXPECT_EQ(gw.service->handler().book(kInstrument)->resting_orders(), 2u);

  EXPECT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  EXPECT_FALSE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  EXPECT_EQ(gw.service->handler().book(kInstrument)->resting_orders(), 0u);
  EXPECT_TRUE(gw.service->sessions().empty());

  // A new QP for the same session: Hello with the last app_seq it processed.
  Client again("127.66.2.3");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  again.send(Hello{2});
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.received.size() == 3; }));
  const Welcome* w = again.received[0]->as<Welcome>();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->app_seq, 4u);
  EXPECT_EQ(w->resend_from, 3u);
  const auto cancels = again.all<CancelAck>();
  ASSERT_EQ(cancels.size(), 2u);
  EXPECT_EQ(cancels[0]->reason, CancelReason::kDisconnect);
  EXPECT_EQ(cancels[0]->app_seq, 3u);
  EXPECT_EQ(cancels[1]->app_seq, 4u);
  again.send(buy(3, 100, 1));
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.all<Ack>().size() == 1; }));
  EXPECT_EQ(again.all<Ack>()[0]->app_seq, 5u);

  // While connected, the session id cannot be taken by another QP.
  Client thief("127.66.2.4");
  auto r = thief.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EEXIST);
  EXPECT_EQ(r.error().message, "session 1 is already connected");
}

TEST(OrderSessions, BackPressureStopsReceivesSoClientsGetRnrNaksAndNoAckIsLost) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.recv_depth = 8;  // the least config_limits.def allows
  cfg.send_depth = 8;
  cfg.back_pressure_messages = 2;
  Gateway gw("127.66.3.1", cfg);
  ASSERT_TRUE(gw.service);
  Client a("127.66.3.2");
  // The client reads slowly: two receives and no more for now.
  a.repost = false;
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, true, 2).ok());
  a.send(Hello{0});
  // Welcome and the first Ack fill its receives, eight answers its send
  // slots; past two more, its own queue holds its receives back.
  constexpr std::uint64_t kFirst = 14;
  for (std::uint64_t i = 1; i <= kFirst; ++i) a.send(buy(i, 100, 1));
  auto pressed = [&] { return gw.service->sessions()[0].back_pressured; };
  ASSERT_TRUE(gw.run_until({&a}, [&] { return pressed() && gw.service->counters().received.get() == kFirst + 1; }))
      << gw.service->counters().received.get() << " received, queued " << gw.service->sessions()[0].queued;
  EXPECT_GE(gw.service->counters().back_pressure_events.get(), 1u);

  // What it sends now uses up the receives still posted, then meets RNR NAKs.
  constexpr std::uint64_t kOrders = 30;
  for (std::uint64_t i = kFirst + 1; i <= kOrders; ++i) a.send(buy(i, 100, 1));
  auto rnr_naks = [&] { return a.soft_qp().counters().rcvd_rnr_err.get(); };
  ASSERT_TRUE(gw.run_until({&a}, [&] { return rnr_naks() > 0; })) << "the client met no RNR NAK under back-pressure";
  // A few retries later the service has polled whatever the device took in before its receives ran out.
  const std::uint64_t first_naks = rnr_naks();
  ASSERT_TRUE(gw.run_until({&a}, [&] { return rnr_naks() > first_naks + 2; }));
  const std::uint64_t received = gw.service->counters().received.get();
  const std::uint64_t rnr_before = rnr_naks();
  EXPECT_LE(received, kFirst + 1 + cfg.recv_depth);
  EXPECT_GT(gw.service->sessions()[0].rnr_held, 0u);
  // The client keeps retrying against the receives it is refused: RNR NAKs, nothing taken in.
  ASSERT_TRUE(gw.run_until({&a}, [&] { return rnr_naks() > rnr_before + 2; })) << "RNR NAKs stopped under back-pressure";
  EXPECT_EQ(gw.service->counters().received.get(), received);
  EXPECT_TRUE(pressed());

  // The client catches up: every order is answered once, in sequence.
  a.repost = true;
  a.post_receives(Client::kRecvSlots);
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == kOrders; }, 10s))
      << a.all<Ack>().size() << " acks";
  gw.run_for({&a}, 50ms);
  EXPECT_FALSE(pressed());
  EXPECT_EQ(a.all<Welcome>().size(), 1u);
  EXPECT_EQ(app_seqs(a), one_to(kOrders));
  EXPECT_EQ(a.count_sent_completions(), kOrders + 1);
  EXPECT_EQ(gw.service->counters().disconnects.get(), 0u);
}

TEST(OrderSessions, ASessionThatStopsReadingIsEndedAloneAndGetsEveryFillOnReconnect) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.back_pressure_messages = 4;
  cfg.max_queued_messages = 8;
  cfg.stall_timeout_ms = 200;
  Gateway gw("127.66.14.1", cfg);
  ASSERT_TRUE(gw.service);
  constexpr std::uint64_t kResting = 40;  // more fills than its receives, send slots and max_queued_messages
  // A rests 40 sells and then reads nothing more: receives for its Welcome, its Acks and two more.
  Client a("127.66.14.2"), b("127.66.14.3");
  a.repost = false;
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, true, kResting + 3).ok());
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= kResting; ++i) a.send(sell(i, 100, 1, kAccountA));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.all<Ack>().size() == kResting; }))
      << a.all<Ack>().size() << " acks";
  // B takes every one of them, one order at a time, and must never wait for A.
  b.send(Hello{0});
  constexpr std::uint64_t kBuys = kResting;
  for (std::uint64_t i = 1; i <= kBuys; ++i) {
    b.send(buy(i, 100, 1, kAccountB));
    ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return b.all<Ack>().size() == i; }, 2s)) << "B stalled at order " << i;
  }
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return b.all<Fill>().size() == kResting; }));
  EXPECT_EQ(b.soft_qp().counters().rcvd_rnr_err.get(), 0u) << "B met back-pressure that was A's";
  EXPECT_EQ(app_seqs(b), one_to(kBuys + kResting)) << "an Ack and a Fill for each";
  // A's queue of fills passed max_queued_messages: A alone was ended.
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return gw.service->counters().slow_disconnects.get() == 1; }));
  EXPECT_EQ(gw.service->counters().disconnects.get(), 1u);
  EXPECT_TRUE(gw.service->session(kSessionA)->disconnected);
  EXPECT_EQ(gw.service->session(kSessionA)->ended_by, "slow consumer: more than max_queued_messages held past stall_ns");
  EXPECT_FALSE(gw.service->session(kSessionB)->disconnected);

  // A comes back and gets every fill it was sent, none lost.
  Client again("127.66.14.4");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  again.send(Hello{0});
  ASSERT_TRUE(gw.run_until({&again, &b}, [&] { return again.all<Fill>().size() == kResting; }))
      << again.all<Fill>().size() << " fills resent";
  gw.run_for({&again, &b}, 20ms);
  EXPECT_EQ(again.all<Welcome>()[0]->app_seq, 2 * kResting);
  EXPECT_EQ(app_seqs(again), one_to(2 * kResting));
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 0u);
}

// The stall that ends a slow session is time the gateway watched it: a gateway
// that was itself not running (descheduled, a stuck cycle) does not blame the
// client for that gap, and still ends it once it has watched it for stall_timeout_ms.
TEST(OrderSessions, TimeTheGatewayWasNotRunningIsNotCountedAgainstASlowSession) {
  using namespace std::chrono_literals;
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.back_pressure_messages = 4;
  cfg.max_queued_messages = 8;
  cfg.stall_timeout_ms = 1000;
  Gateway gw("127.66.17.1", cfg);
  ASSERT_TRUE(gw.service);
  constexpr std::uint64_t kResting = 40;  // as above: more fills than A's receives, send slots and the cap
  Client a("127.66.17.2"), b("127.66.17.3");
  a.repost = false;
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, true, kResting + 3).ok());
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  a.send(Hello{0});
  for (std::uint64_t i = 1; i <= kResting; ++i) a.send(sell(i, 100, 1, kAccountA));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.all<Ack>().size() == kResting; }));
  b.send(Hello{0});
  for (std::uint64_t i = 1; i <= kResting; ++i) b.send(buy(i, 100, 1, kAccountB));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return b.all<Fill>().size() == kResting; }));
  ASSERT_EQ(gw.service->counters().slow_disconnects.get(), 0u);
  ASSERT_GT(gw.service->sessions()[0].queued, cfg.max_queued_messages) << "A holds its fills";

  std::this_thread::sleep_for(1500ms);  // the gateway does not run: longer than stall_timeout_ms
  gw.run_for({&a, &b}, 100ms);
  EXPECT_EQ(gw.service->counters().slow_disconnects.get(), 0u) << "ended for a gap the gateway itself was not running";
  EXPECT_FALSE(gw.service->session(kSessionA)->disconnected);
  // Watched for stall_timeout_ms, A is ended; B never was.
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return gw.service->counters().slow_disconnects.get() == 1; }, 5s));
  EXPECT_FALSE(gw.service->session(kSessionB)->disconnected);
}

TEST(OrderSessions, AResentIdDoesNotCostAReconnectItsLaterMessages) {
  TempDir dir;
  Gateway gw("127.66.15.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.15.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  a.send(Hello{0});
  a.send(buy(1, 100, 1));
  a.send(buy(2, 100, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 2; }));
  a.send(buy(1, 100, 1));  // resent: answered with its first Ack again (app_seq 1)
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == 3; }));
  EXPECT_TRUE(a.all<Ack>()[2]->possible_resend);
  EXPECT_EQ(a.all<Ack>()[2]->app_seq, 1u);
  // Cancel-on-disconnect: CancelAcks 3 and 4 wait for the next Hello.
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  Client again("127.66.15.3");
  ASSERT_TRUE(again.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  again.send(Hello{0});
  ASSERT_TRUE(gw.run_until({&again}, [&] { return again.all<CancelAck>().size() == 2; }));
  gw.run_for({&again}, 20ms);
  EXPECT_EQ(again.all<Welcome>()[0]->app_seq, 4u);
  EXPECT_EQ(app_seqs(again), one_to(4));
  EXPECT_EQ(gw.service->counters().resend_gaps.get(), 0u);
}

TEST(OrderSessions, OrderEventsFollowTheAcksAndASlowSinkBackPressuresWithoutLosingAny) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.back_pressure_messages = 8;
  Gateway gw("127.66.13.1", cfg);
  ASSERT_TRUE(gw.service);
  Client a("127.66.13.2");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  a.send(Hello{0});
  a.send(buy(1, 100, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.answers == 1; }));
  EXPECT_EQ(gw.service->counters().order_events.get(), 0u) << "no sink: no events made";

  // A JS handler that is behind: the sink refuses until told otherwise.
  bool accepting = false;
  std::vector<OrderEvent> seen;
  gw.service->set_order_event_sink([&](std::span<const OrderEvent> batch) {
    if (!accepting) return false;
    seen.insert(seen.end(), batch.begin(), batch.end());
    return true;
  });
  constexpr std::uint64_t kOrders = 40;
  for (std::uint64_t i = 2; i <= kOrders + 1; ++i) a.send(buy(i, 100, 1));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return gw.service->counters().back_pressure_events.get() >= 1; }))
      << "events waiting for the handler did not hold back the receives";
  const std::uint64_t answered = a.answers;
  EXPECT_LT(answered, kOrders + 1) << "receives went on being re-posted";
  EXPECT_GT(gw.service->counters().order_events_waiting.get(), cfg.back_pressure_messages);

  accepting = true;
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.all<Ack>().size() == kOrders + 1 && seen.size() == kOrders; }, 10s))
      << a.all<Ack>().size() << " acks, " << seen.size() << " events";
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].kind, OrderEventKind::kAccepted);
    EXPECT_EQ(seen[i].client_order_id, i + 2) << "in processing order, each once";
    EXPECT_EQ(seen[i].session, kSessionA);
  }
  EXPECT_EQ(gw.service->counters().order_events.get(), kOrders);
  EXPECT_EQ(gw.service->counters().order_events_waiting.get(), 0u);
}

TEST(OrderSessions, RiskAtomicsOnGrantedWordsChangeWhatTheOrderPathDoes) {
  TempDir dir;
  Gateway gw("127.66.4.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client trader("127.66.4.2"), risk("127.66.4.3");
  ASSERT_TRUE(trader.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  auto ra = risk.handshake(*gw.service, 10, SessionRole::kRisk, {kAccountA});
  ASSERT_TRUE(ra.ok()) << ra.error().message;
  ASSERT_EQ(ra->regions.size(), 2u);
  const RegionGrant* remote = grant(*ra, "risk.remote", kAccountA);
  const RegionGrant* local = grant(*ra, "risk.local", kAccountA);
  ASSERT_TRUE(remote && local);
  EXPECT_EQ(remote->access, verbs::Access::REMOTE_ATOMIC | verbs::Access::REMOTE_READ | verbs::Access::LOCAL_WRITE);
  EXPECT_EQ(remote->length, kRiskPageBytes);
  EXPECT_EQ(local->access, verbs::AccessFlags(verbs::Access::REMOTE_READ));

  trader.send(Hello{0});
  trader.send(buy(1, 100, 10));  // open notional 1000
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return trader.all<Ack>().size() == 1; }));

  // FETCH_ADD lowers the credit limit from 1e9 to 1500 (adding 1500 - 1e9 mod 2^64).
  risk.atomic(verbs::WrOpcode::ATOMIC_FETCH_AND_ADD, remote->addr + RemoteOwnedWords::kCreditLimit, remote->rkey,
              1500 - 1'000'000'000ULL);
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return risk.completions.size() == 1; }));
  EXPECT_EQ(risk.completions[0].status, verbs::WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(risk.result_word(), 1'000'000'000u);
  EXPECT_EQ(gw.service->handler().risk().find(kAccountA)->credit_limit(), 1500u);
  trader.send(buy(2, 100, 6));  // 1000 + 600 > 1500
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return trader.all<Reject>().size() == 1; }));
  EXPECT_EQ(trader.all<Reject>()[0]->reason, RejectReason::kCreditLimit);

  // CMP_SWAP sets the kill switch: the next order is rejected KILL_SWITCH.
  risk.atomic(verbs::WrOpcode::ATOMIC_CMP_AND_SWP, remote->addr + RemoteOwnedWords::kKillSwitch, remote->rkey, 0, 1);
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return risk.completions.size() == 2; }));
  EXPECT_EQ(risk.completions[1].status, verbs::WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(risk.result_word(), 0u);
  trader.send(buy(3, 100, 1));
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return trader.all<Reject>().size() == 2; }));
  EXPECT_EQ(trader.all<Reject>()[1]->reason, RejectReason::kKillSwitch);

  // The locally maintained words are readable by RDMA READ: one open order of 1000.
  risk.read(local->addr, local->rkey, 40);
  ASSERT_TRUE(gw.run_until({&trader, &risk}, [&] { return risk.completions.size() == 3; }));
  ASSERT_EQ(risk.completions[2].status, verbs::WcStatus::IBV_WC_SUCCESS);
  std::uint64_t words[5];
  std::memcpy(words, risk.result_bytes(), sizeof words);
  EXPECT_EQ(words[LocalOwnedWords::kOpenNotional / 8], 1000u);
  EXPECT_EQ(words[LocalOwnedWords::kOpenOrders / 8], 1u);
  EXPECT_EQ(words[LocalOwnedWords::kVersion / 8] % 2, 0u);
}

TEST(OrderSessions, ARiskSessionCannotTouchAnAccountItIsNotEntitledTo) {
  TempDir dir;
  Gateway gw("127.66.5.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client risk_a("127.66.5.2"), risk_b("127.66.5.3");
  auto ga = risk_a.handshake(*gw.service, 10, SessionRole::kRisk, {kAccountA});
  auto gb = risk_b.handshake(*gw.service, 11, SessionRole::kRisk, {kAccountB});
  ASSERT_TRUE(ga.ok() && gb.ok());
  const RegionGrant* a_remote = grant(*ga, "risk.remote", kAccountA);
  const RegionGrant* b_remote = grant(*gb, "risk.remote", kAccountB);
  ASSERT_TRUE(a_remote && b_remote);
  EXPECT_EQ(grant(*ga, "risk.remote", kAccountB), nullptr);
  // B's address with B's rkey, sent on A's QP: the rkey belongs to another PD.
  risk_a.atomic(verbs::WrOpcode::ATOMIC_CMP_AND_SWP, b_remote->addr + RemoteOwnedWords::kKillSwitch, b_remote->rkey, 0, 1);
  ASSERT_TRUE(gw.run_until({&risk_a, &risk_b}, [&] { return !risk_a.completions.empty(); }));
  EXPECT_EQ(risk_a.completions[0].status, verbs::WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_FALSE(gw.service->handler().risk().find(kAccountB)->killed());
  // B's address with A's rkey: out of the MR's bounds.
  Client risk_a2("127.66.5.4");
  auto ga2 = risk_a2.handshake(*gw.service, 12, SessionRole::kRisk, {kAccountA});
  ASSERT_TRUE(ga2.ok());
  const RegionGrant* a2_remote = grant(*ga2, "risk.remote", kAccountA);
  risk_a2.atomic(verbs::WrOpcode::ATOMIC_FETCH_AND_ADD, b_remote->addr + RemoteOwnedWords::kCreditLimit,
                 a2_remote->rkey, 5);
  ASSERT_TRUE(gw.run_until({&risk_a2}, [&] { return !risk_a2.completions.empty(); }));
  EXPECT_EQ(risk_a2.completions[0].status, verbs::WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(gw.service->handler().risk().find(kAccountB)->credit_limit(), 1'000'000'000u);
  // The offending sessions were lost (their gateway QPs went to ERR); B's goes on.
  ASSERT_TRUE(gw.run_until({&risk_a, &risk_b, &risk_a2}, [&] {
    int lost = 0;
    for (const auto& s : gw.service->sessions()) lost += s.disconnected ? 1 : 0;
    return lost == 2;
  }));
  for (const auto& s : gw.service->sessions()) EXPECT_EQ(s.disconnected, s.session != 11) << s.session;
}

TEST(OrderSessions, ATradingSessionsAtomicIsARemoteAccessErrorAndCancelsItsOrders) {
  TempDir dir;
  Gateway gw("127.66.6.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.6.2");
  const auto ga = one_resting_order(gw, a);
  ASSERT_TRUE(ga.has_value());
  const RegionGrant& local = ga->regions[0];
  a.atomic(verbs::WrOpcode::ATOMIC_FETCH_AND_ADD, local.addr + LocalOwnedWords::kPosition, local.rkey, 1);
  ASSERT_TRUE(gw.run_until({&a}, [&] {
    return a.completions.size() > 2 && gw.service->sessions()[0].disconnected;
  }));
  const auto atomic = std::find_if(a.completions.begin(), a.completions.end(),
                                   [](const verbs::Wc& wc) { return wc.wr_id == 2000000; });
  ASSERT_NE(atomic, a.completions.end());
  EXPECT_EQ(atomic->status, verbs::WcStatus::IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(gw.service->handler().book(kInstrument)->resting_orders(), 0u);
  EXPECT_EQ(gw.service->handler().risk().find(kAccountA)->position(), 0);
  EXPECT_EQ(gw.service->sessions()[0].state, verbs::QpState::ERR);
  // The responder's QP went to ERR with no completion of its own: its flushed
  // receives ended the session, named as the state check would name it (which
  // of the two sees it first is a race on rxe), until the device's event says why.
  EXPECT_EQ(gw.service->sessions()[0].ended_by, "QP state ERR");
  std::optional<verbs::AsyncEvent> event = gw.device->get_async_event();
  ASSERT_TRUE(event.has_value());
  EXPECT_FALSE(gw.service->on_async_event(*event, qpgate::monotonic_ns()));  // lost already
  EXPECT_EQ(gw.service->sessions()[0].ended_by, "IBV_EVENT_QP_ACCESS_ERR");
  EXPECT_EQ(gw.service->counters().disconnects.get(), 1u);
}

TEST(OrderSessions, GarbageGetsARejectAndAnOversizeSendClosesThatSessionAlone) {
  TempDir dir;
  Gateway gw("127.66.7.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.7.2"), b("127.66.7.3");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  a.send(Hello{0});
  b.send(Hello{0});
  a.send_bytes({0xff, 0xff, 0xff});
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.all<Reject>().size() == 1 && b.received.size() == 1; }));
  EXPECT_EQ(a.all<Reject>()[0]->reason, RejectReason::kMalformed);
  EXPECT_EQ(a.all<Reject>()[0]->app_seq, 1u);
  a.send_bytes(std::vector<std::uint8_t>(600, 0x08));  // over maxMessageBytes (512)
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return gw.service->sessions()[0].disconnected; }));
  b.send(sell(1, 100, 1));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return b.all<Ack>().size() == 1; }));
  EXPECT_FALSE(gw.service->sessions()[1].disconnected);
  EXPECT_EQ(gw.service->counters().disconnects.get(), 1u);
}

TEST(OrderSessions, ARestartKeepsAckedOrdersAndAppSeqsAndResendsWhatTheClientMissed) {
  TempDir dir;
  const ServiceConfig cfg = service_config(dir.file("journal"));
  auto device = open_device("127.66.8.1");
  ASSERT_TRUE(device);
  auto drive = [&](OrderService& s, Client& c, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (!done() && std::chrono::steady_clock::now() < until) {
      device->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
      s.do_work(qpgate::monotonic_ns());
      c.work();
    }
    return done();
  };
  {
    auto s = OrderService::open(*device, cfg);
    ASSERT_TRUE(s.ok());
    Client a("127.66.8.2");
    ASSERT_TRUE(a.handshake(**s, kSessionA, SessionRole::kTrading, {kAccountA}, /*cancel_on_disconnect=*/false).ok());
    a.send(Hello{0});
    a.send(buy(1, 100, 10));
    a.send(buy(2, 95, 10));
    ASSERT_TRUE(drive(**s, a, [&] { return a.all<Ack>().size() == 2; }));
  }  // the gateway goes away (journal flushed, sessions closed)
  auto s = OrderService::open(*device, cfg);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->handler().last_app_seq(kSessionA), 2u);
  EXPECT_EQ((*s)->handler().book(kInstrument)->resting_orders(), 2u);
  Client again("127.66.8.3");
  ASSERT_TRUE(again.handshake(**s, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  again.send(Hello{1});         // it processed the first ack only
  again.send(buy(1, 100, 10));  // and resends the order it was acked for: its first answer again
  again.send(Cancel{3, 2, kInstrument});
  ASSERT_TRUE(drive(**s, again, [&] { return again.received.size() == 4; }));
  const Welcome* w = again.received[0]->as<Welcome>();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->app_seq, 2u);
  EXPECT_EQ(w->resend_from, 2u);
  const Ack* missed = again.received[1]->as<Ack>();
  ASSERT_NE(missed, nullptr);
  EXPECT_EQ(missed->app_seq, 2u);
  EXPECT_EQ(missed->client_order_id, 2u);
  const Ack* dup = again.received[2]->as<Ack>();
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ(dup->app_seq, 1u);
  EXPECT_TRUE(dup->possible_resend);
  const CancelAck* c = again.received[3]->as<CancelAck>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->app_seq, 3u);
  EXPECT_EQ(c->orig_client_order_id, 2u);
  EXPECT_EQ((*s)->counters().resend_gaps.get(), 0u);
  EXPECT_EQ((*s)->handler().book(kInstrument)->resting_orders(), 1u);
}

// Item 7 of issue 13: the kill switch and credit limit were memory only, so a
// restart brought the configured values back and a killed account traded again.
TEST(OrderSessions, KillSwitchAndCreditLimitSetByRdmaAtomicsSurviveARestart) {
  TempDir dir;
  const ServiceConfig cfg = service_config(dir.file("journal"));
  auto device = open_device("127.66.12.1");
  ASSERT_TRUE(device);
  auto cycle = [&](OrderService& s, std::vector<Client*> clients) {
    device->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
    s.do_work(qpgate::monotonic_ns());
    for (Client* c : clients) c->work();
  };
  auto drive = [&](OrderService& s, std::vector<Client*> clients, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (!done() && std::chrono::steady_clock::now() < until) cycle(s, clients);
    return done();
  };
  {
    auto s = OrderService::open(*device, cfg);
    ASSERT_TRUE(s.ok());
    Client risk("127.66.12.2");
    auto ra = risk.handshake(**s, 10, SessionRole::kRisk, {kAccountA});
    ASSERT_TRUE(ra.ok()) << ra.error().message;
    const RegionGrant* remote = grant(*ra, "risk.remote", kAccountA);
    ASSERT_NE(remote, nullptr);
    // The credit limit from 1e9 to 1500 (FETCH_ADD), then the kill switch (CMP_SWAP): no order follows.
    risk.atomic(verbs::WrOpcode::ATOMIC_FETCH_AND_ADD, remote->addr + RemoteOwnedWords::kCreditLimit, remote->rkey,
                1500 - 1'000'000'000ULL);
    risk.atomic(verbs::WrOpcode::ATOMIC_CMP_AND_SWP, remote->addr + RemoteOwnedWords::kKillSwitch, remote->rkey, 0, 1);
    ASSERT_TRUE(drive(**s, {&risk}, [&] { return risk.completions.size() == 2; }));
    ASSERT_EQ(risk.completions[1].status, verbs::WcStatus::IBV_WC_SUCCESS);
    for (int i = 0; i < 4; ++i) cycle(**s, {&risk});  // the duty cycles after the atomics' ACKs
  }  // the gateway goes away
  auto s = OrderService::open(*device, cfg);
  ASSERT_TRUE(s.ok()) << s.error().message;
  RiskRegion* region = (*s)->handler().risk().find(kAccountA);
  EXPECT_TRUE(region->killed()) << "a restart must not un-kill the account";
  EXPECT_EQ(region->credit_limit(), 1500u) << "nor bring the configured credit limit back";

  Client trader("127.66.12.3"), risk("127.66.12.4");
  ASSERT_TRUE(trader.handshake(**s, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  trader.send(Hello{0});
  trader.send(buy(1, 100, 1));
  ASSERT_TRUE(drive(**s, {&trader}, [&] { return trader.all<Reject>().size() == 1; }));
  EXPECT_EQ(trader.all<Reject>()[0]->reason, RejectReason::kKillSwitch);

  // The restored values are in the registered words themselves: the risk
  // session's CMP_SWAP finds 1 and lifts the kill switch.
  auto ra = risk.handshake(**s, 10, SessionRole::kRisk, {kAccountA});
  ASSERT_TRUE(ra.ok()) << ra.error().message;
  const RegionGrant* remote = grant(*ra, "risk.remote", kAccountA);
  ASSERT_NE(remote, nullptr);
  risk.atomic(verbs::WrOpcode::ATOMIC_CMP_AND_SWP, remote->addr + RemoteOwnedWords::kKillSwitch, remote->rkey, 1, 0);
  ASSERT_TRUE(drive(**s, {&trader, &risk}, [&] { return risk.completions.size() == 1; }));
  EXPECT_EQ(risk.result_word(), 1u);
  trader.send(buy(2, 100, 20));  // 2000 > 1500
  trader.send(buy(3, 100, 10));
  ASSERT_TRUE(drive(**s, {&trader, &risk}, [&] { return trader.all<Reject>().size() == 2 && trader.all<Ack>().size() == 1; }));
  EXPECT_EQ(trader.all<Reject>()[1]->reason, RejectReason::kCreditLimit);
}

TEST(OrderSessions, UnderDropAndReorderEveryOrderIsAnsweredOnceAndFillsAreConserved) {
  TempDir dir;
  ServiceConfig cfg = service_config(dir.file("journal"));
  cfg.handler.journal.sync = SyncPolicy::kNoSync;
  cfg.recv_depth = 64;
  cfg.send_depth = 64;
  cfg.back_pressure_messages = 256;
  Gateway gw("127.66.9.1", cfg);
  ASSERT_TRUE(gw.service);
  verbs::soft::FaultPlan faults;
  // 5% of the packets lost and 5% reordered, each way through the gateway.
  faults.tx.drop = faults.rx.drop = 0.05;
  faults.tx.reorder = faults.rx.reorder = 0.05;
  gw.device->inject_faults(faults);
  Client c1("127.66.9.2"), c2("127.66.9.3"), c3("127.66.9.4"), c4("127.66.9.5");
  std::vector<Client*> clients{&c1, &c2, &c3, &c4};
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(clients[i]->handshake(*gw.service, 20 + i, SessionRole::kTrading, {i % 2 == 0 ? kAccountA : kAccountB}).ok());
    clients[i]->send(Hello{0});
  }
  constexpr std::uint64_t kOrders = 300;  // per session
  constexpr std::uint64_t kWindow = 24;   // requests in flight per session
  std::vector<std::uint64_t> sent(4, 0);
  auto answers = [](const Client& c) { return c.answers; };
  std::uint64_t seed = 12345;
  const bool done = gw.run_until(clients, [&] {
    bool all = true;
    for (std::uint32_t i = 0; i < 4; ++i) {
      Client& c = *clients[i];
      while (sent[i] < kOrders && sent[i] - answers(c) < kWindow) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const std::int64_t price = 100 + 5 * static_cast<std::int64_t>((seed >> 33) % 9);
        const std::int64_t qty = 1 + static_cast<std::int64_t>((seed >> 40) % 7);
        ++sent[i];
        c.send(i % 2 == 0 ? buy(sent[i], price, qty, kAccountA) : sell(sent[i], price, qty, kAccountB));
      }
      all = all && answers(c) == kOrders;
    }
    return all;
  }, 20s);
  ASSERT_TRUE(done) << answers(c1) << " " << answers(c2) << " " << answers(c3) << " " << answers(c4);
  // Fills may still be under way (retransmitted after a drop): wait until
  // every session has seen everything the gateway sequenced for it.
  const bool caught_up = gw.run_until(clients, [&] {
    for (std::uint32_t i = 0; i < 4; ++i) {
      const std::vector<std::uint64_t> seqs = app_seqs(*clients[i]);
      if (seqs.size() != gw.service->handler().last_app_seq(20 + i)) return false;
    }
    return true;
  }, 20s);
  EXPECT_TRUE(caught_up) << "a session never received all of its sequenced messages";
  std::int64_t bought = 0, sold = 0;
  for (std::uint32_t i = 0; i < 4; ++i) {
    const Client& c = *clients[i];
    // Exactly one answer per client order id.
    std::vector<std::uint64_t> ids;
    for (const Ack* a : c.all<Ack>()) ids.push_back(a->client_order_id);
    for (const Reject* r : c.all<Reject>()) ids.push_back(r->client_order_id);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, one_to(kOrders)) << "session " << 20 + i;
    EXPECT_EQ(app_seqs(c), one_to(gw.service->handler().last_app_seq(20 + i))) << "session " << 20 + i;
    for (const Fill* f : c.all<Fill>()) (f->side == Side::kBuy ? bought : sold) += f->quantity;
  }
  EXPECT_GT(bought, 0);
  EXPECT_EQ(bought, sold);
  EXPECT_GT(gw.device->fault_counters().rx.dropped.get() + gw.device->fault_counters().tx.dropped.get(), 0u);
  EXPECT_EQ(gw.service->counters().disconnects.get(), 0u);
}

TEST(OrderSessions, AnAsyncEventOnASessionsQpLosesItBeforeAnyCompletionIsPolled) {
  TempDir dir;
  Gateway gw("127.66.11.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  Client a("127.66.11.2");
  const auto ga = one_resting_order(gw, a);
  ASSERT_TRUE(ga.has_value());
  // The atomic is refused by the gateway's device; only the device and the client run now.
  a.atomic(verbs::WrOpcode::ATOMIC_CMP_AND_SWP, ga->regions[0].addr, ga->regions[0].rkey, 0, 1);
  std::optional<verbs::AsyncEvent> event;
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (!event && std::chrono::steady_clock::now() < until) {
    gw.device->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
    a.work();
    event = gw.device->get_async_event();
  }
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->event_type, verbs::EventType::QP_ACCESS_ERR);
  EXPECT_EQ(event->context, kSessionA);  // qp_context: the session id
  EXPECT_EQ(gw.service->handler().book(kInstrument)->resting_orders(), 1u);
  EXPECT_FALSE(gw.service->on_async_event(verbs::AsyncEvent{verbs::EventType::QP_ACCESS_ERR, verbs::EventElement::QP,
                                                            event->element_id + 1, 0},
                                          qpgate::monotonic_ns()));
  EXPECT_TRUE(gw.service->on_async_event(*event, qpgate::monotonic_ns()));
  EXPECT_FALSE(gw.service->on_async_event(*event, qpgate::monotonic_ns()));  // once
  EXPECT_TRUE(gw.service->sessions()[0].disconnected);
  EXPECT_EQ(gw.service->sessions()[0].ended_by, "IBV_EVENT_QP_ACCESS_ERR");
  EXPECT_EQ(gw.service->handler().book(kInstrument)->resting_orders(), 0u);
  EXPECT_EQ(gw.service->counters().disconnects.get(), 1u);
}

}  // namespace
}  // namespace qpgate::orders::test
