// Memory for the engine's rings and packet buffers: on the engine's NUMA
// node, 64-byte aligned (mmap gives page alignment, which is more), on huge
// pages where the system has them, and honest about which of those it got.
//
// Huge pages first, in order:
//   1. hugetlbfs 2 MiB pages (mmap MAP_HUGETLB): only when the admin reserved
//      some (/proc/sys/vm/nr_hugepages > 0); mmap fails otherwise, so success
//      means we have them.
//   2. transparent huge pages (mmap + madvise(MADV_HUGEPAGE)) when THP is not
//      "never"; the kernel may still back the range with 4 KiB pages, which
//      page_info() reads back from /proc/self/smaps.
//   3. plain 4 KiB pages.
// Node placement: mbind(MPOL_PREFERRED) through libnuma when built with it,
// else first touch. PREFERRED rather than BIND: with MPOL_BIND a hugetlb
// fault on a node whose own pool is empty is a SIGBUS, whereas PREFERRED
// falls back to another node, which the report can show.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qpgate::engine {

enum class PageKind { kHugetlb2MiB, kTransparent, kNormal };
const char* page_kind_name(PageKind kind);

struct BufferOptions {
  std::size_t size = 0;
  int numa_node = -1;   // -1: no node known, first touch decides
  bool huge_pages = true;
  std::string sysfs_root = "/sys";  // for transparent_hugepage/enabled
};

struct PageInfo {
  long kernel_page_kb = 0;   // KernelPageSize of the mapping (2048 = hugetlbfs)
  long anon_huge_kb = 0;     // AnonHugePages: THP actually in use
  long rss_kb = 0;
  bool found = false;
};

// Reads /proc/self/smaps for the mapping that contains `address`.
PageInfo page_info(const void* address);

class NodeBuffer {
 public:
  // Throws std::system_error when not even a plain mmap works.
  explicit NodeBuffer(const BufferOptions& options);
  ~NodeBuffer();
  NodeBuffer(const NodeBuffer&) = delete;
  NodeBuffer& operator=(const NodeBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }            // what was asked for
  std::size_t mapped_size() const { return mapped_; }   // rounded up to the page size

  PageKind page_kind() const { return kind_; }
  const std::string& page_reason() const { return page_reason_; }
  bool node_bound() const { return node_bound_; }
  const std::string& node_reason() const { return node_reason_; }

  // Writes every page from the calling thread: it faults the memory in now
  // (no page faults on the hot path) and, without libnuma, is what puts it
  // on the caller's node. Call it on the pinned engine thread.
  void first_touch();

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
  PageKind kind_ = PageKind::kNormal;
  std::string page_reason_;
  bool node_bound_ = false;
  std::string node_reason_;
};

// For the calling thread, while the scope lives: pages it first touches go
// preferably to `numa_node` (set_mempolicy MPOL_PREFERRED); the thread's own
// policy is restored after. Memory allocated and touched off the engine
// thread (a feed's rings, reserved by the JS thread) so still lands on the
// engine's node. numa_node -1, or no libnuma: changes nothing.
class PreferredNodeScope {
 public:
  explicit PreferredNodeScope(int numa_node);
  ~PreferredNodeScope();
  PreferredNodeScope(const PreferredNodeScope&) = delete;
  PreferredNodeScope& operator=(const PreferredNodeScope&) = delete;
  bool applied() const { return applied_; }

 private:
  bool applied_ = false;
  int old_mode_ = 0;
  std::vector<unsigned long> old_mask_;
};

// True when built with libnuma and the kernel supports NUMA policy.
bool libnuma_available();
// Contents of /proc/sys/vm/nr_hugepages (-1 if unreadable).
long reserved_huge_pages();
// The selected mode of THP ("always", "madvise", "never"), "" if unknown.
std::string transparent_huge_pages_mode(const std::string& sysfs_root = "/sys");

}  // namespace qpgate::engine
