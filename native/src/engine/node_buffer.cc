#include "node_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#ifdef QPGATE_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

namespace qpgate::engine {
namespace {

constexpr std::size_t kHugePage = 2u << 20;
constexpr std::size_t kSmallPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

const char* page_kind_name(PageKind kind) {
  switch (kind) {
    case PageKind::kHugetlb2MiB: return "hugetlbfs-2MiB";
    case PageKind::kTransparent: return "transparent";
    case PageKind::kNormal: return "none";
  }
  return "none";
}

bool libnuma_available() {
#ifdef QPGATE_HAVE_NUMA
  return numa_available() != -1;
#else
  return false;
#endif
}

long reserved_huge_pages() {
  std::ifstream in("/proc/sys/vm/nr_hugepages");
  long n = -1;
  if (!(in >> n)) return -1;
  return n;
}

std::string transparent_huge_pages_mode(const std::string& sysfs_root) {
  std::ifstream in(sysfs_root + "/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "";
  const std::size_t open = line.find('[');
  const std::size_t close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return line.substr(open + 1, close - open - 1);
}

PageInfo page_info(const void* address) {
  PageInfo info;
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long lo = 0;
    unsigned long hi = 0;
    // Mapping header lines start with "lo-hi " in hex; field lines with a name.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17) {
      if (inside) break;
      inside = target >= lo && target < hi;
      info.found = info.found || inside;
      continue;
    }
    if (!inside) continue;
    long kb = 0;
    if (std::sscanf(line.c_str(), "KernelPageSize: %ld kB", &kb) == 1) info.kernel_page_kb = kb;
    if (std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) info.anon_huge_kb = kb;
    if (std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) info.rss_kb = kb;
  }
  return info;
}

// long because: the mapping's fallbacks (hugetlbfs, THP with its 2 MiB trim,
// plain pages) and the NUMA mbind are one sequence over one mapping, each
// step recording why it chose what it did (page_reason_, node_reason_).
NodeBuffer::NodeBuffer(const BufferOptions& options) : size_(options.size) {
  if (options.size == 0) throw std::invalid_argument("NodeBuffer: size 0");
  void* p = MAP_FAILED;

  std::string hugetlb_why;
  if (options.huge_pages) {
    const std::size_t len = round_up(options.size, kHugePage);
    p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      mapped_ = len;
      kind_ = PageKind::kHugetlb2MiB;
      page_reason_ = "mmap(MAP_HUGETLB) of " + std::to_string(len >> 20) + " MiB succeeded";
    } else {
      const int err = errno;
      const long reserved = reserved_huge_pages();
      hugetlb_why = reserved == 0 ? "no 2 MiB huge pages reserved (/proc/sys/vm/nr_hugepages is 0)"
                                  : "mmap(MAP_HUGETLB) failed: " + errno_text(err) + " (nr_hugepages " +
                                        std::to_string(reserved) + ", all may be in use)";
    }
  } else {
    hugetlb_why = "huge pages disabled by configuration";
  }

  if (p == MAP_FAILED) {
    const std::string thp = options.huge_pages ? transparent_huge_pages_mode(options.sysfs_root) : "";
    const bool try_thp = options.huge_pages && !thp.empty() && thp != "never";
    // For THP the range must hold an aligned 2 MiB extent: map 2 MiB extra,
    // then trim the unaligned head and tail.
    const std::size_t len = try_thp ? round_up(options.size, kHugePage) : round_up(options.size, kSmallPage);
    const std::size_t over = try_thp ? len + kHugePage : len;
    void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      throw std::system_error(errno, std::generic_category(),
                              "NodeBuffer: mmap of " + std::to_string(over) + " bytes");
    }
    if (try_thp) {
      const auto base = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t aligned = round_up(base, kHugePage);
      if (aligned > base) munmap(raw, aligned - base);
      const std::uintptr_t end = base + over;
      if (end > aligned + len) munmap(reinterpret_cast<void*>(aligned + len), end - (aligned + len));
      p = reinterpret_cast<void*>(aligned);
      mapped_ = len;
      if (madvise(p, len, MADV_HUGEPAGE) == 0) {
        kind_ = PageKind::kTransparent;
        page_reason_ = hugetlb_why + "; using transparent huge pages (madvise(MADV_HUGEPAGE), THP mode [" +
                       thp + "])";
      } else {
        page_reason_ = hugetlb_why + "; madvise(MADV_HUGEPAGE) failed: " + errno_text(errno) +
                       "; using 4 KiB pages";
      }
    } else {
      p = raw;
      mapped_ = len;
      page_reason_ = hugetlb_why + (options.huge_pages
                                        ? "; transparent huge pages are " +
                                              (thp.empty() ? std::string("not available") : "[" + thp + "]") +
                                              "; using 4 KiB pages"
                                        : "; using 4 KiB pages");
    }
  }
  data_ = static_cast<std::byte*>(p);

#ifdef QPGATE_HAVE_NUMA
  if (options.numa_node < 0) {
    node_reason_ = "no NUMA node known; first touch on the pinned CPU places the memory";
  } else if (numa_available() == -1) {
    node_reason_ = "libnuma: the kernel has no NUMA support; first touch places the memory";
  } else {
    const int node = options.numa_node;
    const std::size_t bits = 8 * sizeof(unsigned long);
    std::vector<unsigned long> mask(static_cast<std::size_t>(node) / bits + 1, 0);
    mask[static_cast<std::size_t>(node) / bits] |= 1UL << (static_cast<std::size_t>(node) % bits);
    if (mbind(data_, mapped_, MPOL_PREFERRED, mask.data(), mask.size() * bits + 1, 0) == 0) {
      node_bound_ = true;
      node_reason_ = "libnuma mbind(MPOL_PREFERRED) to node " + std::to_string(node);
    } else {
      node_reason_ = "libnuma mbind to node " + std::to_string(node) + " failed: " + errno_text(errno) +
                     "; first touch places the memory";
    }
  }
#else
  node_reason_ = options.numa_node < 0
                     ? "no NUMA node known; first touch on the pinned CPU places the memory"
                     : "built without libnuma; first touch on the pinned CPU places the memory on its node";
#endif
}

PreferredNodeScope::PreferredNodeScope(int numa_node) {
#ifdef QPGATE_HAVE_NUMA
  if (numa_node < 0 || numa_available() == -1) return;
  const std::size_t bits = 8 * sizeof(unsigned long);
  const std::size_t nodes = static_cast<std::size_t>(numa_max_possible_node()) + 1;
  if (static_cast<std::size_t>(numa_node) >= nodes) return;
  const std::size_t words = (nodes + bits - 1) / bits;
  old_mask_.assign(words, 0);
  if (get_mempolicy(&old_mode_, old_mask_.data(), words * bits, nullptr, 0) != 0) return;
  std::vector<unsigned long> mask(words, 0);
  mask[static_cast<std::size_t>(numa_node) / bits] |= 1UL << (static_cast<std::size_t>(numa_node) % bits);
  applied_ = set_mempolicy(MPOL_PREFERRED, mask.data(), words * bits + 1) == 0;
#else
  (void)numa_node;
#endif
}

PreferredNodeScope::~PreferredNodeScope() {
#ifdef QPGATE_HAVE_NUMA
  if (!applied_) return;
  const std::size_t bits = 8 * sizeof(unsigned long);
  const bool default_policy = old_mode_ == MPOL_DEFAULT;
  (void)set_mempolicy(old_mode_, default_policy ? nullptr : old_mask_.data(), default_policy ? 0 : old_mask_.size() * bits + 1);
#endif
}

NodeBuffer::~NodeBuffer() {
  if (data_ != nullptr) munmap(data_, mapped_);
}

void NodeBuffer::first_touch() {
  // Every byte, not one per page: this is also the zeroing the rings need.
  std::memset(data_, 0, mapped_);
}

}  // namespace qpgate::engine
