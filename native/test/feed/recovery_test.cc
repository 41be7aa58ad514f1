// Recovery over RC (docs/protocol.md 2.8) on real soft devices on loopback:
// the gateway's RecoveryService answering a subscriber's recovery
// connection, with UD loss injected by the soft device's fault injector.
// Addresses 127.77.9x.y, groups 239.77.9x.y.
#include <gtest/gtest.h>

#include <map>

#include "feed/publisher.h"
#include "feed/recovery_service.h"
#include "feed/subscriber.h"
#include "live_util.h"
#include "verbs/soft/fault.h"
#include "wire/opcode.h"

namespace qpgate::feed::test {
namespace {

constexpr std::uint16_t kChannel = 7;

struct Rig {
  Rig(const char* gateway, const char* client, std::int64_t ring_bytes = std::int64_t{1} << 20)
      : gw_dev(open_device(gateway)), sub_dev(open_device(client)),
        service([this](std::uint32_t id) { return id == 1 ? pub.get() : nullptr; }), ring(ring_bytes) {}
  std::unique_ptr<verbs::soft::SoftDevice> gw_dev, sub_dev;
  std::unique_ptr<Publisher> pub;
  RecoveryService service;
  std::unique_ptr<Subscriber> sub;
  LocalRing ring;
  Records got;
  bool app_reads = true;  // false: the app stops reading fromEngine, which fills up
  bool service_answers = true;  // false: the gateway's transport ACKs requests, its recovery service does not answer yet
  SubscriberRecoveryConfig recovery_config;  // make_subscriber's, recovery enabled or not as it is told
  std::uint32_t next_session = 1;

  bool ok() const { return gw_dev && sub_dev; }

  void make_publisher(std::uint32_t group, std::size_t ring_frames = 65536, std::uint32_t previous = 0) {
    PublisherConfig c;
    PublisherChannelConfig ch;
    ch.id = kChannel;
    ch.group_a = group;
    ch.heartbeat_ns = 5'000'000;  // a loss at the tail is seen within 5 ms
    ch.ring.max_frames = ring_frames;
    ch.snapshot.slot_count = 1024;
    c.channels.push_back(ch);
    c.send_slots = 256;
    c.previous_session = previous;
    auto p = Publisher::create(*gw_dev, c, qpgate::monotonic_ns());
    ASSERT_TRUE(p.ok()) << p.error().message;
    pub = std::move(p).value();
  }
  RecoverySessionConfig session_config(verbs::RcPeer remote, std::vector<std::uint16_t> channels = {kChannel}) {
    RecoverySessionConfig rc;
    rc.session = next_session++;
    rc.publisher = 1;
    rc.channels = std::move(channels);
    rc.remote = remote;
    return rc;
  }
  void make_subscriber(std::uint32_t group, bool recovery = true) {
    SubscriberConfig c;
    c.id = 1;
    SubscriberChannelConfig ch;
    ch.id = kChannel;
    ch.group_a = group;
    ch.arbiter.max_wait_ns = 500'000;
    c.channels.push_back(ch);
    c.max_frame_bytes = 1024;
    c.recv_slots = 1024;
    c.recovery = recovery_config;
    c.recovery.enabled = recovery;
    auto s = Subscriber::create(*sub_dev, c);
    ASSERT_TRUE(s.ok()) << s.error().message;
    sub = std::move(s).value();
    if (!recovery) return;
    auto gw = service.open(*gw_dev, session_config(sub->recovery()->local()), qpgate::monotonic_ns());
    ASSERT_TRUE(gw.ok()) << gw.error().message;
    ASSERT_TRUE(sub->connect_recovery(*gw).ok());
  }
  void step() {
    const std::uint64_t now = qpgate::monotonic_ns();
    if (pub) pub->do_work(now);
    if (service_answers) service.do_work(now);
    gw_dev->do_work(static_cast<std::int64_t>(now));
    sub_dev->do_work(static_cast<std::int64_t>(now));
    if (sub) {
      sub->do_work(qpgate::monotonic_ns(), ring.producer);
      ring.producer.publish();
      if (app_reads) got.read(ring.consumer);
    }
  }
  void run_until(const std::function<bool()>& done, int timeout_ms = 10000) { spin_until(done, [&] { step(); }, timeout_ms); }
  void settle(int ms) {
    run_until([] { return false; }, ms);
  }
  // `n` one-message records (instrument = seq % 64), stepping every 8 so no receive queue overflows.
  void publish(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::uint8_t> m;
      add_message(m, MessageType::kQuote, static_cast<std::uint32_t>(i % 64 + 1), 40, static_cast<std::uint8_t>(i));
      while (pub->publish(kChannel, m, 1, qpgate::monotonic_ns()) == PublishStatus::kRetry) step();
      if (i % 8 == 7) step();
    }
  }
  const SubscriberChannelCounters& counters() const { return sub->stats()->channels[0]; }
};

TEST(FeedRecovery, FivePercentDropEveryGapRecoveredEveryMessageOnceInOrder) {
  Rig rig("127.77.91.1", "127.77.91.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.91.1");
  rig.make_publisher(group);
  rig.make_subscriber(group);
  verbs::soft::FaultPlan plan;
  plan.seed = 42;
  plan.rx.drop = 0.05;
  plan.opcodes = {static_cast<std::uint8_t>(wire::Opcode::kUdSendOnly)};  // the multicast, not the RC session
  rig.sub_dev->inject_faults(plan);

  constexpr std::size_t kMessages = 20'000;
  rig.publish(kMessages);
  rig.run_until([&] { return rig.counters().expected.get() == kMessages + 1 && rig.counters().held.get() == 0; });

  expect_contiguous(rig.got.live_sequences(), 1, kMessages);
  const auto& c = rig.counters();
  EXPECT_GT(c.gaps.get(), 10u);
  EXPECT_EQ(c.unrecoverable.get(), 0u);
  EXPECT_EQ(c.recovered.get(), rig.sub->arbiter(kChannel)->counters().gap_messages);
  EXPECT_GT(c.recovered.get(), 0u);
  EXPECT_EQ(c.recovery_failures.get(), 0u);
  EXPECT_TRUE(rig.got.gaps.empty());
  std::size_t retransmitted = 0;
  for (const auto& f : rig.got.frames) retransmitted += (f.flags & flags::kRetransmission) != 0 ? 1 : 0;
  EXPECT_GT(retransmitted, 0u);
  const auto sessions = rig.service.sessions();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].counters->retransmit_requests.get(), c.recovery_requests.get());
  EXPECT_GT(sessions[0].counters->frames_sent.get(), 0u);
  EXPECT_EQ(sessions[0].counters->by_status[static_cast<std::size_t>(recovery::Status::kOk)].get(),
            c.recovery_replies.get());
}

TEST(FeedRecovery, LateJoinerGetsSnapshotThenTheStreamWithNoGap) {
  Rig rig("127.77.92.1", "127.77.92.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.92.1");
  rig.make_publisher(group);
  rig.publish(500);
  rig.settle(20);
  rig.make_subscriber(group);
  rig.publish(500);
  rig.run_until([&] { return rig.counters().expected.get() == 1001 && rig.counters().held.get() == 0; });

  const auto& c = rig.counters();
  EXPECT_EQ(c.snapshots.get(), 1u);
  EXPECT_EQ(c.gaps.get(), 0u);
  EXPECT_EQ(c.unrecoverable.get(), 0u);
  EXPECT_TRUE(rig.got.gaps.empty());
  // Snapshot frames come first: SnapshotBegin, one Quote per instrument (64), SnapshotEnd.
  ASSERT_FALSE(rig.got.frames.empty());
  std::size_t i = 0;
  std::uint64_t snapshot_messages = 0;
  std::uint64_t resume = 0;
  std::map<std::uint32_t, int> instruments;
  for (; i < rig.got.frames.size() && (rig.got.frames[i].flags & flags::kSnapshot) != 0; ++i) {
    const auto& f = rig.got.frames[i];
    resume = f.first_seq;
    const auto parsed = parse_frame(f.frame);
    ASSERT_TRUE(parsed.ok());
    for (const Message& m : *parsed) {
      ++snapshot_messages;
      if (m.type() == MessageType::kQuote) ++instruments[m.instrument_id()];
    }
  }
  EXPECT_GT(i, 0u);
  EXPECT_EQ(snapshot_messages, 64u + 2u);
  EXPECT_EQ(instruments.size(), 64u);
  EXPECT_EQ(c.snapshot_messages.get(), snapshot_messages);
  for (std::size_t k = i; k < rig.got.frames.size(); ++k) EXPECT_EQ(rig.got.frames[k].flags & flags::kSnapshot, 0);
  // Then the stream, from the snapshot's last_sequence + 1 to the end, no gap.
  ASSERT_GT(resume, 500u);
  expect_contiguous(rig.got.live_sequences(), resume, 1000);
}

TEST(FeedRecovery, GapOlderThanTheRingIsUnrecoverableThenResyncedFromASnapshot) {
  Rig rig("127.77.93.1", "127.77.93.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.93.1");
  rig.make_publisher(group, /*ring_frames=*/16);
  rig.make_subscriber(group);
  rig.publish(100);
  rig.run_until([&] { return rig.counters().expected.get() == 101; });
  rig.pub->set_line_mask(0);  // the subscriber misses 300 messages; the ring keeps 16 frames
  rig.publish(300);
  rig.settle(5);
  rig.pub->set_line_mask(1);
  rig.publish(100);
  rig.run_until([&] { return rig.counters().expected.get() == 501 && rig.counters().held.get() == 0; });

  const auto& c = rig.counters();
  EXPECT_EQ(c.range_gone.get(), 1u);
  EXPECT_EQ(c.snapshots.get(), 1u);
  ASSERT_EQ(rig.got.gaps.size(), 1u);
  EXPECT_EQ(rig.got.gaps[0].from, 101u);
  EXPECT_EQ(c.unrecoverable.get(), rig.got.gaps[0].count);
  // Live 1..100, then the snapshot, then the stream from its last_sequence + 1 with no further gap.
  std::vector<std::uint64_t> before, after;
  bool seen_snapshot = false;
  std::uint64_t resume = 0;
  for (const auto& f : rig.got.frames) {
    if ((f.flags & flags::kSnapshot) != 0) {
      seen_snapshot = true;
      resume = f.first_seq;
      continue;
    }
    for (std::uint16_t k = f.skip; k < f.count; ++k) (seen_snapshot ? after : before).push_back(f.first_seq + k);
  }
  expect_contiguous(before, 1, 100);
  ASSERT_GE(resume, 401u);
  expect_contiguous(after, resume, 500);
  const auto s = rig.service.sessions();
  EXPECT_EQ(s[0].counters->by_status[static_cast<std::size_t>(recovery::Status::kRangeGone)].get(), 1u);
  EXPECT_EQ(s[0].counters->snapshots_sent.get(), 1u);
}

TEST(FeedRecovery, NewPublisherSessionMidStreamResyncsBySnapshot) {
  Rig rig("127.77.94.1", "127.77.94.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.94.1");
  rig.make_publisher(group);
  rig.make_subscriber(group);
  rig.publish(50);
  rig.run_until([&] { return rig.counters().expected.get() == 51; });
  const std::uint32_t old_session = rig.pub->session();
  // The gateway restarts; the subscriber misses the new session's first frames.
  rig.pub.reset();
  rig.make_publisher(group, 65536, old_session);
  rig.pub->set_line_mask(0);
  rig.publish(40);
  rig.pub->set_line_mask(1);
  rig.publish(60);
  rig.run_until([&] { return rig.counters().expected.get() == 101 && rig.counters().snapshots.get() == 1 &&
                             rig.counters().held.get() == 0; });
  const auto& c = rig.counters();
  EXPECT_EQ(c.session_changes.get(), 1u);
  EXPECT_EQ(c.session.get(), rig.pub->session());
  EXPECT_EQ(c.snapshots.get(), 1u);
  ASSERT_EQ(rig.got.sessions.size(), 2u);
  EXPECT_EQ(rig.got.sessions[1].old_session, old_session);
  EXPECT_TRUE(rig.got.gaps.empty());
}

// The gateway restarted: its recovery session (and QP) is gone with it. A
// renewed connection (a new QP, a new session on the new gateway) serves the
// new session's snapshot; what was asked of the old QP is void, and the wait
// for the new connection did not time out (src/feed/recovery-link.ts drives this).
TEST(FeedRecovery, ARenewedConnectionServesTheSnapshotOfTheRestartedGatewaysSession) {
  Rig rig("127.77.94.5", "127.77.94.6");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.94.5");
  rig.make_publisher(group);
  rig.make_subscriber(group);
  rig.publish(50);
  rig.run_until([&] { return rig.counters().expected.get() == 51; });
  const std::uint32_t old_session = rig.pub->session();
  ASSERT_TRUE(rig.service.close(1));  // the old process's session
  auto local = rig.sub->renew_recovery();  // its QP failed, or the restart was seen: a new one
  ASSERT_TRUE(local.ok()) << local.error().message;
  rig.pub.reset();
  rig.make_publisher(group, 65536, old_session);
  rig.pub->set_line_mask(0);  // the new session's first frames are missed: a snapshot is needed
  rig.publish(40);
  rig.pub->set_line_mask(1);
  rig.publish(20);
  rig.settle(2500);  // longer than request_timeout_ns: a connection being made is waited for
  EXPECT_GT(rig.counters().held.get(), 0u);
  auto gw = rig.service.open(*rig.gw_dev, rig.session_config(*local), monotonic_ns());
  ASSERT_TRUE(gw.ok()) << gw.error().message;
  ASSERT_TRUE(rig.sub->connect_recovery(*gw).ok());
  rig.publish(40);
  rig.run_until([&] { return rig.counters().snapshots.get() == 1 && rig.counters().expected.get() == 101 &&
                             rig.counters().held.get() == 0; });
  const auto& c = rig.counters();
  EXPECT_EQ(c.recovery_failures.get(), 0u);
  EXPECT_EQ(c.session.get(), rig.pub->session());
  EXPECT_TRUE(rig.got.gaps.empty());
}

TEST(FeedRecovery, SubscriberReportsItsLagAndLossesToTheGateway) {
  Rig rig("127.77.98.1", "127.77.98.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.98.1");
  rig.make_publisher(group);
  rig.make_subscriber(group);
  rig.sub->consumer_load()->queued.store(1234);
  rig.sub->consumer_load()->dropped.store(56);
  rig.sub->consumer_load()->conflated.store(7);
  rig.publish(10);
  const auto counters = rig.service.sessions()[0].counters;
  rig.run_until([&] { return counters->report.queued.get() == 1234; }, 3000);
  EXPECT_GE(counters->report.reports.get(), 1u);
  EXPECT_EQ(counters->report.dropped.get(), 56u);
  EXPECT_EQ(counters->report.conflated.get(), 7u);
  EXPECT_EQ(counters->report.gaps.get(), 0u);
  EXPECT_EQ(counters->requests.get(), counters->report.reports.get());  // reports are requests...
  EXPECT_EQ(counters->replies.get(), 0u);                        // ...that are not answered
}

TEST(FeedRecovery, ASessionWhoseReportsStopIsEndedSoItsNameCanReconnect) {
  Rig rig("127.77.99.1", "127.77.99.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.99.1");
  rig.make_publisher(group);
  SubscriberConfig c;
  c.id = 1;
  SubscriberChannelConfig ch;
  ch.id = kChannel;
  ch.group_a = group;
  c.channels.push_back(ch);
  c.recovery.enabled = true;
  c.recovery.report_interval_ns = 10'000'000;
  auto sub = Subscriber::create(*rig.sub_dev, c);
  ASSERT_TRUE(sub.ok());
  rig.sub = std::move(sub).value();
  auto sc = rig.session_config(rig.sub->recovery()->local());
  sc.limits.silence_timeout_ns = 100'000'000;
  auto gw = rig.service.open(*rig.gw_dev, sc, qpgate::monotonic_ns());
  ASSERT_TRUE(gw.ok());
  ASSERT_TRUE(rig.sub->connect_recovery(*gw).ok());
  const auto counters = rig.service.sessions()[0].counters;
  rig.run_until([&] { return counters->report.reports.get() >= 3; }, 3000);
  rig.settle(150);  // still reporting: not silenced
  EXPECT_EQ(rig.service.sessions()[0].state, verbs::QpState::RTS);
  rig.sub.reset();  // the subscriber process goes away without closing its session
  rig.run_until([&] { return counters->silenced.get() == 1; }, 3000);
  EXPECT_EQ(rig.service.sessions()[0].state, verbs::QpState::ERR);
}

// A raw recovery client (what a misbehaving subscriber could send).
struct RawClient {
  std::unique_ptr<RcEndpoint> ep;
  recovery::Reply reply;
  std::vector<std::uint8_t> last;

  RawClient(Rig& rig, std::vector<std::uint16_t> channels, RecoveryLimits limits = {}) {
    RcEndpointConfig c;
    c.recv_slots = 64;
    c.recv_bytes = 64 * 1024;
    c.send_slots = 64;
    c.send_bytes = 1024;
    auto e = RcEndpoint::create(*rig.sub_dev, c);
    EXPECT_TRUE(e.ok());
    ep = std::move(e).value();
    auto sc = rig.session_config(ep->local(), std::move(channels));
    sc.limits = limits;
    auto gw = rig.service.open(*rig.gw_dev, sc, qpgate::monotonic_ns());
    EXPECT_TRUE(gw.ok()) << gw.error().message;
    EXPECT_TRUE(ep->connect(*gw, verbs::RcParams{}).ok());
  }
  bool send_raw(std::span<const std::uint8_t> bytes) {
    auto out = ep->send_buffer();
    if (out.size() < bytes.size()) return false;
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return ep->post_send(bytes.size());
  }
  template <class Q>
  bool send(const Q& q) {
    auto out = ep->send_buffer();
    const std::size_t n = recovery::encode_request(q, out);
    return n != 0 && ep->post_send(n);
  }
  // Polls once; returns the number of replies decoded (each into `reply`, calling fn).
  template <class Fn>
  int poll(Fn&& fn) {
    std::array<RcEndpoint::Completion, 16> done{};
    const std::size_t n = ep->poll(done);
    int replies = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i].kind != RcEndpoint::Completion::Kind::kReceived) continue;
      const char* error = nullptr;
      EXPECT_TRUE(recovery::decode_reply(done[i].bytes, reply, &error)) << error;
      fn(reply);
      ep->repost(done[i].slot);
      ++replies;
    }
    return replies;
  }
  // Sends nothing; waits for one reply.
  recovery::Reply* await(Rig& rig, int timeout_ms = 3000) {
    bool got = false;
    spin_until([&] { return got; }, [&] {
      rig.step();
      poll([&](const recovery::Reply&) { got = true; });
    }, timeout_ms);
    return got ? &reply : nullptr;
  }
};

TEST(FeedRecovery, NonEntitledChannelGetsNotEntitled) {
  Rig rig("127.77.95.1", "127.77.95.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(ip4("239.77.95.1"));
  rig.publish(10);
  RawClient client(rig, {kChannel + 1});  // entitled to another channel only
  recovery::RetransmitRequest q;
  q.channel = kChannel;
  q.session = rig.pub->session();
  q.from_sequence = 1;
  q.count = 5;
  q.request_id = 77;
  ASSERT_TRUE(client.send(q));
  auto* r = client.await(rig);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->kind, recovery::ReplyKind::kRetransmit);
  EXPECT_EQ(r->retransmit.status, recovery::Status::kNotEntitled);
  EXPECT_EQ(r->retransmit.request_id, 77u);
  EXPECT_EQ(r->frame_count, 0u);
  recovery::SnapshotRequest sq;
  sq.channel = kChannel;
  sq.request_id = 78;
  ASSERT_TRUE(client.send(sq));
  r = client.await(rig);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->kind, recovery::ReplyKind::kSnapshot);
  EXPECT_EQ(r->snapshot.status, recovery::Status::kNotEntitled);
  EXPECT_TRUE(r->snapshot.last);
  const auto s = rig.service.sessions();
  EXPECT_EQ(s[0].counters->by_status[static_cast<std::size_t>(recovery::Status::kNotEntitled)].get(), 2u);
  EXPECT_EQ(s[0].counters->requests.get(), 2u);
}

TEST(FeedRecovery, BadRequestsGetTheirStatusAndAreCounted) {
  Rig rig("127.77.96.1", "127.77.96.2");
  ASSERT_TRUE(rig.ok());
  rig.make_publisher(ip4("239.77.96.1"));
  rig.publish(10);
  rig.settle(5);
  RawClient client(rig, {kChannel});
  using recovery::Status;

  const std::uint8_t garbage[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};  // a length running past the end
  ASSERT_TRUE(client.send_raw(garbage));
  auto* r = client.await(rig);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->kind, recovery::ReplyKind::kError);
  EXPECT_EQ(r->error_status, Status::kMalformed);
  EXPECT_EQ(r->error_message, "truncated protobuf");

  const std::uint8_t no_body[] = {0x78, 0x01};  // field 15 only
  ASSERT_TRUE(client.send_raw(no_body));
  r = client.await(rig);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->error_status, Status::kMalformed);
  EXPECT_EQ(r->error_message, "RecoveryRequest has no body (retransmit, snapshot or report)");

  auto ask = [&](std::uint32_t session, std::uint64_t from, std::uint32_t count) {
    recovery::RetransmitRequest q;
    q.channel = kChannel;
    q.session = session;
    q.from_sequence = from;
    q.count = count;
    q.request_id = from * 1000 + count;
    EXPECT_TRUE(client.send(q));
    return client.await(rig);
  };
  const std::uint32_t session = rig.pub->session();
  r = ask(session, 1, 0);  // count 0
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->retransmit.status, Status::kInvalidRange);
  EXPECT_EQ(r->retransmit.next_sequence, 11u);
  r = ask(session, 11, 1);  // at the next sequence: not published yet
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->retransmit.status, Status::kInvalidRange);
  r = ask(session, 0, 1);  // sequence 0 does not exist
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->retransmit.status, Status::kInvalidRange);
  r = ask(session ^ 1, 1, 1);  // another session
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->retransmit.status, Status::kUnknownSession);
  EXPECT_EQ(r->retransmit.session, session);
  r = ask(session, 3, 4);  // a good one: frames with the RETRANSMISSION flag covering 3..6
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->retransmit.status, Status::kOk);
  ASSERT_GT(r->frame_count, 0u);
  const auto first = parse_frame(r->frames[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_LE(first->header().first_seq(), 3u);
  EXPECT_NE(first->header().flags() & flags::kRetransmission, 0);
  const auto last = parse_frame(r->frames[r->frame_count - 1]);
  ASSERT_TRUE(last.ok());
  EXPECT_GE(last->header().end_seq(), 7u);

  const auto s = rig.service.sessions();
  const auto& k = *s[0].counters;
  EXPECT_EQ(k.requests.get(), 7u);
  EXPECT_EQ(k.by_status[static_cast<std::size_t>(Status::kMalformed)].get(), 2u);
  EXPECT_EQ(k.by_status[static_cast<std::size_t>(Status::kInvalidRange)].get(), 3u);
  EXPECT_EQ(k.by_status[static_cast<std::size_t>(Status::kUnknownSession)].get(), 1u);
  EXPECT_EQ(k.by_status[static_cast<std::size_t>(Status::kOk)].get(), 1u);
}

TEST(FeedRecovery, FloodingSessionIsThrottledWhileTheLiveFeedFlows) {
  Rig rig("127.77.97.1", "127.77.97.2");
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.97.1");
  rig.make_publisher(group);
  rig.make_subscriber(group);  // a well-behaved subscriber on the live feed
  rig.publish(200);
  RecoveryLimits limits;
  limits.messages_per_second = 1000;
  limits.burst_messages = 200;
  RawClient flood(rig, {kChannel}, limits);
  std::map<recovery::Status, int> statuses;
  std::uint64_t max_retry_after = 0;
  int sent = 0;
  int replies = 0;
  auto on_reply = [&](const recovery::Reply& r) {
    ++statuses[r.retransmit.status];
    max_retry_after = std::max(max_retry_after, r.retransmit.retry_after_ns);
  };
  // 300 requests for 100 messages each, as fast as the QP takes them, while 2000 more messages are published.
  for (std::size_t batch = 0; batch < 20; ++batch) {
    for (int k = 0; k < 15; ++k) {
      recovery::RetransmitRequest q;
      q.channel = kChannel;
      q.session = rig.pub->session();
      q.from_sequence = 1;
      q.count = 100;
      q.request_id = static_cast<std::uint64_t>(++sent);
      while (!flood.send(q)) {
        rig.step();
        replies += flood.poll(on_reply);
      }
    }
    rig.publish(100);
  }
  spin_until([&] { return replies == sent; }, [&] {
    rig.step();
    replies += flood.poll(on_reply);
  });
  rig.run_until([&] { return rig.counters().expected.get() == 2201; });
  EXPECT_EQ(replies, sent);
  EXPECT_GT(statuses[recovery::Status::kThrottled], 200);
  EXPECT_GE(statuses[recovery::Status::kOk], 2);
  EXPECT_GT(max_retry_after, 0u);
  EXPECT_LE(max_retry_after, 100'000'000u);  // 100 messages at 1000/s
  const auto s = rig.service.sessions();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].counters->by_status[static_cast<std::size_t>(recovery::Status::kThrottled)].get(),
            static_cast<std::uint64_t>(statuses[recovery::Status::kThrottled]));
  // The live feed was not starved: every message, in order, no gap.
  expect_contiguous(rig.got.live_sequences(), 1, 2200);
  EXPECT_EQ(rig.counters().gaps.get(), 0u);
}

// The app stops reading while 2,000 messages arrive: fromEngine (16 KiB) fills
// after a few dozen frames. What found no room is recovered over RC once the
// app reads again: every message once, in order, no gap reported.
TEST(FeedRecovery, AFullDeliveryRingLosesNothingItsFramesAreRecovered) {
  Rig rig("127.77.89.1", "127.77.89.2", /*ring_bytes=*/16 * 1024);
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.89.1");
  rig.make_publisher(group);
  rig.make_subscriber(group);
  rig.publish(100);
  rig.run_until([&] { return rig.counters().expected.get() == 101; });
  rig.app_reads = false;
  constexpr std::size_t kMessages = 2'000;
  rig.publish(kMessages - 100);
  rig.settle(20);
  ASSERT_GT(rig.sub->stats()->ring_full_drops.get(), 0u);
  rig.app_reads = true;
  rig.run_until([&] { return rig.counters().expected.get() == kMessages + 1 && rig.counters().held.get() == 0; });

  expect_contiguous(rig.got.live_sequences(), 1, kMessages);
  const auto& c = rig.counters();
  EXPECT_TRUE(rig.got.gaps.empty());
  EXPECT_EQ(c.unrecoverable.get(), 0u);
  EXPECT_EQ(c.gaps.get(), 0u);  // nothing was lost on the wire
  EXPECT_GT(c.recovered.get(), 0u);
  EXPECT_EQ(c.recovery_failures.get(), 0u);
}

// A gateway slow to answer (a restart, a loaded host): its transport took the
// request, its recovery service has not answered within request_timeout_ns.
// The request is sent again, and the ranges wait for that answer (the late one
// to the first request is stale); with request_attempts 1 the same wait gives
// up on them.
TEST(FeedRecovery, ARequestUnansweredWithinTheTimeoutIsSentAgainNotGivenUp) {
  for (const std::uint32_t attempts : {3u, 1u}) {
    SCOPED_TRACE(attempts);
    Rig rig(attempts == 3 ? "127.77.87.1" : "127.77.86.1", attempts == 3 ? "127.77.87.2" : "127.77.86.2");
    ASSERT_TRUE(rig.ok());
    const std::uint32_t group = ip4(attempts == 3 ? "239.77.87.1" : "239.77.86.1");
    rig.recovery_config.request_timeout_ns = 300'000'000;
    rig.recovery_config.request_attempts = attempts;
    rig.make_publisher(group);
    rig.make_subscriber(group);
    verbs::soft::FaultPlan plan;
    plan.seed = 7;
    plan.rx.drop = 0.05;
    plan.opcodes = {static_cast<std::uint8_t>(wire::Opcode::kUdSendOnly)};
    rig.sub_dev->inject_faults(plan);
    rig.service_answers = false;
    constexpr std::size_t kMessages = 2'000;
    rig.publish(kMessages);
    const auto& c = rig.counters();
    auto& client = rig.sub->recovery()->counters();
    // Held until the first request timed out: asked again, or given up.
    rig.run_until([&] { return client.request_timeouts.get() > 0 || c.recovery_failures.get() > 0; });
    rig.service_answers = true;
    rig.run_until([&] { return c.expected.get() == kMessages + 1 && c.held.get() == 0; });

    if (attempts == 3) {
      expect_contiguous(rig.got.live_sequences(), 1, kMessages);
      EXPECT_EQ(client.request_timeouts.get(), 1u);
      EXPECT_GT(client.stale_replies.get(), 0u) << "the first request's late answer";
      EXPECT_EQ(c.unrecoverable.get(), 0u);
      EXPECT_EQ(c.recovery_failures.get(), 0u);
      EXPECT_TRUE(rig.got.gaps.empty());
    } else {
      EXPECT_EQ(client.request_timeouts.get(), 0u);
      EXPECT_GE(c.recovery_failures.get(), 1u);
      EXPECT_GT(c.unrecoverable.get(), 0u);
      EXPECT_FALSE(rig.got.gaps.empty());
    }
  }
}

// The recovery connection's retries ran out (the link to the gateway lost for
// a while) with ranges queued. The gateway is still up and still has them:
// the renewed connection (src/feed/recovery-link.ts makes it as soon as it
// sees the failure) asks for them again, and nothing is reported lost.
// Without a working renewal within request_timeout_ns of the first failure
// they are given up and reported, not held for ever: whether no renewal
// comes, the renewal never connects, or it connects and fails in turn (a
// path that never works, such as a wrong key).
enum class Renewal { kWorks, kNone, kNeverConnects, kFailsAgain };

void lose_the_link(Rig& rig) {  // nothing the subscriber sends over RC reaches the gateway: never ACKed
  verbs::soft::FaultPlan link_down;
  link_down.rx.drop = 1;
  for (const auto op : {wire::Opcode::kRcSendFirst, wire::Opcode::kRcSendMiddle, wire::Opcode::kRcSendLast,
                        wire::Opcode::kRcSendOnly}) {
    link_down.opcodes.push_back(static_cast<std::uint8_t>(op));
  }
  rig.gw_dev->inject_faults(link_down);
}

TEST(FeedRecovery, RangesQueuedWhenTheConnectionFailedAreAskedForOnTheRenewedOne) {
  for (const Renewal renewal : {Renewal::kWorks, Renewal::kNone, Renewal::kNeverConnects, Renewal::kFailsAgain}) {
    const int n = static_cast<int>(renewal);
    SCOPED_TRACE(n);
    const std::string net = "127.77." + std::to_string(80 + n) + ".";
    Rig rig((net + "1").c_str(), (net + "2").c_str());
    ASSERT_TRUE(rig.ok());
    const std::uint32_t group = ip4(("239.77." + std::to_string(80 + n) + ".1").c_str());
    constexpr std::uint64_t kTimeoutNs = 1'000'000'000;
    rig.recovery_config.request_timeout_ns = kTimeoutNs;
    rig.make_publisher(group);
    rig.make_subscriber(group);
    verbs::soft::FaultPlan loss;  // the feed's gaps
    loss.seed = 11;
    loss.rx.drop = 0.05;
    loss.opcodes = {static_cast<std::uint8_t>(wire::Opcode::kUdSendOnly)};
    rig.sub_dev->inject_faults(loss);
    lose_the_link(rig);
    constexpr std::size_t kMessages = 2'000;
    rig.publish(kMessages);
    rig.run_until([&] { return rig.sub->recovery()->failed(); });
    const std::uint64_t failed_at = monotonic_ns();
    const auto& c = rig.counters();
    EXPECT_GT(c.held.get(), 0u) << "the gaps behind the lost requests";
    EXPECT_EQ(c.recovery_failures.get(), 0u) << "not given up when the connection failed";
    EXPECT_EQ(c.unrecoverable.get(), 0u);
    if (renewal != Renewal::kFailsAgain) rig.gw_dev->inject_faults({});  // the link is back

    // What src/feed/recovery-link.ts does on each failure it sees.
    const auto renew = [&](bool connect) {
      rig.settle(300);  // the link noticing the failure and making the new session
      auto local = rig.sub->renew_recovery();
      ASSERT_TRUE(local.ok()) << local.error().message;
      if (!connect) return;
      ASSERT_TRUE(rig.service.close(rig.next_session - 1));  // the DELETE of the old session
      auto gw = rig.service.open(*rig.gw_dev, rig.session_config(*local), monotonic_ns());
      ASSERT_TRUE(gw.ok()) << gw.error().message;
      ASSERT_TRUE(rig.sub->connect_recovery(*gw).ok());
    };
    if (renewal == Renewal::kWorks || renewal == Renewal::kNeverConnects) renew(renewal == Renewal::kWorks);
    // Each renewal asks for the snapshot of what is queued and fails in turn, as long as the link is lost.
    for (int renewals = 0; renewal == Renewal::kFailsAgain && c.recovery_failures.get() == 0; ++renewals) {
      ASSERT_LT(renewals, 20) << "ranges held through 20 failed renewals";
      renew(true);
      rig.run_until([&] { return rig.sub->recovery()->failed() || c.recovery_failures.get() > 0; });
    }
    if (renewal == Renewal::kWorks) {
      rig.run_until([&] { return c.expected.get() == kMessages + 1 && c.held.get() == 0; });
      expect_contiguous(rig.got.live_sequences(), 1, kMessages);
      EXPECT_EQ(c.recovery_failures.get(), 0u);
      EXPECT_EQ(c.unrecoverable.get(), 0u);
      EXPECT_TRUE(rig.got.gaps.empty());
      EXPECT_GT(c.recovered.get(), 0u);
      continue;
    }
    rig.run_until([&] { return c.recovery_failures.get() > 0; });
    EXPECT_GE(monotonic_ns() - failed_at, kTimeoutNs - 100'000'000) << "given up only after request_timeout_ns";
    // Every message reaches the app, as a frame or inside a reported gap, and nothing is held.
    rig.run_until([&] { return c.expected.get() == kMessages + 1 && c.held.get() == 0; });
    EXPECT_GT(c.unrecoverable.get(), 0u);
    EXPECT_FALSE(rig.got.gaps.empty());
  }
}

// Without recovery the same full ring is reported: every sequence reaches the
// app as a frame or inside a FEED_GAP, in order, and a publisher restart met
// while the ring is full comes as its FEED_SESSION between the two sessions.
TEST(FeedRecovery, WithoutRecoveryAFullDeliveryRingIsReportedAsGapsInOrder) {
  Rig rig("127.77.88.1", "127.77.88.2", /*ring_bytes=*/16 * 1024);
  ASSERT_TRUE(rig.ok());
  const std::uint32_t group = ip4("239.77.88.1");
  rig.make_publisher(group);
  rig.make_subscriber(group, /*recovery=*/false);
  rig.app_reads = false;
  rig.publish(1'000);
  rig.settle(20);
  const std::uint32_t first = rig.pub->session();
  rig.pub->close(qpgate::monotonic_ns());
  rig.run_until([&] { return rig.pub->drained(); });
  rig.make_publisher(group, 65536, first);
  rig.publish(500);
  rig.settle(20);
  ASSERT_GT(rig.sub->stats()->ring_full_drops.get(), 0u);
  rig.app_reads = true;
  rig.run_until([&] { return rig.counters().expected.get() == 501; });
  // Owed records (the second session's FEED_SESSION among them) are written
  // once there is room: wait for them, not for a time a loaded host may not
  // give the rig a single step in.
  const auto session_records = [&] {
    return std::count_if(rig.got.log.begin(), rig.got.log.end(), [](const Delivery& d) { return d.kind == Delivery::kSession; });
  };
  rig.run_until([&] { return session_records() == 2; });
  rig.settle(5);  // and nothing after them

  // Session 1 covers 1..1000 and session 2 covers 1..500 (its end-of-session may add none), each without a hole.
  std::vector<std::uint32_t> sessions;
  std::vector<std::uint64_t> next{1};
  std::uint64_t gap_messages = 0;
  for (const Delivery& d : rig.got.log) {
    if (d.kind == Delivery::kSession) {
      sessions.push_back(d.new_session);
      if (sessions.size() > 1) next.push_back(1);
      continue;
    }
    ASSERT_EQ(d.from, next.back()) << "a hole before " << d.from << " in session " << sessions.size();
    next.back() = d.end;
    if (d.kind == Delivery::kGap) gap_messages += d.end - d.from;
  }
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[1], rig.pub->session());
  EXPECT_EQ(next[0], 1'001u);
  EXPECT_EQ(next[1], 501u);
  EXPECT_GT(gap_messages, 0u);
  EXPECT_EQ(rig.counters().unrecoverable.get(), gap_messages);
  EXPECT_EQ(rig.counters().gaps.get(), 0u);
}

}  // namespace
}  // namespace qpgate::feed::test
