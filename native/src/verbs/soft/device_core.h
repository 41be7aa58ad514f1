// The shared state of one soft device (soft_device.h), held by every object
// made from it: tables, sockets, ingress and the duty cycle. Private to the
// soft device's files (soft_device.cc, soft_objects.cc, soft_device_driver.cc).
#pragma once

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "verbs/soft/fault_net.h"
#include "verbs/soft/path_nets.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_device_driver.h"

namespace qpgate::verbs::soft {

// rxe_param.h values where rxe has one; the soft device's own otherwise.
namespace limits {
constexpr std::uint32_t kMaxQp = 0x10000;
constexpr std::uint32_t kMaxCq = 0x4000;
constexpr std::uint32_t kMaxCqe = (1u << 15) - 1;
constexpr std::uint32_t kMaxPd = 0x7ff00;
constexpr std::uint32_t kMaxMr = 0x40000;
constexpr std::uint32_t kMaxSrq = 0x40000;
constexpr std::uint32_t kMaxSrqWr = 0x4000;
constexpr std::uint32_t kMaxAh = 0x7ff0;
constexpr std::uint32_t kMaxRdAtom = 128;
constexpr std::uint8_t kLocalCaAckDelay = 15;
}  // namespace limits

// The QPs' PacketTx: forwards to whichever PacketIo the device has
// installed, so a fault injector installed after a QP was made is in its
// path too.
class TxPort final : public PacketTx {
 public:
  explicit TxPort(PacketIo* const& io) : io_(io) {}
  bool transmit(const TxPacket& packet) override { return io_->transmit(packet); }

 private:
  PacketIo* const& io_;
};

struct DeviceCore {
  // `alt_udp` (may be null): the socket of the alternate address (path_nets.h).
  DeviceCore(InterfaceInfo info, std::string device_name, std::unique_ptr<UdpNet> udp, std::unique_ptr<UdpNet> alt_udp,
             IcrcPolicy policy, std::uint32_t first_qpn)
      : name(std::move(device_name)),
        iface(std::move(info)),
        net(std::move(udp)),
        alt_net(std::move(alt_udp)),
        paths(alt_net ? std::make_unique<PathNets>(*net, *alt_net) : nullptr),
        io(paths ? static_cast<PacketIo*>(paths.get()) : net.get()),
        ingress(qps, mcast, policy),
        next_qpn(first_qpn) {
    gid = gid_of(iface.address);
    gid_addresses.push_back(iface.address);
    gid_interfaces.push_back(iface.name);
    if (alt_net) {
      gid_addresses.push_back(alt_net->address());
      gid_interfaces.push_back(alt_net->interface_name());
    }
    if (!mtu_for_ip_mtu(iface.mtu, &active_mtu)) active_mtu = Mtu::MTU_256;
  }
  ~DeviceCore() {
    if (driver != nullptr) driver->detach(this);
  }
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  Result<std::uint32_t> alloc_qpn() {
    for (std::uint32_t tries = 0; tries < kQpnMask; ++tries) {
      const std::uint32_t q = next_qpn++ & kQpnMask;
      if (q <= 1 || q == kMulticastQpn || qps.count(q) != 0) continue;
      return q;
    }
    return Error{ENOMEM, "create_qp: no free QP number"};
  }

  static Gid gid_of(const wire::IpAddress& address) {
    std::uint32_t host = 0;
    std::memcpy(&host, address.bytes.data(), 4);
    return Gid::from_ipv4(ntohl(host));
  }
  // The receive sockets of both addresses, and who is told of their changes.
  std::vector<int> receive_fds() const {
    std::vector<int> fds = net->receive_fds();
    if (alt_net) {
      for (int fd : alt_net->receive_fds()) fds.push_back(fd);
    }
    return fds;
  }
  void set_fd_observer(FdObserver* observer) {
    net->set_fd_observer(observer);
    if (alt_net) alt_net->set_fd_observer(observer);
  }

  // One duty cycle (soft_device.h); see soft_device.cc.
  int do_work(std::int64_t now_ns, std::int64_t* deadline);
  // Receive batches until one is short (the sockets are drained) or a bound.
  int receive_backlog();
  // Puts the fault injector (fault_net.h) between the QPs and the sockets,
  // on the first call; later calls change its plan.
  void inject_faults(const FaultPlan& plan);

  std::string name;
  InterfaceInfo iface;
  Gid gid;
  Mtu active_mtu = Mtu::MTU_1024;
  AsyncEventQueue events;
  MrTable mrs;
  PdTable pds;
  McastTable mcast;
  std::unique_ptr<UdpNet> net;
  std::unique_ptr<UdpNet> alt_net;   // the alternate address's sockets, if configured
  std::unique_ptr<PathNets> paths;   // net and alt_net as one PacketIo, when alt_net is
  std::vector<wire::IpAddress> gid_addresses;  // the GID table as addresses: [0] address, [1] alternate
  std::vector<std::string> gid_interfaces;     // the interface of each of those addresses
  std::unique_ptr<FaultNet> faults;  // tests only: made by inject_faults
  PacketIo* io;                      // what the duty cycle and the QPs use: net (or paths), or faults around it
  TxPort tx{io};                     // the QPs' PacketTx
  Ingress::QpMap qps;
  Ingress ingress;
  std::uint32_t next_qpn;
  std::uint32_t next_cq_handle = 1;
  std::uint32_t next_srq_handle = 1;
  std::uint32_t cq_count = 0;
  std::uint32_t srq_count = 0;
  std::uint32_t ah_count = 0;
  SoftDeviceDriver* driver = nullptr;
};

// Whether the interface is IFF_UP and IFF_RUNNING now (query_port's state).
bool interface_up(const std::string& ifname);

}  // namespace qpgate::verbs::soft
