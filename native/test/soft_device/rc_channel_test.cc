// verbs::RcChannel (the slot-based RC QP under the order-entry and recovery
// sessions) between two soft devices on 127.62.50.x: SENDs go through the
// send-slot ring and each completion frees its slot; a consumed receive is
// held until reposted.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "soft_fixture.h"
#include "verbs/rc_channel.h"

namespace qpgate::verbs::soft::test {
namespace {

struct ChannelPair {
  ChannelPair(const char* address_a, const char* address_b, const RcChannelShape& shape)
      : da(open(address_a)), db(open(address_b)) {
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
    EXPECT_TRUE(a->connect(pa, RcPeer{db->gid(), b->qpn(), pb.psn, Mtu::MTU_1024}).ok());
    EXPECT_TRUE(b->connect(pb, RcPeer{da->gid(), a->qpn(), pa.psn, Mtu::MTU_1024}).ok());
  }
  static std::unique_ptr<SoftDevice> open(const char* address) {
    SoftDeviceOptions o;
    o.address_or_name = address;
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

}  // namespace
}  // namespace qpgate::verbs::soft::test
