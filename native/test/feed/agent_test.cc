// The feed agent on a real engine: FEED_PUBLISH records written into toEngine
// (as JS does) are routed by the command agent to the feed agent, published
// on the soft device, received by a subscriber on the same engine and
// delivered as FEED_FRAME records in fromEngine.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "feed/feed_agent.h"
#include "live_util.h"

namespace qpgate::feed::test {
namespace {

// Drives the test's soft devices (the addon uses the engine's soft device agent).
class DeviceDriver final : public engine::Agent {
 public:
  const char* name() const override { return "test_devices"; }
  void on_start(engine::AgentContext& c) override { context = &c; }
  int do_work(std::uint64_t now) override {
    int work = 0;
    for (auto* d : devices) work += d->do_work(static_cast<std::int64_t>(now));
    // No fds registered: keep the engine from parking for long.
    context->arm_deadline(now + 200'000);
    return work;
  }
  engine::AgentContext* context = nullptr;
  std::vector<verbs::soft::SoftDevice*> devices;
};

engine::EngineConfig config() {
  engine::EngineConfig c;
  c.to_engine_capacity = 1 << 18;
  c.from_engine_capacity = 1 << 20;
  c.huge_pages = false;
  c.idle = engine::IdleKind::kBackoff;
  return c;
}

void write_publish(engine::SpscProducer& p, std::uint32_t publisher, std::uint16_t channel, std::uint16_t count,
                   const std::vector<std::uint8_t>& msgs) {
  const auto length = static_cast<std::int32_t>(records::kPublishHeaderBytes + msgs.size());
  std::byte* dst = p.claim(records::kFeedPublish, length);
  ASSERT_NE(dst, nullptr);
  auto* b = reinterpret_cast<std::uint8_t*>(dst);
  store_le<std::uint32_t>(b, publisher);
  store_le<std::uint16_t>(b + 4, channel);
  store_le<std::uint16_t>(b + 6, count);
  store_le<std::uint64_t>(b + 8, qpgate::monotonic_ns());
  if (!msgs.empty()) std::memcpy(b + records::kPublishHeaderBytes, msgs.data(), msgs.size());
}

TEST(FeedAgent, PublishRecordsAreRoutedPublishedReceivedAndDeliveredInOrder) {
  auto pub_dev = open_device("127.77.9.1");
  auto sub_dev = open_device("127.77.9.2");
  ASSERT_TRUE(pub_dev && sub_dev);
  engine::Engine engine(config());
  // As gateway/engine_agents.cc wires it: right after the command agent, which routes FEED_PUBLISH to it.
  FeedAgent* agent = engine.add_agent(std::make_unique<FeedAgent>(&engine.commands()));
  auto driver = std::make_unique<DeviceDriver>();
  driver->devices = {pub_dev.get(), sub_dev.get()};
  engine.add_agent(std::move(driver));
  engine.add_agent(std::make_unique<FeedDeliveryAgent>(*agent));  // after the devices, as engine_agents.cc adds it
  engine.start();

  std::uint32_t pub_id = 0, sub_id = 0;
  engine.run_on_engine([&] {
    PublisherConfig pc;
    PublisherChannelConfig ch;
    ch.id = 1;
    ch.group_a = ip4("239.77.9.1");
    ch.group_b = ip4("239.77.9.2");
    ch.snapshot.slot_count = 1024;
    pc.channels.push_back(ch);
    auto p = agent->add_publisher(*pub_dev, pc);
    ASSERT_TRUE(p.ok()) << p.error().message;
    pub_id = *p;
    SubscriberConfig sc;
    sc.channels.push_back({1, ip4("239.77.9.1"), ip4("239.77.9.2"), {}});
    sc.max_frame_bytes = 1024;
    auto s = agent->add_subscriber(*sub_dev, sc);
    ASSERT_TRUE(s.ok()) << s.error().message;
    sub_id = *s;
  });
  ASSERT_NE(pub_id, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));

  engine::SpscProducer to(engine.to_engine_ring().view);
  engine::SpscConsumer from(engine.from_engine_ring().view);
  constexpr int kRecords = 200;
  for (int r = 0; r < kRecords; ++r) {
    std::vector<std::uint8_t> m;
    for (int i = 0; i < 5; ++i) add_message(m, MessageType::kTrade, static_cast<std::uint32_t>(i + 1), 40, static_cast<std::uint8_t>(r));
    write_publish(to, pub_id, 1, 5, m);
    if (r % 20 == 19) {
      to.publish();
      engine.notify();
    }
  }
  to.publish();
  engine.notify();
  // An unknown type is skipped and counted; a record for no publisher too.
  ASSERT_TRUE(to.append(50, "x", 1));
  write_publish(to, 999, 1, 0, {});
  to.publish();
  engine.notify();

  Records got;
  spin_until([&] { return got.messages >= kRecords * 5; }, [&] { got.read(from); }, 5000);
  EXPECT_EQ(got.sequences(), [] {
    std::vector<std::uint64_t> v(kRecords * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = i + 1;
    return v;
  }());
  for (const auto& f : got.frames) EXPECT_EQ(f.subscriber, sub_id);
  EXPECT_TRUE(got.gaps.empty());
  ASSERT_EQ(got.sessions.size(), 1u);

  std::uint64_t publish_latency = 0, e2e = 0, rejected = 0;
  engine.run_on_engine([&] {
    publish_latency = agent->publisher(pub_id)->stats()->publish_latency.total();
    e2e = agent->subscriber(sub_id)->stats()->channels[0].latency.total();
    rejected = agent->rejected_records();
    EXPECT_TRUE(agent->remove_publisher(pub_id));
    EXPECT_TRUE(agent->remove_subscriber(sub_id));
  });
  EXPECT_EQ(publish_latency, static_cast<std::uint64_t>(kRecords));
  EXPECT_EQ(e2e, got.frames.size());
  EXPECT_EQ(rejected, 1u);
  EXPECT_EQ(engine.stats().rejected_records, 1u);
  engine.stop();
}

}  // namespace
}  // namespace qpgate::feed::test
