// verbs::RcChannel (the slot-based RC QP under the order-entry and recovery
// sessions) between two soft devices on 127.62.50.x: SENDs go through the
// send-slot ring and each completion frees its slot; a consumed receive is
// held until reposted; with a second address at both ends connect() arms
// the alternate path (rc_connect.h) and a session survives the loss of its
// primary link, and with one at one end only nothing is armed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "soft_fixture.h"
#include "verbs/rc_channel.h"
#include "verbs/soft/fault.h"
#include "verbs/source_gid.h"

namespace qpgate::verbs::soft::test {
namespace {

struct ChannelPair {
  // `alt_a`, `alt_b`: the devices' second addresses (GID index 1), or null.
  ChannelPair(const char* address_a, const char* address_b, const RcChannelShape& shape, const char* alt_a = nullptr,
              const char* alt_b = nullptr)
      : da(open(address_a, alt_a)), db(open(address_b, alt_b)) {
    if (!da || !db) return;
    auto ca = RcChannel::create(*da, shape);
    auto cb = RcChannel::create(*db, shape);
    EXPECT_TRUE(ca.ok() && cb.ok());
    if (!ca.ok() || !cb.ok()) return;
    a = std::move(*ca);
    b = std::move(*cb);
    RcParams pa;
    pa.psn = 100;
    RcParams pb;
    pb.psn = 200;
    const auto alt_of_a = choose_alternate_gid(*da, SourceGid{da->gid(), 0});
    const auto alt_of_b = choose_alternate_gid(*db, SourceGid{db->gid(), 0});
    if (alt_of_a) pa.alt_sgid_index = alt_of_a->index;
    if (alt_of_b) pb.alt_sgid_index = alt_of_b->index;
    RcPeer to_b{db->gid(), b->qpn(), pb.psn, Mtu::MTU_1024, std::nullopt};
    RcPeer to_a{da->gid(), a->qpn(), pa.psn, Mtu::MTU_1024, std::nullopt};
    if (alt_of_b) to_b.alt_gid = alt_of_b->gid;
    if (alt_of_a) to_a.alt_gid = alt_of_a->gid;
    EXPECT_TRUE(a->connect(pa, to_b).ok());
    EXPECT_TRUE(b->connect(pb, to_a).ok());
  }
  static std::unique_ptr<SoftDevice> open(const char* address, const char* alternate = nullptr) {
    SoftDeviceOptions o;
    o.address_or_name = address;
    if (alternate != nullptr) o.alternate_address = alternate;
    o.net.probe_ipv4_id = false;
    auto d = open_soft_device(o);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
    return d.ok() ? std::move(*d) : nullptr;
  }
  bool ok() const { return a != nullptr && b != nullptr; }

  // Drives both devices until `n` completions of `c` were polled (or the timeout).
  std::vector<Wc> poll(RcChannel& c, std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
    std::vector<Wc> out;
    spin_until([&] { return out.size() >= n; },
               [&] {
                 da->do_work(now_ns());
                 db->do_work(now_ns());
                 Wc wc[8];
                 auto got = c.poll(wc);
                 if (got.ok()) out.insert(out.end(), wc, wc + *got);
               },
               timeout);
    return out;
  }
  void send(const std::string& text) {
    const auto slot = a->send_slot();
    ASSERT_GE(slot.size(), text.size());
    std::memcpy(slot.data(), text.data(), text.size());
    a->stage_send(text.size());
  }

  std::unique_ptr<SoftDevice> da, db;
  std::unique_ptr<RcChannel> a, b;
};

std::string text_of(std::span<const std::uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }

TEST(RcChannel, SendsGoRoundTheSlotRingAndEachCompletionFreesItsSlot) {
  ChannelPair p("127.62.50.1", "127.62.50.2", {.recv_slots = 4, .recv_bytes = 64, .send_slots = 2, .send_bytes = 64});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.b->held_receives(), 0u);  // connect posted every receive slot
  for (int round = 0; round < 5; ++round) {
    const std::string first = "order " + std::to_string(2 * round);
    const std::string second = "order " + std::to_string(2 * round + 1);
    p.send(first);
    p.send(second);
    EXPECT_EQ(p.a->free_send_slots(), 0u);
    EXPECT_TRUE(p.a->send_slot().empty());
    ASSERT_TRUE(p.a->flush_sends().ok());
    EXPECT_EQ(p.a->sends_in_flight(), 2u);

    const auto got = p.poll(*p.b, 2);
    ASSERT_EQ(got.size(), 2u);
    for (const Wc& wc : got) {
      ASSERT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS);
      EXPECT_FALSE(RcChannel::is_send(wc));
    }
    EXPECT_EQ(text_of(p.b->received(got[0])), first);
    EXPECT_EQ(text_of(p.b->received(got[1])), second);
    for (const Wc& wc : got) p.b->release_receive(RcChannel::slot_of(wc));
    EXPECT_EQ(p.b->repost_receives(), 2u);

    const auto sent = p.poll(*p.a, 2);
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_TRUE(RcChannel::is_send(sent[0]) && RcChannel::is_send(sent[1]));
    EXPECT_EQ(p.a->sends_in_flight(), 0u);
    EXPECT_EQ(p.a->free_send_slots(), 2u);
  }
}

TEST(RcChannel, AConsumedReceiveIsHeldUntilRepostedAndASendWaitsForIt) {
  ChannelPair p("127.62.51.1", "127.62.51.2", {.recv_slots = 1, .recv_bytes = 64, .send_slots = 2, .send_bytes = 64});
  ASSERT_TRUE(p.ok());
  p.send("one");
  p.send("two");
  ASSERT_TRUE(p.a->flush_sends().ok());
  auto got = p.poll(*p.b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(text_of(p.b->received(got[0])), "one");
  p.b->release_receive(RcChannel::slot_of(got[0]));
  EXPECT_EQ(p.b->held_receives(), 1u);
  // Held: the second SEND meets RNR NAKs (rnr_retry 7 retries forever).
  EXPECT_TRUE(p.poll(*p.b, 1, std::chrono::milliseconds(50)).empty());
  EXPECT_EQ(p.b->repost_receives(), 1u);
  EXPECT_EQ(p.b->held_receives(), 0u);
  got = p.poll(*p.b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(text_of(p.b->received(got[0])), "two");
}

TEST(RcChannel, WithSecondAddressesAtBothEndsASessionMovesToItsAlternatePathWhenThePrimaryLinkFails) {
  ChannelPair p("127.62.52.1", "127.62.52.2", {.recv_slots = 4, .recv_bytes = 64, .send_slots = 2, .send_bytes = 64},
                "127.62.53.1", "127.62.53.2");
  ASSERT_TRUE(p.ok());
  for (RcChannel* c : {p.a.get(), p.b.get()}) {
    const RcPathInfo path = c->path();
    EXPECT_TRUE(path.has_alternate);
    EXPECT_EQ(path.mig_state, MigState::ARMED);
    EXPECT_EQ(path.active, ActivePath::kPrimary);
    EXPECT_EQ(path.migrations, 0u);
  }
  // a's primary link goes down: nothing leaves from or arrives at 127.62.52.1.
  FaultPlan down;
  down.tx.drop = 1.0;
  down.rx.drop = 1.0;
  down.local_address = ip_from_gid(Gid::parse("127.62.52.1").value());
  p.da->inject_faults(down);
  p.send("after the link went down");
  ASSERT_TRUE(p.a->flush_sends().ok());
  // retry_cnt 7 of the 67 ms ACK timeout on the primary path, then the alternate.
  const auto got = p.poll(*p.b, 1, std::chrono::seconds(5));
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(text_of(p.b->received(got[0])), "after the link went down");
  const auto sent = p.poll(*p.a, 1, std::chrono::seconds(2));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::IBV_WC_SUCCESS);
  for (RcChannel* c : {p.a.get(), p.b.get()}) {
    const RcPathInfo path = c->path();
    EXPECT_EQ(path.mig_state, MigState::MIGRATED);
    EXPECT_EQ(path.active, ActivePath::kAlternate);
    EXPECT_EQ(path.migrations, 1u);
  }
}

// After a migration each end re-arms once nothing of its own is
// unacknowledged (rearm_rc): the path it left is its alternate again, so when
// that link is back and the one it moved to fails in turn, the session moves
// back instead of ending.
TEST(RcChannel, ARearmedSessionMovesBackWhenThePathItMovedToFailsInTurn) {
  ChannelPair p("127.62.56.1", "127.62.56.2", {.recv_slots = 4, .recv_bytes = 64, .send_slots = 2, .send_bytes = 64},
                "127.62.57.1", "127.62.57.2");
  ASSERT_TRUE(p.ok());
  const auto down = [&](const char* address) {
    FaultPlan plan;
    plan.tx.drop = 1.0;
    plan.rx.drop = 1.0;
    plan.local_address = ip_from_gid(Gid::parse(address).value());
    p.da->inject_faults(plan);
  };
  const auto deliver = [&](const std::string& text) {
    p.send(text);
    ASSERT_TRUE(p.a->flush_sends().ok());
    const auto got = p.poll(*p.b, 1, std::chrono::seconds(5));
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].status, WcStatus::IBV_WC_SUCCESS);
    EXPECT_EQ(text_of(p.b->received(got[0])), text);
    p.b->release_receive(RcChannel::slot_of(got[0]));
    p.b->repost_receives();
    const auto sent = p.poll(*p.a, 1, std::chrono::seconds(2));
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].status, WcStatus::IBV_WC_SUCCESS);
  };
  for (RcChannel* c : {p.a.get(), p.b.get()}) EXPECT_FALSE(c->rearm().value()) << "armed already: nothing to do";

  down("127.62.56.1");
  deliver("over the alternate");
  p.da->inject_faults(FaultPlan{});  // the primary link is back
  for (RcChannel* c : {p.a.get(), p.b.get()}) {
    EXPECT_EQ(c->path().mig_state, MigState::MIGRATED);
    EXPECT_TRUE(c->rearm().value()) << "migrated, nothing in flight: re-armed";
    const RcPathInfo path = c->path();
    EXPECT_EQ(path.mig_state, MigState::ARMED);
    EXPECT_EQ(path.active, ActivePath::kAlternate);
  }

  down("127.62.57.1");  // now the alternate link fails
  deliver("back over the primary");
  for (RcChannel* c : {p.a.get(), p.b.get()}) {
    const RcPathInfo path = c->path();
    EXPECT_EQ(path.mig_state, MigState::MIGRATED);
    EXPECT_EQ(path.active, ActivePath::kPrimary);
    EXPECT_EQ(path.migrations, 2u);
  }
}

TEST(RcChannel, ASecondAddressAtOneEndOnlyArmsNothing) {
  ChannelPair p("127.62.54.1", "127.62.54.2", {.recv_slots = 1, .recv_bytes = 64, .send_slots = 1, .send_bytes = 64},
                "127.62.55.1", nullptr);
  ASSERT_TRUE(p.ok());
  for (RcChannel* c : {p.a.get(), p.b.get()}) {
    const RcPathInfo path = c->path();
    EXPECT_FALSE(path.has_alternate);
    EXPECT_EQ(path.mig_state, MigState::MIGRATED);  // the state a QP starts in: no alternate path
    EXPECT_EQ(path.active, ActivePath::kPrimary);
  }
}

}  // namespace
}  // namespace qpgate::verbs::soft::test
