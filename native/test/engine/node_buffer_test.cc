// Node-local buffers: alignment, the fallback chain and its reasons, and -
// where huge pages are reserved (CI reserves some) - proof that the buffer
// really sits on a 2 MiB hugetlbfs page.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "engine/engine.h"
#include "engine/node_buffer.h"

#ifdef QPGATE_HAVE_NUMA
#include <numaif.h>
#endif
#include <vector>

namespace qpgate::engine {
namespace {

long meminfo_kb_or_count(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  long value = -1;
  std::string rest;
  while (in >> name >> value) {
    std::getline(in, rest);
    if (name == key + ":") return value;
  }
  return -1;
}

TEST(NodeBuffer, IsCacheLineAlignedZeroedAndFreedByItsDestructor) {
  BufferOptions options;
  options.size = 100'000;
  NodeBuffer buffer(options);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 64, 0u);
  EXPECT_GE(buffer.mapped_size(), buffer.size());
  buffer.first_touch();
  EXPECT_EQ(buffer.data()[buffer.size() - 1], std::byte{0});
  EXPECT_FALSE(buffer.page_reason().empty());
  EXPECT_FALSE(buffer.node_reason().empty());
}

TEST(NodeBuffer, WithHugePagesDisabledItUsesSmallPagesAndSaysWhy) {
  BufferOptions options;
  options.size = 4096;
  options.huge_pages = false;
  NodeBuffer buffer(options);
  EXPECT_EQ(buffer.page_kind(), PageKind::kNormal);
  EXPECT_NE(buffer.page_reason().find("disabled by configuration"), std::string::npos) << buffer.page_reason();
}

TEST(NodeBuffer, WithoutReservedHugePagesItFallsBackAndSaysSo) {
  if (reserved_huge_pages() != 0) GTEST_SKIP() << "huge pages are reserved here; the fallback is not exercised";
  BufferOptions options;
  options.size = 1 << 20;
  NodeBuffer buffer(options);
  EXPECT_NE(buffer.page_kind(), PageKind::kHugetlb2MiB);
  EXPECT_NE(buffer.page_reason().find("nr_hugepages is 0"), std::string::npos) << buffer.page_reason();
  const std::string thp = transparent_huge_pages_mode();
  if (thp == "always" || thp == "madvise") {
    EXPECT_EQ(buffer.page_kind(), PageKind::kTransparent) << buffer.page_reason();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % (2u << 20), 0u) << "THP needs 2 MiB alignment";
  }
}

TEST(NodeBuffer, WhenHugePagesAreReservedTheBufferComesFromHugetlbfs) {
  const long reserved = reserved_huge_pages();
  if (reserved <= 0) {
    GTEST_SKIP() << "no huge pages reserved (/proc/sys/vm/nr_hugepages = " << reserved
                 << "); run `echo 16 > /proc/sys/vm/nr_hugepages` as root to exercise this";
  }
  const long free_before = meminfo_kb_or_count("HugePages_Free");
  BufferOptions options;
  options.size = 1 << 20;
  NodeBuffer buffer(options);
  ASSERT_EQ(buffer.page_kind(), PageKind::kHugetlb2MiB) << buffer.page_reason();
  buffer.first_touch();
  const PageInfo info = page_info(buffer.data());
  ASSERT_TRUE(info.found);
  EXPECT_EQ(info.kernel_page_kb, 2048) << "smaps must show the mapping on 2 MiB pages";
  EXPECT_EQ(meminfo_kb_or_count("HugePages_Free"), free_before - 1) << "one huge page in use";
}

TEST(NodeBuffer, WhenHugePagesAreReservedTheEngineReportsUsingThem) {
  if (reserved_huge_pages() < 2) GTEST_SKIP() << "needs 2 reserved huge pages, /proc/sys/vm/nr_hugepages = " << reserved_huge_pages();
  Engine engine(EngineConfig{});
  engine.start();
  EXPECT_EQ(engine.placement().huge_pages, "hugetlbfs-2MiB") << engine.placement().huge_pages_reason;
  EXPECT_NE(engine.placement().huge_pages_reason.find("KernelPageSize 2048 kB"), std::string::npos)
      << engine.placement().huge_pages_reason;
  EXPECT_EQ(page_info(engine.to_engine_ring().view.data()).kernel_page_kb, 2048);
  engine.stop();
}

}  // namespace
}  // namespace qpgate::engine

#ifdef QPGATE_HAVE_NUMA
namespace qpgate::engine {
namespace {

int current_policy() {
  int mode = -1;
  unsigned long mask[16] = {};
  EXPECT_EQ(get_mempolicy(&mode, mask, sizeof mask * 8, nullptr, 0), 0);
  return mode;
}

// A feed's rings are reserved by the JS thread: while they are touched, that
// thread prefers the engine's node; afterwards it has its own policy again.
TEST(PreferredNodeScope, PrefersTheNodeWhileItLivesAndRestoresThePolicyAfter) {
  if (!libnuma_available()) GTEST_SKIP() << "no NUMA support in this kernel";
  const int before = current_policy();
  {
    const PreferredNodeScope scope(0);
    ASSERT_TRUE(scope.applied());
    EXPECT_EQ(current_policy(), MPOL_PREFERRED);
    std::vector<unsigned char> touched(1 << 20, 1);
    void* page = touched.data();
    int node = -1;
    ASSERT_EQ(get_mempolicy(&node, nullptr, 0, page, MPOL_F_NODE | MPOL_F_ADDR), 0);
    EXPECT_EQ(node, 0);
  }
  EXPECT_EQ(current_policy(), before);
  const PreferredNodeScope none(-1);
  EXPECT_FALSE(none.applied());
  EXPECT_EQ(current_policy(), before);
}

}  // namespace
}  // namespace qpgate::engine
#endif
