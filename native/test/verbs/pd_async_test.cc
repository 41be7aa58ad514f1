#include <gtest/gtest.h>

#include "verbs/soft/async_queue.h"
#include "verbs/soft/key_gen.h"
#include "verbs/soft/pd_table.h"

namespace qpgate::verbs::soft {
namespace {

TEST(PdTable, APdWithObjectsCannotBeDeallocated) {
  PdTable pds;
  auto pd = pds.alloc();
  ASSERT_TRUE(pd.ok());
  EXPECT_NE(*pd, 0u);
  ASSERT_TRUE(pds.add_ref(*pd).ok());
  const Status busy = pds.dealloc(*pd);
  EXPECT_EQ(busy.code(), EBUSY);
  EXPECT_NE(std::string(busy.message()).find("still has 1 objects"), std::string::npos);
  pds.release(*pd);
  EXPECT_TRUE(pds.dealloc(*pd).ok());
  EXPECT_EQ(pds.dealloc(*pd).code(), ENOENT);
  EXPECT_EQ(pds.add_ref(*pd).code(), ENOENT);
}

TEST(PdTable, PdsAreDistinctAndBounded) {
  PdTable pds(2);
  auto a = pds.alloc();
  auto b = pds.alloc();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(pds.alloc().code(), ENOMEM);
}

TEST(AsyncEventQueue, EventsComeOutInOrderAndOverflowIsCountedNotBlocking) {
  AsyncEventQueue q(2);
  EXPECT_TRUE(q.push(EventType::QP_FATAL, 0x11, 1));
  EXPECT_TRUE(q.push(EventType::PORT_ERR, 1));
  EXPECT_FALSE(q.push(EventType::SQ_DRAINED, 0x11));
  EXPECT_EQ(q.dropped(), 1u);
  auto a = q.pop();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->event_type, EventType::QP_FATAL);
  EXPECT_EQ(a->element, EventElement::QP);
  EXPECT_EQ(a->element_id, 0x11u);
  EXPECT_EQ(a->context, 1u);
  EXPECT_EQ(q.pop()->element, EventElement::PORT);
  EXPECT_FALSE(q.pop().has_value());
}

TEST(KeyGenerator, NeverProducesZeroOrAllOnes) {
  int calls = 0;
  KeyGenerator keys([&calls](void* out, std::size_t n) {
    auto* p = static_cast<std::uint32_t*>(out);
    for (std::size_t i = 0; i < n / 4; ++i) p[i] = (i % 2 == 0) ? 0u : 0xffffffffu;
    if (++calls > 1) p[0] = 0x1234;  // the second pool has one usable key, consumed last
    return true;
  });
  auto k = keys.next();
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, 0x1234u);
}

TEST(KeyGenerator, DrawsFromGetrandom) {
  KeyGenerator keys;
  auto a = keys.next();
  auto b = keys.next();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace qpgate::verbs::soft
