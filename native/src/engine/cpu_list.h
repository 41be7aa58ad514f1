// CPU lists in the kernel's text form ("0-3,8"), as found in sysfs
// (node<N>/cpulist), /proc (Cpus_allowed_list) and taskset. One name for one
// thing: the same text form is what the placement report shows and what the
// `cpus` option accepts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qpgate::engine {

// Sorted, without duplicates.
using CpuList = std::vector<int>;

struct CpuListParse {
  CpuList cpus;
  std::string error;  // empty when the text was valid
  bool ok() const { return error.empty(); }
};

// Parses "0-3,8" (ranges and singles, whitespace and a trailing newline
// tolerated, as sysfs files end in one). CPUs must be < CPU_SETSIZE.
// Not libnuma's numa_parse_cpustring_all: it refuses every CPU at or above
// the running machine's configured count (on a 2-CPU host "0-3,8" is an
// error), so it cannot read another root's sysfs (sysfsRoot, the placement
// tests) nor let plan_placement say which requested CPUs are not allowed; it
// also says nothing of what was wrong (NULL, and a line on stderr).
CpuListParse parse_cpu_list(std::string_view text);

// The inverse: {0,1,2,3,8} -> "0-3,8"; {} -> "".
std::string format_cpu_list(const CpuList& cpus);

CpuList intersect(const CpuList& a, const CpuList& b);
CpuList subtract(const CpuList& a, const CpuList& b);

// CPUs this process may run on: sched_getaffinity of the process (its main
// thread), i.e. what taskset/cgroups/cpusets left us.
CpuList process_allowed_cpus();

// CPUs the calling thread may run on now.
CpuList thread_allowed_cpus();

}  // namespace qpgate::engine
