// The soft device (soft_device.h): opening it, its queries and its duty cycle.
#include "verbs/soft/soft_device.h"

#include <arpa/inet.h>

#include <algorithm>

#include "verbs/soft/device_core.h"
#include "verbs/soft/key_gen.h"
#include "verbs/soft/resp.h"  // kAckHoldNs
#include "verbs/soft/soft_qp.h"

namespace qpgate::verbs::soft {

namespace {

// Receive rounds per pass at most: a socket that filled a whole batch may
// hold more (a backlog left while the thread was not running), and its ACKs
// must be read before the timers are judged. The bound keeps one pass short
// against a peer that floods (16 × 32 datagrams by default).
constexpr int kMaxReceiveRounds = 16;

}  // namespace

// Transmit first, receive, timers last.
//
// Transmit first: what the last pass received left its ACKs queued; an
// application that answered the delivered message in between (a
// ping-pong's reply, the order service's Ack) has its SEND built here by the
// QP's requester, and both leave in ONE sendmmsg — the reply no longer pays
// a syscall of its own behind the ACK. The ACKs of this pass's receives wait
// for the next pass, which runs at once: a pass that received something
// reports work, so the engine does not park.
//
// Timers last, as rxe's completer takes the responses queued for it before
// it acts on a timeout: when this thread did not run for longer than a
// QP's ACK timeout (parked past it, or descheduled on a busy host), the ACK
// that did arrive is in the socket, not lost. Judged before the receive, the
// delay would count as a retry and resend the whole window; judged after,
// it is progress.
int DeviceCore::do_work(std::int64_t now_ns, std::int64_t* deadline) {
  int work = 0;
  for (auto& [qpn, qp] : qps) work += qp->send_work(now_ns);
  work += io->flush();
  const int received = receive_backlog();
  work += received;
  if (received != 0) {
    for (auto& [qpn, qp] : qps) work += qp->end_receive_batch();
  }
  std::int64_t earliest = kNoDeadline;
  for (auto& [qpn, qp] : qps) {
    work += qp->on_timers(now_ns);
    earliest = std::min(earliest, qp->next_deadline_ns());
  }
  if (io->queued() != 0) earliest = now_ns;  // answers and resends of this pass: come back at once
  earliest = std::min(earliest, io->next_release_ns());  // packets the fault injector holds (tests)
  if (deadline != nullptr) *deadline = earliest;
  return work;
}

int DeviceCore::receive_backlog() {
  const auto full = static_cast<int>(net->rx_batch());
  int received = 0;
  for (int round = 0; round < kMaxReceiveRounds; ++round) {
    const int n = io->receive([this](std::span<std::uint8_t> roce, const RxMeta& meta) { ingress.receive(roce, meta); });
    received += n;
    if (n < full) break;
  }
  return received;
}

void DeviceCore::inject_faults(const FaultPlan& plan) {
  if (!faults) {
    faults = std::make_unique<FaultNet>(paths ? static_cast<PacketIo&>(*paths) : *net);
    io = faults.get();
  }
  faults->set_plan(plan);
}

namespace {

// The second address's sockets (path_nets.h), or null when none is asked for.
Result<std::unique_ptr<UdpNet>> open_alternate(const SoftDeviceOptions& options, const InterfaceInfo& primary) {
  if (options.alternate_address.empty()) return std::unique_ptr<UdpNet>();
  if (options.net.receive_mode == ReceiveMode::kAfPacket) {
    return Error{EINVAL, "soft device: an alternate address needs receive mode plain-udp (af-packet reads one interface)"};
  }
  Result<InterfaceInfo> alt = find_interface(options.alternate_address);
  if (!alt) return Error{alt.error().code, "soft device alternate address: " + alt.error().message};
  if (alt->address == primary.address) {
    return Error{EINVAL, "soft device: the alternate address " + ip_to_string(alt->address) +
                             " is the device's own address"};
  }
  NetConfig config = options.net;
  config.address = alt->address;
  config.interface_name = alt->name;
  config.probe_ipv4_id = false;  // the primary's probe speaks for the host's kernel
  Result<std::unique_ptr<UdpNet>> net = UdpNet::open(config);
  if (!net) return Error{net.error().code, "soft device alternate address: " + net.error().message};
  return std::move(*net);
}

}  // namespace

Result<std::unique_ptr<SoftDevice>> open_soft_device(const SoftDeviceOptions& options) {
  Result<InterfaceInfo> iface = find_interface(options.address_or_name);
  if (!iface) return iface.error();
  NetConfig net_config = options.net;
  net_config.address = iface->address;
  net_config.interface_name = iface->name;
  Result<std::unique_ptr<UdpNet>> net = UdpNet::open(net_config);
  if (!net) return net.error();
  Result<std::unique_ptr<UdpNet>> alt_net = open_alternate(options, *iface);
  if (!alt_net) return alt_net.error();
  std::uint32_t first_qpn = 0;
  if (!getrandom_fill(&first_qpn, sizeof first_qpn)) first_qpn = 0x11;
  std::string name = options.name.empty() ? "qpgate_soft_" + ip_to_string(iface->address) : options.name;
  auto core = std::make_shared<DeviceCore>(*iface, std::move(name), std::move(*net), std::move(*alt_net),
                                           options.icrc_policy,
                                           first_qpn & kQpnMask);
  return std::unique_ptr<SoftDevice>(new SoftDevice(std::move(core)));
}

SoftDevice::~SoftDevice() = default;

std::string_view SoftDevice::name() const { return core_->name; }
std::int64_t SoftDevice::ack_hold_ns() const { return kAckHoldNs; }
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
  a.auto_path_mig = true;  // soft_apm.cc
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
  p.state = interface_up(core_->iface.name) ? PortState::ACTIVE : PortState::DOWN;
  p.max_mtu = Mtu::MTU_4096;
  p.active_mtu = core_->active_mtu;
  p.gid_tbl_len = static_cast<std::uint32_t>(core_->gid_addresses.size());
  p.max_msg_sz = kMaxMsgSize;
  const IngressCounters& c = core_->ingress.counters();
  p.bad_pkey_cntr = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.bad_pkey.get(), 0xffff));
  p.qkey_viol_cntr = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.bad_qkey.get(), 0xffff));
  p.pkey_tbl_len = 1;
  return p;
}

bool SoftDevice::gid_link_up(std::uint8_t port_num, std::uint8_t gid_index) const {
  return port_num == 1 && gid_index < core_->gid_interfaces.size() && interface_up(core_->gid_interfaces[gid_index]);
}

Result<std::vector<Gid>> SoftDevice::query_gid_table(std::uint8_t port_num) const {
  if (port_num != 1) {
    return Error{EINVAL, "query_gid_table: port " + std::to_string(port_num) + " does not exist (the soft device has port 1)"};
  }
  std::vector<Gid> gids;
  for (const wire::IpAddress& a : core_->gid_addresses) gids.push_back(DeviceCore::gid_of(a));
  return gids;
}

std::optional<AsyncEvent> SoftDevice::get_async_event() { return core_->events.pop(); }

int SoftDevice::do_work(std::int64_t now_ns, std::int64_t* next_deadline_ns) {
  return core_->do_work(now_ns, next_deadline_ns);
}

std::vector<int> SoftDevice::receive_fds() const { return core_->receive_fds(); }
void SoftDevice::inject_faults(const FaultPlan& plan) { core_->inject_faults(plan); }

const FaultCounters& SoftDevice::fault_counters() const {
  static const FaultCounters kNone;  // no injector: nothing was injected
  return core_->faults ? core_->faults->counters() : kNone;
}

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

}  // namespace qpgate::verbs::soft
