#include "verbs/soft/srq.h"

#include <gtest/gtest.h>

#include <array>

namespace qpgate::verbs::soft {
namespace {

void fill(SoftSrq& srq, int n) {
  for (int i = 0; i < n; ++i) {
    RecvWr wr;
    wr.wr_id = static_cast<std::uint64_t>(i);
    ASSERT_TRUE(srq.post_recv(wr).ok());
  }
}

TEST(SoftSrq, ManyQpsConsumeOneQueueInPostingOrder) {
  SoftSrq srq(SrqAttr{8, 1, 0}, 1, 0, nullptr);
  fill(srq, 4);
  // QPs 1 and 2 alternate; each takes the oldest WQE.
  EXPECT_EQ(srq.take()->wr_id, 0u);
  EXPECT_EQ(srq.take()->wr_id, 1u);
  EXPECT_EQ(srq.take()->wr_id, 2u);
  EXPECT_EQ(srq.size(), 1u);
}

TEST(SoftSrq, FallingBelowTheLimitRaisesSrqLimitReachedOnceAndDisarms) {
  AsyncEventQueue events;
  SoftSrq srq(SrqAttr{16, 1, 0}, 5, 0x55, &events);
  fill(srq, 6);
  ASSERT_TRUE(srq.modify(SrqAttr{0, 0, 4}, SrqAttrMask::LIMIT).ok());
  EXPECT_TRUE(srq.armed());
  srq.take();  // 5 left
  srq.take();  // 4 left: not below 4
  EXPECT_TRUE(events.empty());
  srq.take();  // 3 left: below
  auto ev = events.pop();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->event_type, EventType::SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev->element, EventElement::SRQ);
  EXPECT_EQ(ev->element_id, 5u);
  EXPECT_EQ(ev->context, 0x55u);
  srq.take();
  EXPECT_TRUE(events.empty()) << "fires once";
  EXPECT_FALSE(srq.armed());
  EXPECT_EQ(srq.query()->srq_limit, 0u) << "reads back as disarmed";
}

TEST(SoftSrq, AnUnarmedSrqRaisesNoEvent) {
  AsyncEventQueue events;
  SoftSrq srq(SrqAttr{4, 1, 0}, 1, 0, &events);
  fill(srq, 2);
  srq.take();
  srq.take();
  EXPECT_TRUE(events.empty());
}

TEST(SoftSrq, ALimitAboveMaxWrAndResizingAreRefused) {
  SoftSrq srq(SrqAttr{4, 1, 0}, 1, 0, nullptr);
  EXPECT_EQ(srq.modify(SrqAttr{0, 0, 5}, SrqAttrMask::LIMIT).code(), EINVAL);
  EXPECT_EQ(srq.modify(SrqAttr{8, 0, 0}, SrqAttrMask::MAX_WR).code(), EOPNOTSUPP);
  EXPECT_EQ(SoftSrq::check_attr(SrqAttr{0, 1, 0}).code(), EINVAL);
  EXPECT_EQ(SoftSrq::check_attr(SrqAttr{4, 33, 0}).code(), EINVAL);
  EXPECT_EQ(SoftSrq::check_attr(SrqAttr{4, 1, 5}).message(), "create_srq: srq_limit 5 exceeds max_wr 4");
  EXPECT_TRUE(SoftSrq::check_attr(SrqAttr{4, 1, 4}).ok());
}

TEST(SoftSrq, PostingBeyondMaxWrReportsTheBadWr) {
  SoftSrq srq(SrqAttr{2, 1, 0}, 9, 0, nullptr);
  std::array<RecvWr, 3> wrs{};
  const PostRecvResult r = srq.post_recv(wrs);
  EXPECT_EQ(r.error().code, ENOMEM);
  EXPECT_EQ(r.bad_wr(), &wrs[2]);
  EXPECT_NE(r.error().message.find("post_recv to SRQ 9"), std::string::npos);
}

}  // namespace
}  // namespace qpgate::verbs::soft
