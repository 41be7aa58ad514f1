// Where the engine thread runs: the NUMA node of the device it serves (read
// from sysfs), a CPU of that node that the process may use, and the pinning
// itself. Everything it decides is written into a PlacementReport with the
// reason, because "why is my poll thread on the wrong socket" must be
// answerable from the control plane without a debugger.
#pragma once

#include <string>

#include "cpu_list.h"

namespace qpgate::engine {

struct PlacementRequest {
  // A netdev (/sys/class/net/<dev>) or an RDMA device
  // (/sys/class/infiniband/<dev>); empty = no device, any allowed CPU.
  std::string device;
  // Explicit CPU list ("3" or "2-3"); overrides the NUMA choice. Empty = choose.
  std::string cpus;
  // Root of sysfs; tests point it at a fake tree.
  std::string sysfs_root = "/sys";
  // The CPUs other qpgate engines on this host are pinned to, one entry per
  // engine (engine_cpus_in_use): the choice avoids them while a candidate is
  // free. Two pinned pollers on one CPU starve each other's timers (an RC
  // client and its gateway on one host ran out of retries that way under
  // load) while another CPU has room.
  CpuList taken_cpus;
};

// The CPUs the host's running qpgate engines ("qpgate-engine" threads
// pinned to one CPU) are pinned to, one entry per engine, read from
// <proc_root>/<pid>/task/<tid>/{comm,status}. Tests point proc_root at a fake tree.
CpuList engine_cpus_in_use(const std::string& proc_root = "/proc");

struct NumaLookup {
  int node = -1;
  std::string how;  // the file it came from, or why there is none
};

// The NUMA node of `device`, following the device link and, for devices
// whose own directory has no numa_node (virtio-net's virtioN), its parents
// (the PCI function that has one).
NumaLookup find_device_numa_node(const std::string& sysfs_root, const std::string& device);

// The decision, before pinning. Pure apart from reading sysfs.
struct CpuPlan {
  std::string device;
  int numa_node = -1;
  std::string numa_source;
  CpuList node_cpus;     // the node's cpulist, empty when no node is known
  CpuList allowed_cpus;  // what the process may use
  CpuList candidates;    // what the choice was made from
  int cpu = -1;          // -1: do not pin
  std::string cpu_reason;
};

CpuPlan plan_placement(const PlacementRequest& request, const CpuList& allowed);

struct PinResult {
  bool pinned = false;
  std::string error;  // why not, when not
  CpuList affinity;   // read back with pthread_getaffinity_np
};

// Pins the calling thread to `cpu` and verifies it by reading the mask back.
PinResult pin_current_thread(int cpu);

// What the engine did, for placement() and the logs.
struct PlacementReport {
  CpuPlan plan;
  PinResult pin;
  int tid = 0;                // the engine thread's kernel tid (/proc/self/task/<tid>)
  std::string memory_policy;  // "libnuma node-local" | "first-touch"
  std::string memory_reason;
  std::string huge_pages;     // "hugetlbfs-2MiB" | "transparent" | "none"
  std::string huge_pages_reason;
  std::string idle_strategy;  // "spin" | "yield" | "backoff"
  std::string idle_reason;
};

}  // namespace qpgate::engine
