// The soft device: verbs::Device over RoCEv2-in-UDP on one IPv4 address
// (rxe's rxe.c + rxe_verbs.c roles). It owns the tables (PDs, MRs, CQ and
// SRQ handles, QPNs, multicast groups, async events), the sockets (net.h)
// and the ingress (recv.h), and it creates the verbs objects around them:
//
//   open_soft_device({"127.0.0.2"} or {"eth0"})  → SoftDevice
//     alloc_pd → SoftPd: reg_mr (MrTable), create_ah, create_srq (SoftSrq),
//                        create_qp (SoftQp, from soft_qp.h)
//     create_cq → SoftCompletionQueue
//
// Ownership: every object keeps alive what it was made from (a QP keeps its
// PD, CQs, SRQ and the device core), so they may be destroyed in any order.
// Threads: all of it belongs to the one thread that drives it: the engine
// thread, whose agent (engine/soft_device_agent.h) runs the device's driver
// (soft_device_driver.h); the control plane reaches it through
// Engine::run_on_engine. Nothing here locks.
//
// Driving: do_work(now) is one duty cycle — run every QP's do_work (what was
// posted since the last pass, timers), flush the transmit batch together
// with the ACKs the last pass queued, then read a batch from the sockets
// through the ingress to the QPs — and reports the earliest protocol
// deadline of its QPs (now, while answers of this pass wait to be sent). The driver
// calls it; tests may call it directly without an engine.
//
// Addressing: GID index 0 is the IPv4-mapped GID ::ffff:a.b.c.d of the
// device's address (a RoCEv2 v4 GID); index 1, when the device has an
// alternate address, that address's (path_nets.h). QPNs
// start at a random value and count up, never 0, 1 or 0xFFFFFF, never one
// in use. The port's active MTU is the largest IB MTU the interface MTU
// carries (mtu_for_ip_mtu: 1500 → 1024, lo's 65536 → 4096).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "verbs/device.h"
#include "verbs/soft/async_queue.h"
#include "verbs/soft/fault.h"
#include "verbs/soft/mcast_table.h"
#include "verbs/soft/mr_table.h"
#include "verbs/soft/net.h"
#include "verbs/soft/pd_table.h"
#include "verbs/soft/recv.h"

namespace qpgate::verbs::soft {

class SoftQp;

struct SoftDeviceOptions {
  // An IPv4 address ("127.0.0.2") or an interface name ("eth0", "lo": its
  // first IPv4 address). An address must belong to an interface (loopback
  // interfaces own their whole subnet, so 127.0.0.x works on lo).
  std::string address_or_name;
  std::string name;  // the device name; default "qpgate_soft_<address>"
  IcrcPolicy icrc_policy = IcrcPolicy::STRICT;
  NetConfig net;     // address is filled in by open_soft_device
  // A second IPv4 address (or interface name) of this host: GID index 1, the
  // source of the RC paths whose sgid_index is 1 (IBV_QP_ALT_PATH's
  // alternate path, path_nets.h). Empty: the device has one address.
  std::string alternate_address;
};

// Where an address lives: found through getifaddrs.
struct InterfaceInfo {
  std::string name;            // "lo", "eth0"
  wire::IpAddress address;     // the device's address
  std::uint32_t mtu = 0;       // the interface (IP) MTU
  bool up = false;             // IFF_UP and IFF_RUNNING
  bool loopback = false;
};
// ENODEV: no such interface, or it has no IPv4 address; EADDRNOTAVAIL: no
// interface owns the address; EINVAL: neither an IPv4 address nor a name.
Result<InterfaceInfo> find_interface(std::string_view address_or_name);

// The shared state every object of one device holds on to.
struct DeviceCore;

class SoftDevice final : public Device {
 public:
  ~SoftDevice() override;

  // ---- verbs::Device
  std::string_view name() const override;
  std::string_view backend() const override { return "soft"; }
  std::int64_t ack_hold_ns() const override;
  Result<DeviceAttr> query_device() const override;
  Result<PortAttr> query_port(std::uint8_t port_num) const override;
  Result<std::vector<Gid>> query_gid_table(std::uint8_t port_num) const override;
  // The interface of that GID's address is up and running (on veth: its peer's end too).
  bool gid_link_up(std::uint8_t port_num, std::uint8_t gid_index) const override;
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t cqe, std::uint64_t cq_context) override;
  std::optional<AsyncEvent> get_async_event() override;
  // -1: the soft device raises its events on the engine thread itself,
  // which polls get_async_event(); there is nothing to wait on.
  int async_fd() const override { return -1; }

  // ---- the soft device's own
  const InterfaceInfo& interface_info() const;
  const wire::IpAddress& address() const;
  Gid gid() const;  // GID index 0
  // One duty cycle (see the file comment). `next_deadline_ns` (may be null)
  // receives the earliest QP deadline, or kNoDeadline. Returns work done.
  int do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns = nullptr);
  // Receive fds (unicast + groups) for the engine's parker.
  std::vector<int> receive_fds() const;

  // FOR TESTS ONLY: the fault injector between this device's QPs and its
  // sockets (fault.h, fault_net.h), installed by the first call; a default
  // FaultPlan turns it off again. No configuration reaches it (src/native/testing/faults.ts is
  // its JS door). Engine thread.
  void inject_faults(const FaultPlan& plan);
  const FaultCounters& fault_counters() const;

  const NetReport& net_report() const;
  const NetCounters& net_counters() const;
  const IngressCounters& ingress_counters() const;
  const wire::RxCounters& wire_counters() const;
  IcrcPolicy icrc_policy() const;
  void set_icrc_policy(IcrcPolicy p);
  // The QP with this number, if it is alive (for per-QP counters).
  const SoftQp* find_qp(std::uint32_t qpn) const;
  std::vector<std::uint32_t> qp_numbers() const;
  std::uint32_t group_refs(const wire::IpAddress& group) const;

  std::shared_ptr<DeviceCore> core() const { return core_; }

 private:
  friend Result<std::unique_ptr<SoftDevice>> open_soft_device(const SoftDeviceOptions& options);
  explicit SoftDevice(std::shared_ptr<DeviceCore> core) : core_(std::move(core)) {}
  std::shared_ptr<DeviceCore> core_;
};

// The SoftQp behind a QueuePair made by a soft device (for its counters);
// nullptr for any other QueuePair.
const SoftQp* as_soft_qp(const QueuePair& qp);

// ibv_open_device for the soft backend: finds the interface, opens the
// sockets (EADDRINUSE when another device owns <address>:4791).
Result<std::unique_ptr<SoftDevice>> open_soft_device(const SoftDeviceOptions& options);

}  // namespace qpgate::verbs::soft
