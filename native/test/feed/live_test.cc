// The live path over real soft devices on loopback (no engine: the test
// drives the devices, the publisher and the subscribers by hand): packing,
// sequencing, A/B lines, heartbeats, arbitration, gaps, session changes and
// garbage on the group.
#include <gtest/gtest.h>

#include <numeric>

#include "feed/publisher.h"
#include "feed/subscriber.h"
#include "live_util.h"

namespace qpgate::feed::test {
namespace {

struct Rig {
  Rig(const char* pub_address, const char* sub_address) : pub_dev(open_device(pub_address)), sub_dev(open_device(sub_address)) {}
  std::unique_ptr<verbs::soft::SoftDevice> pub_dev, sub_dev;
  std::unique_ptr<Publisher> pub;
  std::vector<std::unique_ptr<Subscriber>> subs;
  std::vector<std::unique_ptr<LocalRing>> rings;
  std::vector<Records> got;

  bool ok() const { return pub_dev && sub_dev; }

  void make_publisher(const PublisherConfig& c) {
    auto p = Publisher::create(*pub_dev, c, qpgate::monotonic_ns());
    ASSERT_TRUE(p.ok()) << p.error().message;
    pub = std::move(p).value();
  }
  std::size_t add_subscriber(std::uint16_t channel, std::uint32_t a, std::uint32_t b, std::uint64_t max_wait_ns = 2'000'000) {
    SubscriberConfig c;
    c.id = static_cast<std::uint32_t>(subs.size() + 1);
    SubscriberChannelConfig ch;
    ch.id = channel;
    ch.group_a = a;
    ch.group_b = b;
    ch.arbiter.max_wait_ns = max_wait_ns;
    c.channels.push_back(ch);
    c.max_frame_bytes = 1024;
    c.recv_slots = 256;
    auto s = Subscriber::create(*sub_dev, c);
    EXPECT_TRUE(s.ok()) << s.error().message;
    subs.push_back(std::move(s).value());
    rings.push_back(std::make_unique<LocalRing>());
    got.emplace_back();
    return subs.size() - 1;
  }
  void step() {
    const std::uint64_t now = qpgate::monotonic_ns();
    if (pub) pub->do_work(now);
    pub_dev->do_work(static_cast<std::int64_t>(now));
    sub_dev->do_work(static_cast<std::int64_t>(now));
    for (std::size_t i = 0; i < subs.size(); ++i) {
      subs[i]->do_work(qpgate::monotonic_ns(), rings[i]->producer);
      rings[i]->producer.publish();
      got[i].read(rings[i]->consumer);
    }
  }
  void run_until(const std::function<bool()>& done, int timeout_ms = 3000) { spin_until(done, [&] { step(); }, timeout_ms); }
  void settle(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      step();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
};

PublisherConfig one_channel(std::uint16_t id, const char* a, const char* b, std::uint64_t heartbeat_ns = 1'000'000'000) {
  PublisherConfig c;
  PublisherChannelConfig ch;
  ch.id = id;
  ch.group_a = ip4(a);
  ch.group_b = b == nullptr ? 0 : ip4(b);
  ch.heartbeat_ns = heartbeat_ns;
  ch.snapshot.slot_count = 1024;
  c.channels.push_back(ch);
  c.send_slots = 64;
  return c;
}

std::vector<std::uint8_t> messages(std::uint16_t n, std::size_t body, std::uint8_t seed, std::uint32_t instrument = 1) {
  std::vector<std::uint8_t> out;
  for (std::uint16_t i = 0; i < n; ++i) add_message(out, MessageType::kQuote, instrument + i, body, static_cast<std::uint8_t>(seed + i));
  return out;
}

std::vector<std::uint64_t> iota_from(std::uint64_t first, std::size_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(FeedLive, PublisherPacksFramesSequencesThemAndSendsEachOnBothLines) {
  Rig rig("127.77.1.1", "127.77.1.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(3, "239.77.1.1", "239.77.1.2"));
  const auto both = rig.add_subscriber(3, ip4("239.77.1.1"), ip4("239.77.1.2"));
  rig.settle(5);
  // 3 records x 5 messages of 112 bytes = 1680 bytes: two 1024-byte frames.
  for (int r = 0; r < 3; ++r) {
    const auto m = messages(5, 100, static_cast<std::uint8_t>(r * 16));
    ASSERT_EQ(rig.pub->publish(3, m, 5, qpgate::monotonic_ns()), PublishStatus::kOk);
  }
  rig.run_until([&] { return rig.got[both].messages >= 15; });
  rig.settle(10);
  const Records& g = rig.got[both];
  ASSERT_EQ(g.frames.size(), 2u);
  EXPECT_EQ(g.sequences(), iota_from(1, 15));
  EXPECT_EQ(g.frames[0].first_seq, 1u);
  EXPECT_EQ(g.frames[0].count, 8u);  // (1024 - 32) / 112 = 8.86
  const auto& ps = *rig.pub->stats();
  EXPECT_EQ(ps.channels[0].frames.get(), 2u);
  EXPECT_EQ(ps.channels[0].messages.get(), 15u);
  EXPECT_EQ(ps.channels[0].next_seq.get(), 16u);
  EXPECT_EQ(ps.records.get(), 3u);
  EXPECT_EQ(ps.publish_latency.total(), 3u);
  EXPECT_EQ(rig.pub->ring(3)->frames(), 2u);
  EXPECT_EQ(rig.pub->snapshot(3)->slots_used(), 5u);  // instruments 1..5, latest quote each
  // Each frame came on both lines: one copy won, the other was a duplicate.
  const auto& sc = rig.subs[both]->stats()->channels[0];
  EXPECT_EQ(sc.line_a_frames.get(), 2u);
  EXPECT_EQ(sc.line_b_frames.get(), 2u);
  EXPECT_EQ(sc.duplicates.get(), 2u);
  EXPECT_EQ(sc.gaps.get(), 0u);
  EXPECT_EQ(sc.latency.total(), 2u);
  ASSERT_EQ(g.sessions.size(), 1u);
  EXPECT_EQ(g.sessions[0].old_session, 0u);
  EXPECT_EQ(g.sessions[0].new_session, rig.pub->session());
  // The frame bytes are the publisher's, byte for byte.
  auto parsed = parse_frame(g.frames[1].frame);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->header().session(), rig.pub->session());
  EXPECT_EQ(parsed->header().channel(), 3u);
}

TEST(FeedLive, AnIdleChannelSendsHeartbeatsAndAHeartbeatRevealsALostTail) {
  Rig rig("127.77.2.1", "127.77.2.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(4, "239.77.2.1", nullptr, 5'000'000));
  const auto a = rig.add_subscriber(4, ip4("239.77.2.1"), 0, 1'000'000);
  rig.settle(30);
  EXPECT_GE(rig.pub->stats()->channels[0].heartbeats.get(), 3u);
  EXPECT_GE(rig.subs[a]->stats()->channels[0].heartbeats.get(), 3u);
  // Lose the only line for 4 messages, then only heartbeats follow.
  rig.pub->set_line_mask(0);
  ASSERT_EQ(rig.pub->publish(4, messages(4, 20, 1), 4, qpgate::monotonic_ns()), PublishStatus::kOk);
  rig.step();
  rig.pub->set_line_mask(1);
  rig.run_until([&] { return !rig.got[a].gaps.empty(); }, 2000);
  ASSERT_EQ(rig.got[a].gaps.size(), 1u);
  EXPECT_EQ(rig.got[a].gaps[0].from, 1u);
  EXPECT_EQ(rig.got[a].gaps[0].count, 4u);
  EXPECT_EQ(rig.subs[a]->stats()->channels[0].unrecoverable.get(), 4u);
}

// The engine hands do_work the time its loop turn began, which may be
// earlier than the clock read that created the publisher: no heartbeat may
// go out before a whole interval has passed since the start.
TEST(FeedLive, HeartbeatsFollowTheIntervalFromTheStartEvenWithAnEarlierNow) {
  Rig rig("127.77.7.1", "127.77.7.2");
  ASSERT_TRUE(rig.ok());
  const std::uint64_t interval = 1'000'000'000;
  const std::uint64_t start = qpgate::monotonic_ns();
  auto p = Publisher::create(*rig.pub_dev, one_channel(8, "239.77.7.1", nullptr, interval), start);
  ASSERT_TRUE(p.ok()) << p.error().message;
  Publisher& pub = **p;
  const auto& heartbeats = pub.stats()->channels[0].heartbeats;
  pub.do_work(start - 1'000);
  EXPECT_EQ(heartbeats.get(), 0u);
  EXPECT_EQ(pub.next_deadline_ns(), start + interval);
  pub.do_work(start + interval - 1);
  EXPECT_EQ(heartbeats.get(), 0u);
  pub.do_work(start + interval);
  EXPECT_EQ(heartbeats.get(), 1u);
  EXPECT_EQ(pub.next_deadline_ns(), start + 2 * interval);
  pub.do_work(start + 2 * interval - 1);
  EXPECT_EQ(heartbeats.get(), 1u);
}

TEST(FeedLive, LineBFillsWhatLineALostAndAnAOnlySubscriberReportsTheGap) {
  Rig rig("127.77.3.1", "127.77.3.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(5, "239.77.3.1", "239.77.3.2"));
  const auto both = rig.add_subscriber(5, ip4("239.77.3.1"), ip4("239.77.3.2"));
  const auto a_only = rig.add_subscriber(5, ip4("239.77.3.1"), 0, 1'000'000);
  rig.settle(5);
  std::uint64_t published = 0;
  auto publish = [&](std::uint16_t n) {
    ASSERT_EQ(rig.pub->publish(5, messages(n, 30, static_cast<std::uint8_t>(published)), n, qpgate::monotonic_ns()), PublishStatus::kOk);
    published += n;
    rig.step();
  };
  publish(10);  // 1..10 on both lines
  rig.pub->set_line_mask(2);
  publish(7);   // 11..17 on B only
  rig.pub->set_line_mask(3);
  publish(5);   // 18..22 on both
  rig.run_until([&] { return rig.got[both].messages >= 22 && !rig.got[a_only].gaps.empty(); });
  rig.settle(10);
  EXPECT_EQ(rig.got[both].sequences(), iota_from(1, 22));
  EXPECT_TRUE(rig.got[both].gaps.empty());
  EXPECT_EQ(rig.subs[both]->stats()->channels[0].gaps.get(), 0u);
  ASSERT_EQ(rig.got[a_only].gaps.size(), 1u);
  EXPECT_EQ(rig.got[a_only].gaps[0].from, 11u);
  EXPECT_EQ(rig.got[a_only].gaps[0].count, 7u);
  std::vector<std::uint64_t> expect = iota_from(1, 10);
  for (std::uint64_t s = 18; s <= 22; ++s) expect.push_back(s);
  EXPECT_EQ(rig.got[a_only].sequences(), expect);
}

TEST(FeedLive, APublisherRestartIsASessionChange) {
  Rig rig("127.77.4.1", "127.77.4.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(6, "239.77.4.1", nullptr));
  const auto a = rig.add_subscriber(6, ip4("239.77.4.1"), 0);
  rig.settle(5);
  ASSERT_EQ(rig.pub->publish(6, messages(3, 10, 0), 3, qpgate::monotonic_ns()), PublishStatus::kOk);
  rig.run_until([&] { return rig.got[a].messages >= 3; });
  const std::uint32_t first = rig.pub->session();
  rig.pub->close(qpgate::monotonic_ns());
  rig.run_until([&] { return rig.pub->drained(); });
  PublisherConfig c = one_channel(6, "239.77.4.1", nullptr);
  c.previous_session = first;
  rig.make_publisher(c);
  ASSERT_NE(rig.pub->session(), first);
  ASSERT_EQ(rig.pub->publish(6, messages(2, 10, 0), 2, qpgate::monotonic_ns()), PublishStatus::kOk);
  rig.run_until([&] { return rig.got[a].messages >= 5; });
  ASSERT_EQ(rig.got[a].sessions.size(), 2u);
  EXPECT_EQ(rig.got[a].sessions[1].old_session, first);
  EXPECT_EQ(rig.got[a].sessions[1].new_session, rig.pub->session());
  EXPECT_EQ(rig.got[a].sessions[1].next_seq, 1u);
  EXPECT_EQ(rig.got[a].sequences(), (std::vector<std::uint64_t>{1, 2, 3, 1, 2}));
  EXPECT_EQ(rig.subs[a]->stats()->channels[0].session_changes.get(), 1u);
}

TEST(FeedLive, GarbageOnTheGroupIsCountedAndTheFeedCarriesOn) {
  Rig rig("127.77.5.1", "127.77.5.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(7, "239.77.5.1", nullptr));
  const auto a = rig.add_subscriber(7, ip4("239.77.5.1"), 0);
  // A raw UD sender on a third device: valid RoCEv2, junk frame bodies.
  auto junk_dev = open_device("127.77.5.3");
  ASSERT_TRUE(junk_dev);
  UdEndpointConfig ec;
  ec.buffer_bytes = 4096;
  ec.send_wr = 16;
  ec.recv_wr = 1;
  auto ep = make_ud_endpoint(*junk_dev, ec);
  ASSERT_TRUE(ep.ok());
  verbs::AhAttr attr;
  attr.dgid = group_gid(ip4("239.77.5.1"));
  auto ah = (*ep)->pd->create_ah(attr);
  ASSERT_TRUE(ah.ok());
  auto send_junk = [&](std::vector<std::uint8_t> bytes) {
    std::memcpy((*ep)->at(0), bytes.data(), bytes.size());
    const verbs::Sge s = (*ep)->sge(0, static_cast<std::uint32_t>(bytes.size()));
    verbs::SendWr wr;
    wr.sg_list = std::span<const verbs::Sge>(&s, 1);
    wr.ud.ah = ah->get();
    wr.ud.remote_qpn = verbs::kMulticastQpn;
    wr.ud.remote_qkey = kFeedQkey;
    ASSERT_TRUE((*ep)->qp->post_send(wr).ok());
    for (int i = 0; i < 5; ++i) {
      junk_dev->do_work(qpgate::monotonic_ns());
      rig.step();
    }
  };
  rig.settle(5);
  send_junk({1, 2, 3});                                 // truncated header
  send_junk(std::vector<std::uint8_t>(64, 0xff));        // bad version
  auto real = messages(2, 10, 0);
  std::vector<std::uint8_t> bad(32 + real.size(), 0);
  FrameHeaderRef h(bad.data());
  h.set_version(1);
  h.set_channel(7);
  h.set_session(99);
  h.set_first_seq(1);
  h.set_message_count(3);  // but two messages
  h.set_frame_length(static_cast<std::uint16_t>(bad.size()));
  std::memcpy(bad.data() + 32, real.data(), real.size());
  send_junk(bad);                                       // count mismatch
  rig.settle(10);
  ASSERT_EQ(rig.pub->publish(7, messages(4, 10, 0), 4, qpgate::monotonic_ns()), PublishStatus::kOk);
  rig.run_until([&] { return rig.got[a].messages >= 4; });
  EXPECT_EQ(rig.got[a].sequences(), iota_from(1, 4));
  const FrameCounters& fc = rig.subs[a]->stats()->channels[0].frame_counters;
  EXPECT_EQ(fc.rejected_count(FrameError::kTruncatedHeader), 1u);
  EXPECT_EQ(fc.rejected_count(FrameError::kBadVersion), 1u);
  EXPECT_EQ(fc.rejected_count(FrameError::kCountMismatch), 1u);
}

TEST(FeedLive, MalformedPublishRecordsAreRefusedWhole) {
  Rig rig("127.77.6.1", "127.77.6.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(one_channel(8, "239.77.6.1", nullptr));
  auto m = messages(2, 10, 0);
  EXPECT_EQ(rig.pub->publish(9, m, 2, 0), PublishStatus::kUnknownChannel);
  EXPECT_EQ(rig.pub->publish(8, m, 3, 0), PublishStatus::kMalformed);        // count says 3
  EXPECT_EQ(rig.pub->publish(8, std::span(m).first(m.size() - 1), 2, 0), PublishStatus::kMalformed);
  std::vector<std::uint8_t> big;
  add_message(big, MessageType::kQuote, 1, 1024 - 44 + 1, 0);
  EXPECT_EQ(rig.pub->publish(8, big, 1, 0), PublishStatus::kTooLarge);
  EXPECT_EQ(rig.pub->stats()->rejected_records.get(), 4u);
  EXPECT_EQ(rig.pub->stats()->channels[0].messages.get(), 0u);
  EXPECT_EQ(rig.pub->ring(8)->frames(), 0u);
}

}  // namespace
}  // namespace qpgate::feed::test
