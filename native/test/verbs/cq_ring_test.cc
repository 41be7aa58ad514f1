#include "verbs/soft/cq_ring.h"

#include <gtest/gtest.h>

#include <array>

namespace qpgate::verbs::soft {
namespace {

Wc wc(std::uint64_t id) {
  Wc w;
  w.wr_id = id;
  return w;
}

TEST(CqRing, CompletionsArePolledOldestFirstAcrossTheWrap) {
  CqRing cq(4, 1, 0, nullptr);
  std::array<Wc, 3> out{};
  std::uint64_t next_in = 0;
  std::uint64_t next_out = 0;
  for (int round = 0; round < 10; ++round) {
    while (cq.size() < 4) ASSERT_TRUE(cq.push(wc(next_in++)));
    auto n = cq.poll(out);
    ASSERT_TRUE(n.ok());
    for (std::size_t i = 0; i < *n; ++i) EXPECT_EQ(out[i].wr_id, next_out++);
  }
}

TEST(CqRing, PollingAnEmptyCqReturnsZero) {
  CqRing cq(2, 1, 0, nullptr);
  std::array<Wc, 2> out{};
  auto n = cq.poll(out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST(CqRing, AFullCqReportsOverflowInsteadOfOverwriting) {
  AsyncEventQueue events;
  CqRing cq(4, 7, 0xc0ffee, &events);
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(cq.push(wc(i)));
  EXPECT_FALSE(cq.push(wc(100)));
  EXPECT_FALSE(cq.push(wc(101)));
  EXPECT_TRUE(cq.overflowed());
  EXPECT_EQ(cq.lost(), 2u);

  // One CQ_ERR event, naming the CQ.
  auto ev = events.pop();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->event_type, EventType::CQ_ERR);
  EXPECT_EQ(ev->element, EventElement::CQ);
  EXPECT_EQ(ev->element_id, 7u);
  EXPECT_EQ(ev->context, 0xc0ffeeu);
  EXPECT_FALSE(events.pop().has_value());

  // The four completions that fitted are intact; then the loss is reported.
  std::array<Wc, 8> out{};
  auto n = cq.poll(out);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 4u);
  for (std::uint64_t i = 0; i < 4; ++i) EXPECT_EQ(out[i].wr_id, i);
  auto after = cq.poll(out);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.code(), EOVERFLOW);
  EXPECT_EQ(after.message(), "CQ 7 overflowed (depth 4): 2 completions were lost");
  EXPECT_FALSE(cq.push(wc(5))) << "an overflowed CQ stays in error";
}

TEST(CqRing, TheSoftCqServesTheInterface) {
  SoftCompletionQueue cq(8, 3, 0, nullptr);
  CompletionQueue& iface = cq;
  ASSERT_TRUE(cq.ring().push(wc(42)));
  std::array<Wc, 4> out{};
  auto n = iface.poll(out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(out[0].wr_id, 42u);
  EXPECT_EQ(iface.cqe(), 8u);
  EXPECT_EQ(iface.handle(), 3u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
