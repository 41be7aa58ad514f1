// A feed on two devices, one per link (an ibv gateway's backend.device and
// backend.alternateDevice; docs/protocol.md 1.11), over soft devices on
// loopback: the publisher sends line B from its alternate device, the
// subscriber receives it on its own, and when the first link goes down (the
// fault injector drops everything the first devices send and receive) line
// B alone carries the feed while the recovery connection, its retries run
// out, is made again on the alternate devices and recovers a gap there.
// Addresses 127.77.96.y, groups 239.77.96.y.
#include <gtest/gtest.h>

#include "feed/publisher.h"
#include "feed/recovery_service.h"
#include "feed/subscriber.h"
#include "live_util.h"
#include "verbs/soft/fault.h"

namespace qpgate::feed::test {
namespace {

constexpr std::uint16_t kChannel = 9;

struct TwoLinks {
  TwoLinks()
      : gw(open_device("127.77.96.1")), gw_alt(open_device("127.77.96.2")), sub_dev(open_device("127.77.96.3")),
        sub_alt(open_device("127.77.96.4")), service([this](std::uint32_t id) { return id == 1 ? pub.get() : nullptr; }) {}
  std::unique_ptr<verbs::soft::SoftDevice> gw, gw_alt, sub_dev, sub_alt;
  std::unique_ptr<Publisher> pub;
  RecoveryService service;
  std::unique_ptr<Subscriber> sub;
  LocalRing ring;
  Records got;
  std::uint32_t published = 0;

  bool ok() const { return gw && gw_alt && sub_dev && sub_alt; }

  void make_feed() {
    PublisherConfig pc;
    PublisherChannelConfig ch;
    ch.id = kChannel;
    ch.group_a = ip4("239.77.96.1");
    ch.group_b = ip4("239.77.96.2");
    ch.heartbeat_ns = 5'000'000;
    ch.snapshot.slot_count = 1024;
    pc.channels.push_back(ch);
    pc.send_slots = 128;
    auto p = Publisher::create(*gw, pc, monotonic_ns(), gw_alt.get());
    ASSERT_TRUE(p.ok()) << p.error().message;
    pub = std::move(p).value();

    SubscriberConfig sc;
    sc.id = 1;
    SubscriberChannelConfig sch;
    sch.id = kChannel;
    sch.group_a = ch.group_a;
    sch.group_b = ch.group_b;
    sch.arbiter.max_wait_ns = 500'000;
    sc.channels.push_back(sch);
    sc.max_frame_bytes = 1024;
    sc.recv_slots = 512;
    sc.recovery.enabled = true;
    sc.recovery.report_interval_ns = 20'000'000;  // a dead link is found by the next report
    auto s = Subscriber::create(*sub_dev, sc, sub_alt.get());
    ASSERT_TRUE(s.ok()) << s.error().message;
    sub = std::move(s).value();
    open_recovery(verbs::kPrimaryDevice, sub->recovery()->local());
  }
  void open_recovery(std::uint8_t device, const verbs::RcPeer& local) {
    RecoverySessionConfig rc;
    rc.session = 1;
    rc.publisher = 1;
    rc.device = device;
    rc.channels = {kChannel};
    rc.remote = local;
    auto answer = service.open(device == verbs::kAlternateDevice ? *gw_alt : *gw, rc, monotonic_ns());
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    ASSERT_TRUE(sub->connect_recovery(*answer).ok());
  }
  void step() {
    const std::uint64_t now = monotonic_ns();
    pub->do_work(now);
    service.do_work(now);
    for (auto* d : {gw.get(), gw_alt.get(), sub_dev.get(), sub_alt.get()}) d->do_work(static_cast<std::int64_t>(now));
    sub->do_work(monotonic_ns(), ring.producer);
    ring.producer.publish();
    got.read(ring.consumer);
  }
  void run_until(const std::function<bool()>& done, int timeout_ms = 10000) { spin_until(done, [&] { step(); }, timeout_ms); }
  void publish(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i, ++published) {
      std::vector<std::uint8_t> m;
      add_message(m, MessageType::kQuote, published % 64 + 1, 40, static_cast<std::uint8_t>(published));
      while (pub->publish(kChannel, m, 1, monotonic_ns()) == PublishStatus::kRetry) step();
      if (i % 8 == 7) step();
    }
  }
  // The first link down: nothing leaves or reaches the first devices.
  void cut_first_link() {
    verbs::soft::FaultPlan down;
    down.tx.drop = 1;
    down.rx.drop = 1;
    gw->inject_faults(down);
    sub_dev->inject_faults(down);
  }
  const SubscriberChannelCounters& counters() const { return sub->stats()->channels[0]; }
};

TEST(FeedTwoDevices, LineBLeavesFromTheAlternateDeviceAndKeepsTheFeedWhenTheFirstLinkIsDown) {
  TwoLinks rig;
  ASSERT_TRUE(rig.ok());
  rig.make_feed();
  ASSERT_NE(rig.pub->alternate_qp(), nullptr);
  EXPECT_TRUE(rig.sub->has_alternate_device());
  rig.publish(40);
  rig.run_until([&] { return rig.counters().expected.get() == 41; });
  EXPECT_GT(rig.counters().line_a_frames.get(), 0u);
  EXPECT_GT(rig.counters().line_b_frames.get(), 0u);

  rig.cut_first_link();
  const std::uint64_t line_a_before = rig.counters().line_a_frames.get();
  rig.publish(60);
  rig.run_until([&] { return rig.counters().expected.get() == 101; });
  EXPECT_EQ(rig.counters().line_a_frames.get(), line_a_before);  // line A is gone with the link
  EXPECT_EQ(rig.counters().gaps.get(), 0u);                      // line B carried every frame
  EXPECT_TRUE(rig.got.gaps.empty());
  expect_contiguous(rig.got.live_sequences(), 1, 100);
}

TEST(FeedTwoDevices, TheRecoveryConnectionFailsOverToTheAlternateDevicesAndRecoversAGapThere) {
  TwoLinks rig;
  ASSERT_TRUE(rig.ok());
  rig.make_feed();
  rig.publish(20);
  rig.run_until([&] { return rig.counters().expected.get() == 21; });

  // The first link goes: the next report's retries run out (IBV_WC_RETRY_EXC_ERR).
  rig.cut_first_link();
  const RecoveryClientCounters& rc = rig.sub->recovery()->counters();
  rig.run_until([&] { return rc.retry_exceeded.get() > 0; }, 15000);
  EXPECT_TRUE(rig.sub->recovery()->failed());
  EXPECT_EQ(rig.sub->recovery_device(), verbs::kPrimaryDevice);

  // The failover: a new connection on the alternate devices, the gateway's session there.
  ASSERT_TRUE(rig.service.close(1));
  auto local = rig.sub->renew_recovery(verbs::kAlternateDevice);
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_EQ(rig.sub->recovery_device(), verbs::kAlternateDevice);
  rig.open_recovery(verbs::kAlternateDevice, *local);
  ASSERT_EQ(rig.service.sessions().size(), 1u);
  EXPECT_EQ(rig.service.sessions()[0].device, verbs::kAlternateDevice);

  // A gap on line B, the only line left: recovered over the alternate devices.
  rig.pub->set_line_mask(0);
  rig.publish(15);
  rig.pub->set_line_mask(3);
  rig.publish(25);
  rig.run_until([&] { return rig.counters().expected.get() == 61 && rig.counters().held.get() == 0; });
  EXPECT_GT(rig.counters().recovered.get(), 0u);
  EXPECT_EQ(rig.counters().recovery_failures.get(), 0u);
  EXPECT_TRUE(rig.got.gaps.empty());
  expect_contiguous(rig.got.live_sequences(), 1, 60);
}

TEST(FeedTwoDevices, AnAlternateDeviceMustBeAnotherDeviceAndRenewingOnANonexistentOneIsRefused) {
  auto dev = open_device("127.77.96.5");
  ASSERT_TRUE(dev);
  PublisherConfig pc;
  PublisherChannelConfig ch;
  ch.id = 1;
  ch.group_a = ip4("239.77.96.5");
  ch.snapshot.slot_count = 64;
  ch.ring.max_frames = 64;
  pc.channels.push_back(ch);
  pc.send_slots = 8;
  auto same = Publisher::create(*dev, pc, monotonic_ns(), dev.get());
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error().code, EINVAL);

  SubscriberConfig sc;
  SubscriberChannelConfig sch;
  sch.id = 1;
  sch.group_a = ch.group_a;
  sc.channels.push_back(sch);
  sc.recv_slots = 8;
  sc.recovery.enabled = true;
  ASSERT_FALSE(Subscriber::create(*dev, sc, dev.get()).ok());
  auto sub = Subscriber::create(*dev, sc);
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  EXPECT_FALSE((*sub)->has_alternate_device());
  auto renewed = (*sub)->renew_recovery(verbs::kAlternateDevice);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.error().code, EINVAL);
  EXPECT_NE(renewed.error().message.find("no alternate device"), std::string::npos) << renewed.error().message;
}

}  // namespace
}  // namespace qpgate::feed::test
