#include "verbs/soft/soft_device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "verbs/soft/cq_ring.h"
#include "verbs/soft/key_gen.h"
#include "verbs/soft/soft_device_driver.h"
#include "verbs/soft/soft_qp.h"
#include "verbs/soft/srq.h"
#include "verbs/soft/work_queue.h"

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
constexpr std::uint32_t kGidTableLen = 1;  // index 0: ::ffff:<address>
constexpr std::uint8_t kLocalCaAckDelay = 15;
}  // namespace limits

struct DeviceCore {
  DeviceCore(InterfaceInfo info, std::string device_name, std::unique_ptr<UdpNet> udp, IcrcPolicy policy,
             std::uint32_t first_qpn)
      : name(std::move(device_name)),
        iface(std::move(info)),
        net(std::move(udp)),
        ingress(qps, mcast, policy),
        next_qpn(first_qpn) {
    std::uint32_t host = 0;
    std::memcpy(&host, iface.address.bytes.data(), 4);
    gid = Gid::from_ipv4(ntohl(host));
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

  // Transmit first, receive last. What the last pass received left its ACKs
  // queued; an application that answered the delivered message in between
  // (a ping-pong's reply, the order service's Ack) has its SEND built here by
  // the QP's requester, and both leave in ONE sendmmsg — the reply no longer
  // pays a syscall of its own behind the ACK. The ACKs of this pass's
  // receives wait for the next pass, which runs at once: a pass that
  // received something reports work, so the engine does not park.
  int do_work(std::int64_t now_ns, std::int64_t* deadline) {
    int work = 0;
    std::int64_t earliest = kNoDeadline;
    for (auto& [qpn, qp] : qps) {
      work += qp->do_work(now_ns);
      earliest = std::min(earliest, qp->next_deadline_ns());
    }
    work += net->flush();
    const int received = net->receive([this](std::span<const std::uint8_t> roce, const RxMeta& meta) {
      ingress.receive(roce, meta);
    });
    work += received;
    if (received != 0) {
      for (auto& [qpn, qp] : qps) work += qp->end_receive_batch();
    }
    if (net->queued() != 0) earliest = now_ns;  // answers of this pass's receives: come back at once
    earliest = std::min(earliest, net->next_fault_release_ns());  // held by the fault injector (tests)
    if (deadline != nullptr) *deadline = earliest;
    return work;
  }

  std::string name;
  InterfaceInfo iface;
  Gid gid;
  Mtu active_mtu = Mtu::MTU_1024;
  AsyncEventQueue events;
  MrTable mrs;
  PdTable pds;
  McastTable mcast;
  std::unique_ptr<UdpNet> net;
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

namespace {

std::string address_text(const wire::IpAddress& a) { return ip_to_string(a); }

// ---------------------------------------------------------------- objects
struct PdState {
  PdState(std::shared_ptr<DeviceCore> c, std::uint32_t h) : core(std::move(c)), handle(h) {}
  ~PdState() { (void)core->pds.dealloc(handle); }  // its children held it: none is left
  std::shared_ptr<DeviceCore> core;
  std::uint32_t handle;
};

class SoftMr final : public MemoryRegion {
 public:
  SoftMr(std::shared_ptr<PdState> pd, const MrEntry& e) : pd_(std::move(pd)), e_(e) {}
  ~SoftMr() override { (void)pd_->core->mrs.deregister(e_.lkey); }
  std::uint64_t addr() const override { return e_.addr; }
  std::size_t length() const override { return static_cast<std::size_t>(e_.length); }
  std::uint32_t lkey() const override { return e_.lkey; }
  std::uint32_t rkey() const override { return e_.rkey; }
  AccessFlags access() const override { return e_.access; }

 private:
  std::shared_ptr<PdState> pd_;
  MrEntry e_;
};

class SoftAh final : public AddressHandle {
 public:
  SoftAh(std::shared_ptr<PdState> pd, const AhAttr& a) : pd_(std::move(pd)), attr_(a) { ++pd_->core->ah_count; }
  ~SoftAh() override { --pd_->core->ah_count; }
  const AhAttr& attr() const override { return attr_; }

 private:
  std::shared_ptr<PdState> pd_;
  AhAttr attr_;
};

class SoftCqObject final : public CompletionQueue {
 public:
  SoftCqObject(std::shared_ptr<DeviceCore> core, std::shared_ptr<SoftCompletionQueue> cq)
      : core_(std::move(core)), cq_(std::move(cq)) {
    ++core_->cq_count;
  }
  ~SoftCqObject() override { --core_->cq_count; }
  Result<std::size_t> poll(std::span<Wc> out) override { return cq_->poll(out); }
  std::uint32_t cqe() const override { return cq_->cqe(); }
  std::uint32_t handle() const override { return cq_->handle(); }
  const DeviceCore* core() const { return core_.get(); }
  const std::shared_ptr<SoftCompletionQueue>& cq() const { return cq_; }

 private:
  std::shared_ptr<DeviceCore> core_;
  std::shared_ptr<SoftCompletionQueue> cq_;
};

class SoftSrqObject final : public SharedReceiveQueue {
 public:
  SoftSrqObject(std::shared_ptr<PdState> pd, std::shared_ptr<SoftSrq> srq) : pd_(std::move(pd)), srq_(std::move(srq)) {
    ++pd_->core->srq_count;
  }
  ~SoftSrqObject() override { --pd_->core->srq_count; }
  PostRecvResult post_recv(const RecvWr& first) override { return srq_->post_recv(first); }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override { return srq_->post_recv(wrs); }
  Status modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) override { return srq_->modify(attr, mask); }
  Result<SrqAttr> query() const override { return srq_->query(); }
  std::uint32_t handle() const override { return srq_->handle(); }
  const PdState* pd() const { return pd_.get(); }
  const std::shared_ptr<SoftSrq>& srq() const { return srq_; }

 private:
  std::shared_ptr<PdState> pd_;
  std::shared_ptr<SoftSrq> srq_;
};

class SoftQpObject final : public QueuePair {
 public:
  SoftQpObject(std::shared_ptr<PdState> pd, std::shared_ptr<SoftCompletionQueue> scq,
               std::shared_ptr<SoftCompletionQueue> rcq, std::shared_ptr<SoftSrq> srq, std::unique_ptr<SoftQp> qp)
      : pd_(std::move(pd)), scq_(std::move(scq)), rcq_(std::move(rcq)), srq_(std::move(srq)), qp_(std::move(qp)) {
    pd_->core->qps.emplace(qp_->qp_num(), qp_.get());
  }
  ~SoftQpObject() override {
    // Out of the ingress's map first, then gone (its destructor detaches
    // its multicast groups through the device's membership).
    pd_->core->qps.erase(qp_->qp_num());
    qp_.reset();
  }
  std::uint32_t qp_num() const override { return qp_->qp_num(); }
  QpType qp_type() const override { return qp_->qp_type(); }
  QpState state() const override { return qp_->state(); }
  Status modify(const QpAttr& attr, QpAttrMaskFlags mask) override { return qp_->modify(attr, mask); }
  Result<QpAttr> query() const override { return qp_->query(); }
  QpInitAttr init_attr() const override { return qp_->init_attr(); }
  PostSendResult post_send(const SendWr& first) override { return qp_->post_send(first); }
  PostSendResult post_send(std::span<const SendWr> wrs) override { return qp_->post_send(wrs); }
  PostRecvResult post_recv(const RecvWr& first) override { return qp_->post_recv(first); }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override { return qp_->post_recv(wrs); }
  Status attach_mcast(const Gid& mgid) override { return qp_->attach_mcast(mgid); }
  Status detach_mcast(const Gid& mgid) override { return qp_->detach_mcast(mgid); }
  const SoftQp& soft() const { return *qp_; }

 private:
  std::shared_ptr<PdState> pd_;
  std::shared_ptr<SoftCompletionQueue> scq_;
  std::shared_ptr<SoftCompletionQueue> rcq_;
  std::shared_ptr<SoftSrq> srq_;
  std::unique_ptr<SoftQp> qp_;
};

class SoftPd final : public ProtectionDomain {
 public:
  explicit SoftPd(std::shared_ptr<PdState> state) : state_(std::move(state)) {}

  Result<std::unique_ptr<MemoryRegion>> reg_mr(void* addr, std::size_t length, AccessFlags access) override {
    Result<MrEntry> e = state_->core->mrs.register_mr(
        state_->handle, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(addr)), length, access);
    if (!e) return e.error();
    return std::unique_ptr<MemoryRegion>(std::make_unique<SoftMr>(state_, *e));
  }

  Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr& attr) override {
    DeviceCore& core = *state_->core;
    if (core.ah_count >= limits::kMaxAh) {
      return Error{ENOMEM, "create_ah: " + std::to_string(limits::kMaxAh) + " address handles exist (max_ah)"};
    }
    if (attr.port_num != 1) {
      return Error{EINVAL, "create_ah: port_num " + std::to_string(attr.port_num) + " does not exist (the soft device has port 1)"};
    }
    if (attr.sgid_index >= limits::kGidTableLen) {
      return Error{EINVAL, "create_ah: sgid_index " + std::to_string(attr.sgid_index) +
                               " is outside the GID table (length " + std::to_string(limits::kGidTableLen) + ")"};
    }
    if (!attr.dgid.is_ipv4_mapped() || attr.dgid.to_ipv4().value_or(0) == 0) {
      return Error{EAFNOSUPPORT, "create_ah: dgid " + attr.dgid.to_string() +
                                     " is not an IPv4-mapped GID (::ffff:a.b.c.d); the soft device speaks RoCEv2 over IPv4"};
    }
    return std::unique_ptr<AddressHandle>(std::make_unique<SoftAh>(state_, attr));
  }

  Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqAttr& attr) override {
    DeviceCore& core = *state_->core;
    if (core.srq_count >= limits::kMaxSrq) {
      return Error{ENOMEM, "create_srq: " + std::to_string(limits::kMaxSrq) + " SRQs exist (max_srq)"};
    }
    if (Status s = SoftSrq::check_attr(attr); !s) return s.error();
    auto srq = std::make_shared<SoftSrq>(attr, core.next_srq_handle++, 0, &core.events);
    return std::unique_ptr<SharedReceiveQueue>(std::make_unique<SoftSrqObject>(state_, std::move(srq)));
  }

  Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& init) override {
    DeviceCore& core = *state_->core;
    if (core.qps.size() >= limits::kMaxQp) {
      return Error{ENOMEM, "create_qp: " + std::to_string(limits::kMaxQp) + " QPs exist (max_qp)"};
    }
    auto* scq = dynamic_cast<SoftCqObject*>(init.send_cq);
    auto* rcq = dynamic_cast<SoftCqObject*>(init.recv_cq);
    if (scq == nullptr || rcq == nullptr) {
      return Error{EINVAL, std::string("create_qp: ") + (scq == nullptr ? "send_cq" : "recv_cq") +
                               " is missing or not a CQ of a soft device"};
    }
    if (scq->core() != &core || rcq->core() != &core) {
      return Error{EINVAL, "create_qp: the CQs belong to another device than the PD"};
    }
    SoftSrqObject* srq = nullptr;
    if (init.srq != nullptr) {
      srq = dynamic_cast<SoftSrqObject*>(init.srq);
      if (srq == nullptr || srq->pd() != state_.get()) {
        return Error{EINVAL, "create_qp: the SRQ is not one of this PD"};
      }
    }
    Result<std::uint32_t> qpn = core.alloc_qpn();
    if (!qpn) return qpn.error();
    ModifyLimits modify_limits = SoftQpContext::default_limits();
    modify_limits.max_mtu = core.active_mtu;
    modify_limits.gid_tbl_len = limits::kGidTableLen;
    SoftQpContext ctx{
        .tx = *core.net,
        .mrs = core.mrs,
        .events = core.events,
        .mcast = core.mcast,
        .membership = *core.net,
        .local_ip = core.iface.address,
        .local_gid = core.gid,
        .pd = state_->handle,
        .send_cq = scq->cq().get(),
        .recv_cq = rcq->cq().get(),
        .srq = srq != nullptr ? srq->srq().get() : nullptr,
        .qpn = *qpn,
        .init = init,
        .limits = modify_limits,
        .active_mtu = core.active_mtu,
        .pkey = 0xffff,
    };
    if (Status s = SoftQp::check_init(ctx); !s) return s.error();
    auto qp = std::make_unique<SoftQp>(ctx);
    return std::unique_ptr<QueuePair>(std::make_unique<SoftQpObject>(
        state_, scq->cq(), rcq->cq(), srq != nullptr ? srq->srq() : nullptr, std::move(qp)));
  }

 private:
  std::shared_ptr<PdState> state_;
};

std::uint32_t read_mtu(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &req);
  close(fd);
  return rc == 0 ? static_cast<std::uint32_t>(req.ifr_mtu) : 0;
}

bool read_up(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq req{};
  std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFFLAGS, &req);
  close(fd);
  return rc == 0 && (req.ifr_flags & IFF_UP) != 0 && (req.ifr_flags & IFF_RUNNING) != 0;
}

}  // namespace

// ---------------------------------------------------------------- interface lookup
Result<InterfaceInfo> find_interface(std::string_view address_or_name) {
  const std::string wanted(address_or_name);
  in_addr parsed{};
  const bool is_address = inet_pton(AF_INET, wanted.c_str(), &parsed) == 1;
  if (!is_address && (wanted.empty() || wanted.size() >= IFNAMSIZ)) {
    return Error{EINVAL, "soft device: '" + wanted + "' is neither an IPv4 address nor an interface name"};
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error{errno, std::string("getifaddrs: ") + std::strerror(errno)};
  std::optional<InterfaceInfo> exact;
  std::optional<InterfaceInfo> in_loopback_subnet;
  bool name_seen = false;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_name == nullptr) continue;
    if (!is_address && wanted == ifa->ifa_name) name_seen = true;
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
    InterfaceInfo info;
    info.name = ifa->ifa_name;
    info.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    info.up = (ifa->ifa_flags & IFF_UP) != 0 && (ifa->ifa_flags & IFF_RUNNING) != 0;
    if (!is_address) {
      if (wanted != ifa->ifa_name || exact) continue;
      info.address = ipv4_from_be(sin->sin_addr.s_addr);
      exact = info;
      continue;
    }
    if (sin->sin_addr.s_addr == parsed.s_addr) {
      info.address = ipv4_from_be(parsed.s_addr);
      exact = info;
      break;
    }
    // A loopback interface answers for its whole subnet (127.0.0.0/8 is local).
    if (info.loopback && ifa->ifa_netmask != nullptr && !in_loopback_subnet) {
      const auto* mask = reinterpret_cast<const sockaddr_in*>(ifa->ifa_netmask);
      if ((sin->sin_addr.s_addr & mask->sin_addr.s_addr) == (parsed.s_addr & mask->sin_addr.s_addr)) {
        info.address = ipv4_from_be(parsed.s_addr);
        in_loopback_subnet = info;
      }
    }
  }
  freeifaddrs(list);
  std::optional<InterfaceInfo> found = exact ? exact : in_loopback_subnet;
  if (!found) {
    if (is_address) {
      return Error{EADDRNOTAVAIL, "soft device: no interface has the address " + wanted +
                                      " (it must be assigned to an interface, or lie in a loopback subnet)"};
    }
    return Error{ENODEV, name_seen ? "soft device: interface " + wanted + " has no IPv4 address"
                                   : "soft device: no interface named " + wanted};
  }
  found->mtu = read_mtu(found->name);
  return *found;
}

// ---------------------------------------------------------------- device
Result<std::unique_ptr<SoftDevice>> open_soft_device(const SoftDeviceOptions& options) {
  Result<InterfaceInfo> iface = find_interface(options.address_or_name);
  if (!iface) return iface.error();
  NetConfig net_config = options.net;
  net_config.address = iface->address;
  net_config.interface_name = iface->name;
  Result<std::unique_ptr<UdpNet>> net = UdpNet::open(net_config);
  if (!net) return net.error();
  std::uint32_t first_qpn = 0;
  if (!getrandom_fill(&first_qpn, sizeof first_qpn)) first_qpn = 0x11;
  std::string name = options.name.empty() ? "qpgate_soft_" + address_text(iface->address) : options.name;
  auto core = std::make_shared<DeviceCore>(*iface, std::move(name), std::move(*net), options.icrc_policy,
                                           first_qpn & kQpnMask);
  return std::unique_ptr<SoftDevice>(new SoftDevice(std::move(core)));
}

SoftDevice::~SoftDevice() = default;

std::string_view SoftDevice::name() const { return core_->name; }
const InterfaceInfo& SoftDevice::interface_info() const { return core_->iface; }
const wire::IpAddress& SoftDevice::address() const { return core_->iface.address; }
Gid SoftDevice::gid() const { return core_->gid; }

Result<DeviceAttr> SoftDevice::query_device() const {
  DeviceAttr a;
  a.fw_ver = "qpgate-soft 0.1";
  std::uint32_t be = ipv4_be(core_->iface.address);
  // A GUID from the address, as rxe derives one from the MAC (EUI-64 style).
  a.node_guid = (std::uint64_t{0x02} << 56) | (std::uint64_t{0xfffe} << 32) | ntohl(be);
  a.max_mr_size = MrTableLimits{}.max_mr_size;
  a.vendor_id = 0xffffff;  // rxe's XRC-less soft device reports this too
  a.vendor_part_id = 0;
  a.max_qp = limits::kMaxQp;
  a.max_qp_wr = kMaxQpWr;
  a.max_sge = kMaxSge;
  a.max_cq = limits::kMaxCq;
  a.max_cqe = limits::kMaxCqe;
  a.max_mr = limits::kMaxMr;
  a.max_pd = limits::kMaxPd;
  a.max_qp_rd_atom = limits::kMaxRdAtom;
  a.max_qp_init_rd_atom = limits::kMaxRdAtom;
  a.max_srq = limits::kMaxSrq;
  a.max_srq_wr = limits::kMaxSrqWr;
  a.max_srq_sge = kMaxSge;
  a.max_mcast_grp = kMaxMcastGroups;
  a.max_mcast_qp_attach = kMaxMcastQpAttach;
  a.max_ah = limits::kMaxAh;
  a.max_inline_data = kMaxInlineData;
  a.max_pkeys = 1;
  a.local_ca_ack_delay = limits::kLocalCaAckDelay;
  a.phys_port_cnt = 1;
  return a;
}

Result<PortAttr> SoftDevice::query_port(std::uint8_t port_num) const {
  if (port_num != 1) {
    return Error{EINVAL, "query_port: port " + std::to_string(port_num) + " does not exist (the soft device has port 1)"};
  }
  PortAttr p;
  p.state = read_up(core_->iface.name) ? PortState::ACTIVE : PortState::DOWN;
  p.max_mtu = Mtu::MTU_4096;
  p.active_mtu = core_->active_mtu;
  p.gid_tbl_len = limits::kGidTableLen;
  p.max_msg_sz = kMaxMsgSize;
  const IngressCounters& c = core_->ingress.counters();
  p.bad_pkey_cntr = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.bad_pkey.get(), 0xffff));
  p.qkey_viol_cntr = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.bad_qkey.get(), 0xffff));
  p.pkey_tbl_len = 1;
  return p;
}

Result<std::vector<Gid>> SoftDevice::query_gid_table(std::uint8_t port_num) const {
  if (port_num != 1) {
    return Error{EINVAL, "query_gid_table: port " + std::to_string(port_num) + " does not exist (the soft device has port 1)"};
  }
  return std::vector<Gid>{core_->gid};
}

Result<std::unique_ptr<ProtectionDomain>> SoftDevice::alloc_pd() {
  Result<std::uint32_t> h = core_->pds.alloc();
  if (!h) return h.error();
  return std::unique_ptr<ProtectionDomain>(std::make_unique<SoftPd>(std::make_shared<PdState>(core_, *h)));
}

Result<std::unique_ptr<CompletionQueue>> SoftDevice::create_cq(std::uint32_t cqe, std::uint64_t cq_context) {
  if (cqe == 0 || cqe > limits::kMaxCqe) {
    return Error{EINVAL, "create_cq: cqe " + std::to_string(cqe) + " is out of range 1.." + std::to_string(limits::kMaxCqe)};
  }
  if (core_->cq_count >= limits::kMaxCq) {
    return Error{ENOMEM, "create_cq: " + std::to_string(limits::kMaxCq) + " CQs exist (max_cq)"};
  }
  auto cq = std::make_shared<SoftCompletionQueue>(cqe, core_->next_cq_handle++, cq_context, &core_->events);
  return std::unique_ptr<CompletionQueue>(std::make_unique<SoftCqObject>(core_, std::move(cq)));
}

std::optional<AsyncEvent> SoftDevice::get_async_event() { return core_->events.pop(); }

int SoftDevice::do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns) {
  return core_->do_work(now_ns, next_deadline_ns);
}

std::vector<int> SoftDevice::receive_fds() const { return core_->net->receive_fds(); }
void SoftDevice::inject_faults(const FaultPlan& plan) { core_->net->set_faults(plan); }
const FaultCounters& SoftDevice::fault_counters() const { return core_->net->fault_counters(); }
const NetReport& SoftDevice::net_report() const { return core_->net->report(); }
const NetCounters& SoftDevice::net_counters() const { return core_->net->counters(); }
const IngressCounters& SoftDevice::ingress_counters() const { return core_->ingress.counters(); }
const wire::RxCounters& SoftDevice::wire_counters() const { return core_->ingress.wire_counters(); }
IcrcPolicy SoftDevice::icrc_policy() const { return core_->ingress.policy(); }
void SoftDevice::set_icrc_policy(IcrcPolicy p) { core_->ingress.set_policy(p); }
std::uint32_t SoftDevice::group_refs(const wire::IpAddress& group) const { return core_->net->group_refs(group); }

const SoftQp* SoftDevice::find_qp(std::uint32_t qpn) const {
  auto it = core_->qps.find(qpn);
  return it == core_->qps.end() ? nullptr : it->second;
}

std::vector<std::uint32_t> SoftDevice::qp_numbers() const {
  std::vector<std::uint32_t> out;
  out.reserve(core_->qps.size());
  for (const auto& [qpn, qp] : core_->qps) out.push_back(qpn);
  std::sort(out.begin(), out.end());
  return out;
}

const SoftQp* as_soft_qp(const QueuePair& qp) {
  const auto* o = dynamic_cast<const SoftQpObject*>(&qp);
  return o == nullptr ? nullptr : &o->soft();
}

// ---------------------------------------------------------------- driver
SoftDeviceDriver::~SoftDeviceDriver() {
  for (DeviceCore* core : cores_) {
    core->driver = nullptr;
    core->net->set_fd_observer(nullptr);
  }
}

void SoftDeviceDriver::set_registry(PollRegistry* registry) {
  registry_ = registry;
  if (registry_ == nullptr) return;
  for (DeviceCore* core : cores_) {
    for (int fd : core->net->receive_fds()) registry_->add_fd(fd);
  }
}

Status SoftDeviceDriver::attach(SoftDevice& device) {
  DeviceCore* core = device.core().get();
  if (core->driver != nullptr) {
    return Error{EBUSY, "soft device " + core->name + " is already driven by an engine"};
  }
  core->driver = this;
  core->net->set_fd_observer(this);
  cores_.push_back(core);
  if (registry_ != nullptr) {
    for (int fd : core->net->receive_fds()) registry_->add_fd(fd);
  }
  return {};
}

void SoftDeviceDriver::detach(DeviceCore* core) {
  auto it = std::find(cores_.begin(), cores_.end(), core);
  if (it == cores_.end()) return;
  if (registry_ != nullptr) {
    for (int fd : core->net->receive_fds()) registry_->remove_fd(fd);
  }
  core->net->set_fd_observer(nullptr);
  core->driver = nullptr;
  cores_.erase(it);
}

void SoftDeviceDriver::fd_added(int fd) {
  if (registry_ != nullptr) registry_->add_fd(fd);
}

void SoftDeviceDriver::fd_removed(int fd) {
  if (registry_ != nullptr) registry_->remove_fd(fd);
}

int SoftDeviceDriver::do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns) {
  int work = 0;
  std::int64_t earliest = kNoDeadline;
  for (DeviceCore* core : cores_) {
    std::int64_t deadline = kNoDeadline;
    work += core->do_work(now_ns, &deadline);
    earliest = std::min(earliest, deadline);
  }
  if (earliest != kNoDeadline) {
    last_deadline_ns_ = std::max<std::int64_t>(earliest, 1);
    if (registry_ != nullptr) registry_->arm_deadline(last_deadline_ns_);
  }
  if (next_deadline_ns != nullptr) *next_deadline_ns = earliest;
  return work;
}

}  // namespace qpgate::verbs::soft
