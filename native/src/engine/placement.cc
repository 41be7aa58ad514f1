#include "placement.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qpgate::engine {
namespace {

namespace fs = std::filesystem;

bool read_text(const fs::path& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

bool read_int(const fs::path& path, int& out) {
  std::string text;
  if (!read_text(path, text)) return false;
  try {
    out = std::stoi(text);
  } catch (...) {
    return false;
  }
  return true;
}

// A numa_node file on the device or, failing that, on one of its parents up
// to <root>/devices: virtio-net's device link points at virtioN, which has
// no numa_node; its parent PCI function does.
bool find_numa_file(const fs::path& device_dir, const fs::path& devices_root, fs::path& found) {
  std::error_code ec;
  fs::path dir = fs::canonical(device_dir, ec);
  if (ec) return false;
  const fs::path stop = fs::weakly_canonical(devices_root, ec);
  for (int depth = 0; depth < 16 && !dir.empty(); ++depth) {
    if (fs::exists(dir / "numa_node", ec)) {
      found = dir / "numa_node";
      return true;
    }
    if (dir == stop || dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return false;
}

}  // namespace

NumaLookup find_device_numa_node(const std::string& sysfs_root, const std::string& device) {
  NumaLookup result;
  if (device.empty()) {
    result.how = "no device configured";
    return result;
  }
  const fs::path root(sysfs_root);
  std::error_code ec;
  fs::path dev_dir;
  const char* kind = nullptr;
  if (fs::exists(root / "class/net" / device, ec)) {
    dev_dir = root / "class/net" / device;
    kind = "netdev";
  } else if (fs::exists(root / "class/infiniband" / device, ec)) {
    dev_dir = root / "class/infiniband" / device;
    kind = "RDMA device";
  } else {
    result.how = "no netdev or RDMA device named '" + device + "' (looked in " +
                 (root / "class/net").string() + " and " + (root / "class/infiniband").string() + ")";
    return result;
  }
  if (!fs::exists(dev_dir / "device", ec)) {
    result.how = std::string(kind) + " '" + device +
                 "' is virtual (no device link in sysfs), so it has no NUMA node";
    return result;
  }
  fs::path numa_file;
  if (!find_numa_file(dev_dir / "device", root / "devices", numa_file)) {
    result.how = std::string(kind) + " '" + device +
                 "': neither the device nor its parents have a numa_node file";
    return result;
  }
  int node = -1;
  if (!read_int(numa_file, node)) {
    result.how = "could not read " + numa_file.string();
    return result;
  }
  if (node >= 0) {
    result.node = node;
    result.how = "read " + numa_file.string();
    return result;
  }
  // -1: the firmware gave no affinity. On a one-node machine that is no loss.
  std::string online;
  if (read_text(root / "devices/system/node/online", online)) {
    const CpuListParse nodes = parse_cpu_list(online);  // same list syntax
    if (nodes.ok() && nodes.cpus.size() == 1) {
      result.node = nodes.cpus.front();
      result.how = numa_file.string() + " is -1 (no affinity reported); the machine has one NUMA node, node " +
                   std::to_string(result.node);
      return result;
    }
  }
  result.how = numa_file.string() + " is -1 (no affinity reported) on a multi-node machine";
  return result;
}

namespace {
// Sets plan.cpu and plan.cpu_reason from plan.candidates (not empty).
void choose_cpu(CpuPlan& plan, const CpuList& taken, const std::string& from);
}  // namespace

CpuPlan plan_placement(const PlacementRequest& request, const CpuList& allowed) {
  CpuPlan plan;
  plan.device = request.device;
  plan.allowed_cpus = allowed;
  const NumaLookup numa = find_device_numa_node(request.sysfs_root, request.device);
  plan.numa_node = numa.node;
  plan.numa_source = numa.how;
  if (numa.node >= 0) {
    std::string text;
    const fs::path cpulist = fs::path(request.sysfs_root) / "devices/system/node" /
                             ("node" + std::to_string(numa.node)) / "cpulist";
    if (read_text(cpulist, text)) {
      const CpuListParse parsed = parse_cpu_list(text);
      if (parsed.ok()) plan.node_cpus = parsed.cpus;
    }
  }

  std::string from;
  if (!request.cpus.empty()) {
    const CpuListParse wanted = parse_cpu_list(request.cpus);
    if (!wanted.ok() || wanted.cpus.empty()) {
      plan.cpu_reason = wanted.ok() ? "cpus override is empty" : "cpus override: " + wanted.error;
      return plan;
    }
    plan.candidates = intersect(wanted.cpus, allowed);
    const CpuList refused = subtract(wanted.cpus, allowed);
    if (plan.candidates.empty()) {
      plan.cpu_reason = "requested CPUs " + format_cpu_list(wanted.cpus) +
                        " are not allowed for this process (allowed: " + format_cpu_list(allowed) +
                        "); not pinned";
      return plan;
    }
    from = "the cpus override " + request.cpus;
    if (!refused.empty()) from += " (CPUs " + format_cpu_list(refused) + " not allowed, ignored)";
    if (plan.numa_node >= 0 && !plan.node_cpus.empty() &&
        intersect(plan.candidates, plan.node_cpus).empty()) {
      from += "; note: none of them is on the device's node " + std::to_string(plan.numa_node);
    }
  } else if (!plan.node_cpus.empty()) {
    plan.candidates = intersect(plan.node_cpus, allowed);
    if (plan.candidates.empty()) {
      plan.candidates = allowed;
      from = "the allowed CPUs " + format_cpu_list(allowed) + ", because none of node " +
             std::to_string(plan.numa_node) + "'s CPUs " + format_cpu_list(plan.node_cpus) +
             " is allowed";
    } else {
      from = "node " + std::to_string(plan.numa_node) + "'s CPUs " +
             format_cpu_list(plan.node_cpus) + " that are allowed";
    }
  } else {
    plan.candidates = allowed;
    from = "the allowed CPUs " + format_cpu_list(allowed) + " (no NUMA node known)";
  }
  if (plan.candidates.empty()) {
    plan.cpu_reason = "no CPU to choose from; not pinned";
    return plan;
  }
  choose_cpu(plan, request.taken_cpus, from);
  return plan;
}

namespace {

void choose_cpu(CpuPlan& plan, const CpuList& taken, const std::string& from) {
  auto engines_on = [&](int cpu) { return std::count(taken.begin(), taken.end(), cpu); };
  // The last CPU with the fewest other engines: CPU 0 (the first) usually
  // takes interrupts, timers and housekeeping, and the kernel tends to place
  // other work low.
  int best = plan.candidates.back();
  for (auto it = plan.candidates.rbegin(); it != plan.candidates.rend(); ++it) {
    if (engines_on(*it) < engines_on(best)) best = *it;
  }
  plan.cpu = best;
  plan.cpu_reason = "CPU " + std::to_string(best) + " from " + from;
  const auto shared = engines_on(best);
  CpuList busy;
  for (const int cpu : plan.candidates) {
    if (engines_on(cpu) > 0) busy.push_back(cpu);
  }
  if (shared > 0) {
    plan.cpu_reason += ": shared with " + std::to_string(shared) + " other qpgate engine(s), as every candidate has one pinned to it";
  } else if (!busy.empty()) {
    plan.cpu_reason += ": the last one no other qpgate engine is pinned to (CPUs " + format_cpu_list(busy) + " have one)";
  } else if (plan.candidates.size() > 1) {
    plan.cpu_reason += ": the last one, leaving CPU " + std::to_string(plan.candidates.front()) + " for interrupts and housekeeping";
  } else {
    plan.cpu_reason += ": the only candidate";
  }
}

}  // namespace

CpuList engine_cpus_in_use(const std::string& proc_root) {
  CpuList cpus;
  std::error_code ec;
  for (const fs::directory_entry& process : fs::directory_iterator(proc_root, ec)) {
    const std::string pid = process.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code task_ec;
    for (const fs::directory_entry& task : fs::directory_iterator(process.path() / "task", task_ec)) {
      std::string comm;
      if (!read_text(task.path() / "comm", comm) || comm != "qpgate-engine\n") continue;
      std::string status;
      if (!read_text(task.path() / "status", status)) continue;
      const std::size_t at = status.find("Cpus_allowed_list:");
      if (at == std::string::npos) continue;
      const std::size_t begin = status.find_first_not_of(" \t", at + 18);
      const std::size_t end = status.find('\n', begin);
      const CpuListParse parsed = parse_cpu_list(status.substr(begin, end - begin));
      if (parsed.ok() && parsed.cpus.size() == 1) cpus.push_back(parsed.cpus.front());  // pinned; an unpinned one takes no CPU
    }
  }
  return cpus;
}

PinResult pin_current_thread(int cpu) {
  PinResult result;
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    result.error = "no CPU chosen";
    result.affinity = thread_allowed_cpus();
    return result;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  result.affinity = thread_allowed_cpus();
  if (rc != 0) {
    result.error = "pthread_setaffinity_np(CPU " + std::to_string(cpu) + "): " + std::strerror(rc);
    return result;
  }
  if (result.affinity != CpuList{cpu}) {
    result.error = "pinned to CPU " + std::to_string(cpu) + " but pthread_getaffinity_np reads back " +
                   format_cpu_list(result.affinity);
    return result;
  }
  result.pinned = true;
  return result;
}

}  // namespace qpgate::engine
