// Placement against a fake sysfs tree: the NUMA node of netdevs and RDMA
// devices (including virtio-net, whose numa_node is on the parent), virtual
// devices, CPU lists with ranges, the override, and CPUs we may not use.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/cpu_list.h"
#include "engine/placement.h"

namespace qpgate::engine {
namespace {

namespace fs = std::filesystem;

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("qpgate-sysfs-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    // Two nodes: node0 = 0-3,8 ; node1 = 4-7,9-11.
    write("devices/system/node/online", "0-1\n");
    write("devices/system/node/node0/cpulist", "0-3,8\n");
    write("devices/system/node/node1/cpulist", "4-7,9-11\n");
    // A PCI NIC on node 1.
    write("devices/pci0000:00/0000:00:04.0/numa_node", "1\n");
    link("class/net/ens4/device", "devices/pci0000:00/0000:00:04.0");
    // virtio-net: the netdev's device is virtio3, the PCI parent has the node.
    write("devices/pci0000:00/0000:00:03.0/numa_node", "0\n");
    write("devices/pci0000:00/0000:00:03.0/virtio3/features", "0\n");
    link("class/net/eth0/device", "devices/pci0000:00/0000:00:03.0/virtio3");
    // An RDMA device on node 1.
    write("devices/pci0000:00/0000:00:05.0/numa_node", "1\n");
    link("class/infiniband/mlx5_0/device", "devices/pci0000:00/0000:00:05.0");
    // lo: no device link.
    write("class/net/lo/mtu", "65536\n");
    // A device whose firmware reports no affinity.
    write("devices/platform/weird0/numa_node", "-1\n");
    link("class/net/weird0/device", "devices/platform/weird0");
    // A device with no numa_node file anywhere.
    write("devices/virtual/odd0/uevent", "\n");
    link("class/net/odd0/device", "devices/virtual/odd0");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  void link(const std::string& rel, const std::string& target_rel) {
    fs::create_directories((root_ / rel).parent_path());
    fs::create_directory_symlink(root_ / target_rel, root_ / rel);
  }
  PlacementRequest request(const std::string& device, const std::string& cpus = "") const {
    PlacementRequest r;
    r.device = device;
    r.cpus = cpus;
    r.sysfs_root = root_.string();
    return r;
  }

  fs::path root_;
};

TEST(CpuList, ParsesRangesAndSinglesAndFormatsThemBack) {
  const CpuListParse p = parse_cpu_list("0-3,8\n");
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.cpus, (CpuList{0, 1, 2, 3, 8}));
  EXPECT_EQ(format_cpu_list(p.cpus), "0-3,8");
  EXPECT_EQ(parse_cpu_list(" 5 ").cpus, (CpuList{5}));
  EXPECT_EQ(parse_cpu_list("3,1,2,1").cpus, (CpuList{1, 2, 3}));
  EXPECT_TRUE(parse_cpu_list("").ok());
  EXPECT_EQ(format_cpu_list({0, 2, 3, 4, 7}), "0,2-4,7");
}

TEST(CpuList, RejectsMalformedListsSayingWhichItem) {
  for (const char* bad : {"a", "3-1", "1,,2", "-1", "1-", "99999"}) {
    const CpuListParse p = parse_cpu_list(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_TRUE(p.cpus.empty());
  }
  EXPECT_NE(parse_cpu_list("0-3,x").error.find("'x'"), std::string::npos);
}

TEST_F(FakeSysfs, ANetdevsNodeComesFromItsPciDevice) {
  const NumaLookup n = find_device_numa_node(root_.string(), "ens4");
  EXPECT_EQ(n.node, 1);
  EXPECT_NE(n.how.find("0000:00:04.0/numa_node"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, VirtioNetFindsTheNodeOnItsParent) {
  const NumaLookup n = find_device_numa_node(root_.string(), "eth0");
  EXPECT_EQ(n.node, 0);
  EXPECT_NE(n.how.find("0000:00:03.0/numa_node"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, AnRdmaDeviceIsFoundUnderInfiniband) {
  EXPECT_EQ(find_device_numa_node(root_.string(), "mlx5_0").node, 1);
}

TEST_F(FakeSysfs, AVirtualDeviceHasNoNodeAndSaysSo) {
  const NumaLookup n = find_device_numa_node(root_.string(), "lo");
  EXPECT_EQ(n.node, -1);
  EXPECT_NE(n.how.find("virtual"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, ADeviceWithoutNumaNodeHasNone) {
  const NumaLookup n = find_device_numa_node(root_.string(), "odd0");
  EXPECT_EQ(n.node, -1);
  EXPECT_NE(n.how.find("numa_node"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, MinusOneOnAMultiNodeMachineIsNoNode) {
  const NumaLookup n = find_device_numa_node(root_.string(), "weird0");
  EXPECT_EQ(n.node, -1);
  EXPECT_NE(n.how.find("-1"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, MinusOneOnAOneNodeMachineIsNodeZero) {
  write("devices/system/node/online", "0\n");
  const NumaLookup n = find_device_numa_node(root_.string(), "weird0");
  EXPECT_EQ(n.node, 0);
  EXPECT_NE(n.how.find("one NUMA node"), std::string::npos) << n.how;
}

TEST_F(FakeSysfs, AnUnknownDeviceIsNamedInTheReason) {
  const NumaLookup n = find_device_numa_node(root_.string(), "nope0");
  EXPECT_EQ(n.node, -1);
  EXPECT_NE(n.how.find("'nope0'"), std::string::npos);
}

TEST_F(FakeSysfs, ChoosesTheLastAllowedCpuOfTheDevicesNode) {
  const CpuPlan plan = plan_placement(request("ens4"), parse_cpu_list("0-11").cpus);
  EXPECT_EQ(plan.numa_node, 1);
  EXPECT_EQ(plan.node_cpus, (CpuList{4, 5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(plan.candidates, plan.node_cpus);
  EXPECT_EQ(plan.cpu, 11);
  EXPECT_NE(plan.cpu_reason.find("interrupts"), std::string::npos) << plan.cpu_reason;
}

TEST_F(FakeSysfs, OnlyAllowedCpusOfTheNodeAreCandidates) {
  const CpuPlan plan = plan_placement(request("eth0"), parse_cpu_list("2-5").cpus);
  EXPECT_EQ(plan.candidates, (CpuList{2, 3}));
  EXPECT_EQ(plan.cpu, 3);
}

TEST_F(FakeSysfs, WhenNoneOfTheNodesCpusIsAllowedItFallsBackAndSaysWhy) {
  const CpuPlan plan = plan_placement(request("ens4"), parse_cpu_list("0-1").cpus);
  EXPECT_EQ(plan.cpu, 1);
  EXPECT_NE(plan.cpu_reason.find("none of node 1"), std::string::npos) << plan.cpu_reason;
}

TEST_F(FakeSysfs, AnExplicitCpuListOverridesTheNode) {
  const CpuPlan plan = plan_placement(request("ens4", "2"), parse_cpu_list("0-11").cpus);
  EXPECT_EQ(plan.cpu, 2);
  EXPECT_NE(plan.cpu_reason.find("override"), std::string::npos);
  EXPECT_NE(plan.cpu_reason.find("none of them is on the device's node 1"), std::string::npos) << plan.cpu_reason;
}

TEST_F(FakeSysfs, AnOverrideCpuThatIsNotAllowedIsNotPinnedAndSaysWhy) {
  const CpuPlan plan = plan_placement(request("ens4", "5"), parse_cpu_list("0-1").cpus);
  EXPECT_EQ(plan.cpu, -1);
  EXPECT_NE(plan.cpu_reason.find("not allowed"), std::string::npos) << plan.cpu_reason;
  EXPECT_NE(plan.cpu_reason.find("0-1"), std::string::npos) << plan.cpu_reason;
  const CpuPlan partly = plan_placement(request("", "1,5"), parse_cpu_list("0-1").cpus);
  EXPECT_EQ(partly.cpu, 1);
  EXPECT_NE(partly.cpu_reason.find("5 not allowed, ignored"), std::string::npos) << partly.cpu_reason;
}

TEST_F(FakeSysfs, NoDeviceChoosesFromTheAllowedCpus) {
  const CpuPlan plan = plan_placement(request(""), parse_cpu_list("0-3").cpus);
  EXPECT_EQ(plan.numa_node, -1);
  EXPECT_EQ(plan.cpu, 3);
  EXPECT_EQ(plan.numa_source, "no device configured");
}

TEST_F(FakeSysfs, AnotherEnginesCpuIsAvoidedWhileACandidateIsFree) {
  PlacementRequest r = request("");
  r.taken_cpus = {3};
  const CpuPlan plan = plan_placement(r, parse_cpu_list("0-3").cpus);
  EXPECT_EQ(plan.cpu, 2);
  EXPECT_NE(plan.cpu_reason.find("no other qpgate engine is pinned to (CPUs 3 have one)"), std::string::npos) << plan.cpu_reason;
  r.taken_cpus = {3, 2, 1, 0, 3, 1};
  const CpuPlan full = plan_placement(r, parse_cpu_list("0-3").cpus);
  EXPECT_EQ(full.cpu, 2) << "the last of those with the fewest engines";
  EXPECT_NE(full.cpu_reason.find("shared with 1 other qpgate engine(s)"), std::string::npos) << full.cpu_reason;
  r.taken_cpus = {7};
  EXPECT_EQ(plan_placement(r, parse_cpu_list("0-3").cpus).cpu, 3) << "an engine on a CPU that is not a candidate changes nothing";
}

TEST_F(FakeSysfs, AnExplicitSingleCpuIsKeptEvenIfAnotherEngineHasIt) {
  PlacementRequest r = request("", "1");
  r.taken_cpus = {1};
  const CpuPlan plan = plan_placement(r, parse_cpu_list("0-3").cpus);
  EXPECT_EQ(plan.cpu, 1);
  EXPECT_NE(plan.cpu_reason.find("shared with 1"), std::string::npos) << plan.cpu_reason;
}

// A fake /proc: pinned engine threads count, an unpinned one, other threads
// and non-process entries do not.
TEST_F(FakeSysfs, EngineCpusInUseAreThePinnedQpgateEngineThreads) {
  write("proc/100/task/100/comm", "node\n");
  write("proc/100/task/100/status", "Name:\tnode\nCpus_allowed_list:\t0-3\n");
  write("proc/100/task/101/comm", "qpgate-engine\n");
  write("proc/100/task/101/status", "Name:\tqpgate-engine\nCpus_allowed_list:\t3\n");
  write("proc/100/task/102/comm", "qpgate-engine\n");
  write("proc/100/task/102/status", "Name:\tqpgate-engine\nCpus_allowed_list:\t0-3\n");
  write("proc/200/task/201/comm", "qpgate-engine\n");
  write("proc/200/task/201/status", "Name:\tqpgate-engine\nCpus_allowed_list:\t1\n");
  write("proc/self/task/1/comm", "qpgate-engine\n");
  write("proc/self/task/1/status", "Cpus_allowed_list:\t2\n");
  CpuList cpus = engine_cpus_in_use((root_ / "proc").string());
  std::sort(cpus.begin(), cpus.end());
  EXPECT_EQ(cpus, (CpuList{1, 3}));
}

TEST(Pinning, PinsTheCallingThreadAndReadsItBack) {
  const CpuList allowed = process_allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const CpuList before = thread_allowed_cpus();
  const PinResult r = pin_current_thread(allowed.back());
  EXPECT_TRUE(r.pinned) << r.error;
  EXPECT_EQ(r.affinity, CpuList{allowed.back()});
  const PinResult bad = pin_current_thread(-1);
  EXPECT_FALSE(bad.pinned);
  // Restore, so later tests in this process are not confined.
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : before) CPU_SET(static_cast<std::size_t>(cpu), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace
}  // namespace qpgate::engine
