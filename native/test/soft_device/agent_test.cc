// The soft device as an engine agent: a parked engine wakes on a packet
// (its sockets are in the parker's epoll set), group sockets joined later
// wake it too, and QP deadlines arm the engine's timer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "soft_fixture.h"
#include "engine/soft_device_agent.h"

namespace qpgate::verbs::soft {
namespace {

using engine::SoftDeviceAgent;
using test::Node;

// Parks of at least `min_park_ns`: long enough that only a wake-up ends one
// within a test's bounds, even on a loaded machine.
engine::EngineConfig parking_config(std::int64_t min_park_ns) {
  engine::EngineConfig c;
  c.to_engine_capacity = 1 << 16;
  c.from_engine_capacity = 1 << 16;
  c.huge_pages = false;
  c.idle = engine::IdleKind::kBackoff;
  c.backoff.min_park_ns = min_park_ns;
  c.backoff.max_park_ns = 2 * min_park_ns;
  return c;
}

struct EngineWithDevice {
  explicit EngineWithDevice(std::int64_t min_park_ns = 1'000'000'000) : engine(parking_config(min_park_ns)) {
    auto a = std::make_unique<SoftDeviceAgent>();
    agent = a.get();
    engine.add_agent(std::move(a));
  }
  engine::Engine engine;
  SoftDeviceAgent* agent = nullptr;
};

TEST(SoftDeviceAgent, AParkedEngineWakesOnAPacketAndDeliversIt) {
  // 60 s parks: a wake that never comes fails the 10 s waits below.
  EngineWithDevice e(60'000'000'000);
  e.engine.start();
  std::unique_ptr<Node> rx;
  std::unique_ptr<QueuePair> qp;
  e.engine.run_on_engine([&] {
    rx = std::make_unique<Node>("127.61.50.2");
    ASSERT_TRUE(e.agent->attach(*rx->device).ok());
    qp = rx->ud_qp();
    rx->post_recv(*qp, 9, 0, 1024);
  });
  Node tx("127.61.50.1");
  auto tq = tx.ud_qp();
  // Send only once the engine thread is parked with the socket in its epoll
  // set. A fixed sleep was not enough under load: the backoff's spins and
  // yields before a park outlasted it, and a packet polled before the park is
  // delivered with no wake to count. A task lent to this thread (the owner)
  // runs only while the engine thread is parked, and leaves it in that park.
  const auto owner = std::this_thread::get_id();
  bool parked = false;
  const auto setup_done = std::chrono::steady_clock::now();
  // Each try that finds the engine running is work that restarts its backoff: try less and less often.
  for (auto wait = std::chrono::milliseconds(1); !parked && std::chrono::steady_clock::now() - setup_done < std::chrono::seconds(30);
       wait = std::min(2 * wait, std::chrono::milliseconds(200))) {
    e.engine.run_on_engine([&] { parked = std::this_thread::get_id() == owner; });
    if (!parked) std::this_thread::sleep_for(wait);
  }
  ASSERT_TRUE(parked) << "the engine never parked";
  const auto before = e.engine.stats();
  AhAttr ah_attr;
  ah_attr.dgid = rx->device->gid();
  auto ah = tx.pd->create_ah(ah_attr);
  const Sge s = tx.sge(0, 16);
  SendWr wr;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.ud.ah = ah->get();
  wr.ud.remote_qpn = qp->qp_num();
  wr.ud.remote_qkey = test::kQkey;
  ASSERT_TRUE(tq->post_send(wr).ok());
  const auto t0 = std::chrono::steady_clock::now();
  tx.work();  // sent from this thread, not the engine's
  // Nothing else may wake it (run_on_engine ends a park too): wait for the packet's wake first.
  // The bounds are for a machine under load, not the assertion: without the
  // wake the park lasts at least min_park_ns and fd_wakes stays where it was.
  while (e.engine.stats().fd_wakes == before.fd_wakes && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::size_t got = 0;
  Wc wc[4];
  const auto woke = std::chrono::steady_clock::now();
  while (got == 0 && std::chrono::steady_clock::now() - woke < std::chrono::seconds(10)) {
    e.engine.run_on_engine([&] { got = *rx->cq->poll(wc); });
    if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(wc[0].wr_id, 9u);
  EXPECT_GT(e.engine.stats().fd_wakes, before.fd_wakes);
  e.engine.run_on_engine([&] {
    qp.reset();
    rx.reset();
  });
  EXPECT_EQ(e.agent->device_count(), 0u);
  e.engine.stop();
}

TEST(SoftDeviceAgent, AnRcQpsDeadlineArmsTheEnginesTimer) {
  EngineWithDevice e;
  e.engine.start();
  std::unique_ptr<Node> n;
  std::unique_ptr<QueuePair> qp;
  e.engine.run_on_engine([&] {
    n = std::make_unique<Node>("127.61.51.1");
    ASSERT_TRUE(e.agent->attach(*n->device).ok());
    qp = n->connected_qp_init(QpType::RC);
    // A peer that never answers: the local ACK timer is the only thing that can make progress.
    n->connect(*qp, test::gid_of("::ffff:127.61.51.99"), 0x77, 0, 0);
    const Sge s = n->sge(0, 8);
    SendWr wr;
    wr.sg_list = std::span<const Sge>(&s, 1);
    wr.send_flags = SendFlag::SIGNALED;
    ASSERT_TRUE(qp->post_send(wr).ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 4.096 µs × 2^14 ≈ 67 ms per retry
  EXPECT_GT(e.agent->last_deadline_ns(), 0u);
  EXPECT_GT(e.engine.stats().timer_wakes, 0u);
  std::uint64_t timeouts = 0;
  e.engine.run_on_engine([&] { timeouts = n->device->find_qp(qp->qp_num())->counters().timeouts.get(); });
  EXPECT_GT(timeouts, 0u);
  e.engine.run_on_engine([&] {
    qp.reset();
    n.reset();
  });
  e.engine.stop();
}

TEST(SoftDeviceAgent, ADeviceCannotBeDrivenByTwoAgents) {
  SoftDeviceAgent one, two;
  Node n("127.61.52.1");
  ASSERT_TRUE(one.attach(*n.device).ok());
  EXPECT_EQ(two.attach(*n.device).code(), EBUSY);
}

}  // namespace
}  // namespace qpgate::verbs::soft
