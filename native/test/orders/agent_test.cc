// The order agent on a real engine built as the addon builds it
// (gateway/engine_agents.h): its service's duty cycle on the engine thread
// after the feed agent, trades and book changes published through the feed
// agent's publisher, the gateway device driven by the engine's soft device
// agent; the clients by the test thread. Addresses 127.66.30.x, group
// 239.66.30.1.
#include <gtest/gtest.h>

#include <thread>

#include "engine/engine.h"
#include "gateway/engine_agents.h"
#include "session_support.h"

namespace qpgate::orders::test {
namespace {

TEST(OrderAgent, ServesSessionsOnTheEngineThreadAndPublishesTradesOnTheFeed) {
  TempDir dir;
  auto gw_dev = open_device("127.66.30.1");
  ASSERT_TRUE(gw_dev);
  engine::EngineConfig ec;
  ec.to_engine_capacity = 1 << 16;
  ec.from_engine_capacity = 1 << 16;
  ec.huge_pages = false;
  ec.idle = engine::IdleKind::kBackoff;
  engine::Engine engine(ec);
  const gateway::EngineAgents agents = gateway::add_engine_agents(engine);
  ASSERT_TRUE(agents.soft_devices->attach(*gw_dev).ok());
  engine.start();

  std::uint32_t publisher = 0, service = 0;
  OrderAgent* agent = agents.orders;
  engine.run_on_engine([&] {
    feed::PublisherConfig pc;
    feed::PublisherChannelConfig ch;
    ch.id = 3;
    ch.group_a = *verbs::ipv4_parse("239.66.30.1");
    ch.snapshot.slot_count = 64;
    pc.channels.push_back(ch);
    auto p = agents.feed->add_publisher(*gw_dev, pc);
    ASSERT_TRUE(p.ok()) << p.error().message;
    publisher = *p;
    ServiceConfig cfg = service_config(dir.file("journal"));
    cfg.feed_publisher_id = publisher;
    cfg.feeds.push_back(InstrumentFeed{kInstrument, 3, 5});
    auto s = agent->add_service(*gw_dev, cfg);
    ASSERT_TRUE(s.ok()) << s.error().message;
    service = *s;
  });
  ASSERT_NE(service, 0u);

  Client a("127.66.30.2"), b("127.66.30.3");
  auto open = [&](Client& c, std::uint32_t session, std::uint64_t account) {
    verbs::Result<SessionAnswer> r = verbs::Error{};
    engine.run_on_engine([&] {
      r = c.handshake(*agent->service(service), session, SessionRole::kTrading, {account});
    });
    return r.ok();
  };
  ASSERT_TRUE(open(a, kSessionA, kAccountA));
  ASSERT_TRUE(open(b, kSessionB, kAccountB));
  auto until = [&](const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!done() && std::chrono::steady_clock::now() < end) {
      a.work();
      b.work();
    }
    return done();
  };
  a.send(Hello{0});
  b.send(Hello{0});
  a.send(buy(1, 100, 10));
  ASSERT_TRUE(until([&] { return a.all<Ack>().size() == 1 && b.all<Welcome>().size() == 1; }));
  b.send(sell(1, 100, 4));
  ASSERT_TRUE(until([&] { return a.all<Fill>().size() == 1 && b.all<Fill>().size() == 1; }));
  const Fill* fill = a.all<Fill>()[0];
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->leaves_quantity, 6);

  // One trade and the bid level (ADD, then MODIFY) went to the publisher's channel 3.
  std::uint64_t published = 0, unpublished = 0, channel_messages = 0, acks = 0;
  ASSERT_TRUE(until([&] {
    engine.run_on_engine([&] {
      OrderService* s = agent->service(service);
      published = s->market_data().counters().md_published.get();
      unpublished = s->market_data().counters().md_unpublished.get();
      acks = s->ack_latency().total();
      channel_messages = agents.feed->publisher(publisher)->stats()->channels[0].messages.get();
    });
    return published == 3;
  }));
  EXPECT_EQ(unpublished, 0u);
  EXPECT_EQ(channel_messages, 3u);
  EXPECT_EQ(acks, 2u);

  // Removing the publisher: later events are counted as unpublished, the ack path goes on.
  engine.run_on_engine([&] { agents.feed->remove_publisher(publisher); });
  a.send(buy(2, 95, 1));
  ASSERT_TRUE(until([&] { return a.all<Ack>().size() == 2; }));
  ASSERT_TRUE(until([&] {
    engine.run_on_engine([&] { unpublished = agent->service(service)->market_data().counters().md_unpublished.get(); });
    return unpublished == 1;  // the new bid level
  }));
  engine.run_on_engine([&] { EXPECT_TRUE(agent->remove_service(service)); });
  engine.stop();
}

}  // namespace
}  // namespace qpgate::orders::test
