// Application-level failover (docs/protocol.md 1.11): an order service with
// an alternate device opens a session on whichever of its two devices the
// handshake asks for. A client that lost its link to the primary opens the
// same session on the alternate one and gets, at its Hello, what it missed
// there; the resend is by app_seq, so nothing is lost or given twice. Soft
// devices on loopback stand for two RDMA devices on two links (the ibv run
// of the same steps is test/interop/failover-ibv.test.ts).
#include <gtest/gtest.h>

#include "session_support.h"

namespace qpgate::orders::test {
namespace {

TEST(OrderFailover, ASessionOpensOnTheAlternateDeviceWithThatDevicesGidAndSaysSo) {
  TempDir dir;
  Gateway gw("127.66.40.1", service_config(dir.file("journal")), "127.66.40.11");
  ASSERT_TRUE(gw.service);
  EXPECT_TRUE(gw.service->has_alternate_device());
  Client a("127.66.40.2");
  a.gateway_device = kAlternateDevice;
  auto answer = a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->gid, gw.alternate->gid());
  a.send(Hello{0});
  a.send(buy(1, 100, 10));
  ASSERT_TRUE(gw.run_until({&a}, [&] { return a.answers == 1; }));
  ASSERT_EQ(a.all<Ack>().size(), 1u);
  const auto infos = gw.service->sessions();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].device, kAlternateDevice);
  // The alternate device carried the session, the primary nothing of it.
  EXPECT_GT(gw.alternate->net_counters().rx_packets.get(), 0u);
  EXPECT_EQ(gw.device->net_counters().rx_packets.get(), 0u);
}

TEST(OrderFailover, AClientThatLostThePrimaryGetsWhatItMissedOnTheAlternateOnceAndInOrder) {
  TempDir dir;
  Gateway gw("127.66.41.1", service_config(dir.file("journal")), "127.66.41.11");
  ASSERT_TRUE(gw.service);
  Client a("127.66.41.2"), b("127.66.41.3");
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, /*cancel_on_disconnect=*/false).ok());
  ASSERT_TRUE(b.handshake(*gw.service, kSessionB, SessionRole::kTrading, {kAccountB}).ok());
  a.send(Hello{0});
  b.send(Hello{0});
  a.send(buy(1, 100, 10));
  ASSERT_TRUE(gw.run_until({&a, &b}, [&] { return a.answers == 1 && b.received.size() == 1; }));
  ASSERT_EQ(app_seqs(a), one_to(1));

  // A's link fails: A hears nothing more there. B's sell fills A's resting
  // buy meanwhile; the Fill is made for A while A cannot take it.
  b.send(sell(1, 100, 4));
  ASSERT_TRUE(gw.run_until({&b}, [&] { return b.all<Fill>().size() == 1; }));
  // A comes on its other device and asks for the session on the gateway's
  // alternate one; the gateway closes it on the primary first (the route does).
  ASSERT_TRUE(gw.service->close_session(kSessionA, qpgate::monotonic_ns()));
  Client a2("127.66.41.12");
  a2.gateway_device = kAlternateDevice;
  auto answer = a2.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}, false);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->gid, gw.alternate->gid());
  a2.send(Hello{1});  // A processed app_seq 1 on the primary
  ASSERT_TRUE(gw.run_until({&a2, &b}, [&] { return a2.all<Fill>().size() == 1; }));
  ASSERT_NE(a2.received[0]->as<Welcome>(), nullptr);
  EXPECT_EQ(a2.received[0]->as<Welcome>()->resend_from, 2u);
  EXPECT_EQ(app_seqs(a2), one_to(2, 2));  // the Fill, once, after what A had
  EXPECT_EQ(a2.all<Fill>()[0]->quantity, 4);

  // The session goes on there: a re-sent order id is answered with its first
  // answer (its app_seq 1, possible_resend), a new one is acted on (app_seq 3).
  a2.send(buy(1, 100, 10));
  a2.send(buy(2, 95, 1));
  ASSERT_TRUE(gw.run_until({&a2, &b}, [&] { return a2.answers == 2; }));
  const auto acks = a2.all<Ack>();
  for (const Reject* r : a2.all<Reject>()) ADD_FAILURE() << "reject of " << r->client_order_id << ": " << r->text;
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0]->client_order_id, 1u);
  EXPECT_TRUE(acks[0]->possible_resend);
  EXPECT_EQ(acks[0]->app_seq, 1u);
  EXPECT_EQ(acks[1]->client_order_id, 2u);
  EXPECT_FALSE(acks[1]->possible_resend);
  EXPECT_EQ(acks[1]->app_seq, 3u);
  const auto infos = gw.service->sessions();
  const auto on_a = std::find_if(infos.begin(), infos.end(), [](const SessionInfo& s) { return s.session == kSessionA; });
  ASSERT_NE(on_a, infos.end());
  EXPECT_EQ(on_a->device, kAlternateDevice);
  EXPECT_EQ(on_a->state, verbs::QpState::RTS);
}

TEST(OrderFailover, AnAsyncEventEndsOnlyTheSessionOnTheDeviceItCameFrom) {
  TempDir dir;
  Gateway gw("127.66.42.1", service_config(dir.file("journal")), "127.66.42.11");
  ASSERT_TRUE(gw.service);
  Client a("127.66.42.2");
  a.gateway_device = kAlternateDevice;
  ASSERT_TRUE(a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA}).ok());
  const std::uint32_t qpn = gw.service->sessions().at(0).qpn;
  const verbs::AsyncEvent fatal{verbs::EventType::QP_FATAL, verbs::EventElement::QP, qpn, 0};
  // The same QPN on the primary device is another QP (QPNs are per device).
  EXPECT_FALSE(gw.service->on_async_event(fatal, qpgate::monotonic_ns(), kPrimaryDevice));
  EXPECT_FALSE(gw.service->sessions().at(0).disconnected);
  EXPECT_TRUE(gw.service->on_async_event(fatal, qpgate::monotonic_ns(), kAlternateDevice));
  EXPECT_TRUE(gw.service->sessions().at(0).disconnected);
  EXPECT_EQ(gw.service->sessions().at(0).ended_by, "IBV_EVENT_QP_FATAL");
}

TEST(OrderFailover, WithoutAnAlternateDeviceTheHandshakeForItIsRefusedByName) {
  TempDir dir;
  Gateway gw("127.66.43.1", service_config(dir.file("journal")));
  ASSERT_TRUE(gw.service);
  EXPECT_FALSE(gw.service->has_alternate_device());
  Client a("127.66.43.2");
  a.gateway_device = kAlternateDevice;
  auto answer = a.handshake(*gw.service, kSessionA, SessionRole::kTrading, {kAccountA});
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, EINVAL);
  EXPECT_NE(answer.error().message.find("no alternate device"), std::string::npos) << answer.error().message;
  EXPECT_TRUE(gw.service->sessions().empty());
}

TEST(OrderFailover, TheAlternateDeviceMustBeASecondDevice) {
  TempDir dir;
  auto device = open_device("127.66.44.1");
  ASSERT_TRUE(device);
  auto s = OrderService::open(*device, service_config(dir.file("journal")), device.get());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, EINVAL);
  EXPECT_NE(s.error().message.find("second device"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace qpgate::orders::test
