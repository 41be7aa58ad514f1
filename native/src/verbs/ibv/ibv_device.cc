// The ibv device: open by name, the port's GID table and the GID choice, the
// bound interface, device and port queries, async events.
#include "verbs/ibv/ibv_device.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

int errno_of(int rc) {
  if (rc > 0) return rc;
  if (rc < -1) return -rc;
  return errno != 0 ? errno : EIO;
}

Error call_error(int code, const std::string& what) {
  return Error{code, what + " failed: " + std::strerror(code) + " (" + std::string(errno_name(code)) + ")"};
}

DeviceShared::~DeviceShared() {
  if (channel != nullptr) ibv_destroy_comp_channel(channel);  // after the CQs: each holds this
  if (ctx != nullptr) ibv_close_device(ctx);
}

namespace {

// rxe's vendor id (the kernel's rxe_param.h RXE_VENDOR_ID); earlier kernels gave 0.
constexpr std::uint32_t kRxeVendorId = 0xFFFFFF;

// A device the kernel runs in software (rxe, siw): it has no bus device in
// sysfs. rxe reads QP retry_cnt 7 as "retry forever" (rxe_comp.c), and what
// siw does with it is not promised either.
bool software_device(const DeviceShared& d) {
  std::error_code ec;
  return d.device_attr.vendor_id == kRxeVendorId ||
         !std::filesystem::exists("/sys/class/infiniband/" + d.name + "/device", ec);
}

// ---------------------------------------------------------------- the bound interface
struct Interface {
  std::string name;
  unsigned ifindex = 0;
  std::vector<std::uint32_t> ipv4;  // host order, in getifaddrs order
};

// `spec` is an interface name or one of its IPv4 addresses (which then
// comes first in ipv4).
Result<Interface> find_interface(const std::string& spec) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return call_error(errno, "getifaddrs");
  const auto want_addr = ipv4_parse(spec);
  Interface out;
  for (int pass = 0; pass < 2; ++pass) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      const auto a = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
      if (pass == 0) {  // find the interface
        if ((want_addr && a == *want_addr) || (!want_addr && spec == i->ifa_name)) {
          out.name = i->ifa_name;
          break;
        }
      } else if (out.name == i->ifa_name) {  // collect its addresses
        out.ipv4.push_back(a);
      }
    }
    if (pass == 0 && out.name.empty()) break;
  }
  freeifaddrs(list);
  if (out.name.empty()) {
    return Error{ENODEV, want_addr ? "no interface has the IPv4 address " + spec
                                   : "interface " + spec + " does not exist or has no IPv4 address"};
  }
  if (want_addr) {  // the given address is preferred
    std::stable_partition(out.ipv4.begin(), out.ipv4.end(), [&](std::uint32_t a) { return a == *want_addr; });
  }
  out.ifindex = if_nametoindex(out.name.c_str());
  return out;
}

// ---------------------------------------------------------------- GID table
std::string ifname_of(unsigned ifindex) {
  char buf[IF_NAMESIZE] = {};
  return (ifindex != 0 && if_indextoname(ifindex, buf) != nullptr) ? std::string(buf) : std::string();
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// sysfs: ports/<p>/gids/<i>, gid_attrs/types/<i> ("RoCE v2", "IB/RoCE v1"),
// gid_attrs/ndevs/<i>. For kernels and libraries without the GID-table query.
std::vector<GidEntry> gid_table_from_sysfs(const std::string& dev, std::uint8_t port, std::uint32_t len) {
  std::vector<GidEntry> out;
  const std::string base = "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/";
  for (std::uint32_t i = 0; i < len; ++i) {
    const std::string text = read_line(base + "gids/" + std::to_string(i));
    if (text.empty()) continue;
    std::string hex;
    for (char c : text) {
      if (c != ':') hex += c;
    }
    if (hex.size() != 32) continue;
    GidEntry e;
    e.index = i;
    for (std::size_t b = 0; b < 16; ++b) e.gid.raw[b] = static_cast<std::uint8_t>(std::stoul(hex.substr(b * 2, 2), nullptr, 16));
    if (e.gid.is_zero()) continue;
    const std::string type = read_line(base + "gid_attrs/types/" + std::to_string(i));
    e.type = type == "RoCE v2" ? GidType::ROCE_V2 : (type.find("RoCE v1") != std::string::npos ? GidType::ROCE_V1 : GidType::IB);
    e.netdev = read_line(base + "gid_attrs/ndevs/" + std::to_string(i));
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<GidEntry>> read_gid_table(ibv_context* ctx, const std::string& dev, std::uint8_t port,
                                             std::uint32_t gid_tbl_len, std::uint8_t port_cnt) {
  std::vector<ibv_gid_entry> raw(static_cast<std::size_t>(gid_tbl_len) * std::max<std::uint8_t>(port_cnt, 1));
  errno = 0;
  const ssize_t n = ibv_query_gid_table(ctx, raw.data(), raw.size(), 0);
  if (n < 0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS || n == -EOPNOTSUPP) return gid_table_from_sysfs(dev, port, gid_tbl_len);
    return call_error(errno_of(static_cast<int>(n)), "ibv_query_gid_table on " + dev);
  }
  std::vector<GidEntry> out;
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& r = raw[static_cast<std::size_t>(i)];
    if (r.port_num != port) continue;
    GidEntry e;
    e.index = r.gid_index;
    e.gid = from_ibv_gid(r.gid);
    e.type = r.gid_type == IBV_GID_TYPE_ROCE_V2 ? GidType::ROCE_V2
             : r.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::ROCE_V1
                                                  : GidType::IB;
    e.netdev = ifname_of(r.ndev_ifindex);
    if (!e.gid.is_zero()) out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return out;
}

DeviceAttr to_device_attr(const ibv_device_attr& a) {
  DeviceAttr d;
  d.fw_ver = a.fw_ver;
  d.node_guid = a.node_guid;
  d.max_mr_size = a.max_mr_size;
  d.vendor_id = a.vendor_id;
  d.vendor_part_id = a.vendor_part_id;
  d.max_qp = static_cast<std::uint32_t>(a.max_qp);
  d.max_qp_wr = static_cast<std::uint32_t>(a.max_qp_wr);
  d.max_sge = static_cast<std::uint32_t>(a.max_sge);
  d.max_cq = static_cast<std::uint32_t>(a.max_cq);
  d.max_cqe = static_cast<std::uint32_t>(a.max_cqe);
  d.max_mr = static_cast<std::uint32_t>(a.max_mr);
  d.max_pd = static_cast<std::uint32_t>(a.max_pd);
  d.max_qp_rd_atom = static_cast<std::uint32_t>(a.max_qp_rd_atom);
  d.max_qp_init_rd_atom = static_cast<std::uint32_t>(a.max_qp_init_rd_atom);
  d.max_srq = static_cast<std::uint32_t>(a.max_srq);
  d.max_srq_wr = static_cast<std::uint32_t>(a.max_srq_wr);
  d.auto_path_mig = false;  // whatever a.device_cap_flags says: no APM on a RoCE port (open_ibv_device)
  d.max_srq_sge = static_cast<std::uint32_t>(a.max_srq_sge);
  d.max_mcast_grp = static_cast<std::uint32_t>(a.max_mcast_grp);
  d.max_mcast_qp_attach = static_cast<std::uint32_t>(a.max_mcast_qp_attach);
  d.max_ah = static_cast<std::uint32_t>(a.max_ah);
  d.max_inline_data = 0;  // not reported by ibv_query_device; see QueuePair::init_attr().cap
  d.max_pkeys = a.max_pkeys;
  d.local_ca_ack_delay = a.local_ca_ack_delay;
  d.phys_port_cnt = a.phys_port_cnt;
  return d;
}

PortAttr to_port_attr(const ibv_port_attr& a) {
  PortAttr p;
  p.state = static_cast<PortState>(a.state);
  p.max_mtu = static_cast<Mtu>(a.max_mtu);
  p.active_mtu = static_cast<Mtu>(a.active_mtu);
  p.gid_tbl_len = static_cast<std::uint32_t>(a.gid_tbl_len);
  p.max_msg_sz = a.max_msg_sz;
  p.bad_pkey_cntr = a.bad_pkey_cntr;
  p.qkey_viol_cntr = a.qkey_viol_cntr;
  p.pkey_tbl_len = a.pkey_tbl_len;
  return p;
}

// ---------------------------------------------------------------- the device
class IbvDeviceImpl final : public IbvDevice {
 public:
  explicit IbvDeviceImpl(std::shared_ptr<DeviceShared> d) : d_(std::move(d)), software_(software_device(*d_)) {}

  std::string_view name() const override { return d_->name; }
  std::string_view backend() const override { return "ibv"; }
  // A software device may retry for ever at 7 (software_device).
  std::uint8_t max_retry_cnt() const override { return software_ ? 6 : 7; }
  std::uint32_t index() const override {
    const int i = ibv_get_device_index(d_->ctx->device);
    return i < 0 ? 0 : static_cast<std::uint32_t>(i);
  }

  Result<DeviceAttr> query_device() const override {
    ibv_device_attr a{};
    if (int rc = ibv_query_device(d_->ctx, &a); rc != 0) return call_error(errno_of(rc), "ibv_query_device on " + d_->name);
    return to_device_attr(a);
  }

  Result<PortAttr> query_port(std::uint8_t port_num) const override {
    if (port_num < 1 || port_num > d_->device_attr.phys_port_cnt) {
      return Error{EINVAL, "query_port: port " + std::to_string(port_num) + " is out of range 1.." +
                               std::to_string(d_->device_attr.phys_port_cnt) + " on " + d_->name};
    }
    ibv_port_attr a{};
    if (int rc = ibv_query_port(d_->ctx, port_num, &a); rc != 0) {
      return call_error(errno_of(rc), "ibv_query_port " + std::to_string(port_num) + " on " + d_->name);
    }
    return to_port_attr(a);
  }

  Result<std::vector<Gid>> query_gid_table(std::uint8_t port_num) const override {
    auto port = query_port(port_num);
    if (!port) return port.error();
    auto entries = read_gid_table(d_->ctx, d_->name, port_num, port->gid_tbl_len, d_->device_attr.phys_port_cnt);
    if (!entries) return entries.error();
    std::vector<Gid> out(port->gid_tbl_len);
    for (const auto& e : *entries) {
      if (e.index < out.size()) out[e.index] = e.gid;
    }
    return out;
  }

  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override { return make_pd(d_); }

  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t cqe, std::uint64_t cq_context) override {
    auto cq = make_cq(d_, cqe, cq_context);
    if (!cq) return cq.error();
    return std::unique_ptr<CompletionQueue>(std::move(*cq));
  }
  Result<std::unique_ptr<IbvCompletionQueue>> create_ibv_cq(std::uint32_t cqe, std::uint64_t cq_context) override {
    return make_cq(d_, cqe, cq_context);
  }

  std::optional<AsyncEvent> get_async_event() override {
    ibv_async_event ev{};
    if (ibv_get_async_event(d_->ctx, &ev) != 0) return std::nullopt;  // EAGAIN: none pending (non-blocking fd)
    AsyncEvent out;
    out.event_type = static_cast<EventType>(ev.event_type);
    out.element = event_element_of(out.event_type);
    switch (out.element) {
      case EventElement::QP:
        out.element_id = ev.element.qp->qp_num;
        out.context = static_cast<EventTarget*>(ev.element.qp->qp_context)->user_context;
        break;
      case EventElement::CQ: {
        auto* t = static_cast<EventTarget*>(ev.element.cq->cq_context);
        out.element_id = ev.element.cq->handle;
        out.context = t->user_context;
        if (out.event_type == EventType::CQ_ERR) t->cq_error = true;
        break;
      }
      case EventElement::SRQ:
        out.element_id = ev.element.srq->handle;
        out.context = static_cast<EventTarget*>(ev.element.srq->srq_context)->user_context;
        break;
      case EventElement::PORT: out.element_id = static_cast<std::uint32_t>(ev.element.port_num); break;
      case EventElement::DEVICE: break;
    }
    ibv_ack_async_event(&ev);
    return out;
  }
  int async_fd() const override { return d_->ctx->async_fd; }
  int completion_fd() const override { return d_->channel->fd; }
  Result<std::size_t> take_completion_events() override { return take_cq_events(*d_); }

  const GidChoice& gid() const override { return d_->gid; }
  const std::string& netdev() const override { return d_->netdev; }
  std::uint32_t ipv4_host() const override { return d_->ipv4_host; }
  std::uint8_t port_num() const override { return d_->port_num; }
  Result<std::vector<GidEntry>> gid_entries() const override {
    return read_gid_table(d_->ctx, d_->name, d_->port_num, d_->port_attr.gid_tbl_len, d_->device_attr.phys_port_cnt);
  }

 private:
  std::shared_ptr<DeviceShared> d_;
  bool software_;  // software_device: a retry_cnt of 7 may mean for ever
};

}  // namespace

std::vector<std::string> list_ibv_devices() {
  std::vector<std::string> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return out;
  for (int i = 0; i < n; ++i) out.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return out;
}

// long because: one linear open in rdma-core's order (device list, context,
// async fd, port, GID table, interface), each step with its own precise error
// (DeviceShared releases what was opened), as the *_pingpong examples read.
Result<std::unique_ptr<IbvDevice>> open_ibv_device(const IbvDeviceOptions& o) {
  auto d = std::make_shared<DeviceShared>();
  d->port_num = o.port_num;
  {
    int n = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) return call_error(errno != 0 ? errno : ENODEV, "ibv_get_device_list");
    std::string names;
    ibv_device* found = nullptr;
    for (int i = 0; i < n; ++i) {
      const std::string name = ibv_get_device_name(list[i]);
      names += (names.empty() ? "" : ", ") + name;
      if (found == nullptr && (o.device.empty() || o.device == name)) found = list[i];
    }
    if (found == nullptr) {
      ibv_free_device_list(list);
      return Error{ENODEV, (o.device.empty() ? std::string("no RDMA device") : "no RDMA device named " + o.device) +
                               "; devices: " + (names.empty() ? "none (is an RDMA driver loaded, e.g. rdma_rxe?)" : names)};
    }
    d->name = ibv_get_device_name(found);
    errno = 0;
    d->ctx = ibv_open_device(found);
    const int err = errno != 0 ? errno : ENODEV;
    ibv_free_device_list(list);
    if (d->ctx == nullptr) return call_error(err, "ibv_open_device " + d->name);
  }
  // get_async_event must never block the engine.
  const int fl = fcntl(d->ctx->async_fd, F_GETFL);
  if (fl < 0 || fcntl(d->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return call_error(errno, "fcntl O_NONBLOCK on the async fd of " + d->name);
  }
  if (Status s = make_completion_channel(*d); !s.ok()) return s.error();

  ibv_device_attr da{};
  if (int rc = ibv_query_device(d->ctx, &da); rc != 0) return call_error(errno_of(rc), "ibv_query_device on " + d->name);
  d->device_attr = to_device_attr(da);
  if (o.port_num < 1 || o.port_num > da.phys_port_cnt) {
    return Error{EINVAL, d->name + " has ports 1.." + std::to_string(da.phys_port_cnt) + ", not " + std::to_string(o.port_num)};
  }
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(d->ctx, o.port_num, &pa); rc != 0) {
    return call_error(errno_of(rc), "ibv_query_port " + std::to_string(o.port_num) + " on " + d->name);
  }
  d->port_attr = to_port_attr(pa);
  // Before the GID: a port whose interface is down may have lost its IP GIDs too, and the cause is the port.
  if (pa.state != IBV_PORT_ACTIVE) {
    return Error{ENETDOWN, d->name + " port " + std::to_string(o.port_num) + " is " +
                               std::string(port_state_name(d->port_attr.state)) + ", not ACTIVE"};
  }
  if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
    return Error{EOPNOTSUPP, d->name + " port " + std::to_string(o.port_num) +
                                 " is not Ethernet (RoCE); qpgate's ibv backend serves RoCE ports only"};
  }

  auto table = read_gid_table(d->ctx, d->name, o.port_num, d->port_attr.gid_tbl_len, da.phys_port_cnt);
  if (!table) return table.error();

  // The bound interface: given, or the one the port's RoCE GIDs belong to.
  std::string spec = o.interface;
  if (spec.empty()) {
    for (const auto& e : *table) {
      if (!e.netdev.empty()) { spec = e.netdev; break; }
    }
    if (spec.empty()) {
      return Error{ENODEV, d->name + " port " + std::to_string(o.port_num) +
                               ": no GID entry names an interface; give IbvDeviceOptions.interface"};
    }
  }
  GidSelectInput in;
  in.device = d->name;
  in.port_num = o.port_num;
  in.override_index = o.gid_index;
  auto iface = find_interface(spec);
  if (iface) {
    in.netdev = iface->name;
    in.ipv4_host = iface->ipv4;
    d->netdev = iface->name;
    d->ifindex = iface->ifindex;
  } else if (!o.gid_index) {
    return Error{iface.code(), d->name + ": the bound interface: " + std::string(iface.message())};
  }
  auto choice = select_gid(*table, in);
  if (!choice) return choice.error();
  d->gid = std::move(*choice);
  d->ipv4_host = d->gid.gid.to_ipv4().value_or(0);
  d->joins.bind(d->ifindex, d->ipv4_host, d->netdev);

  d->backend_label = "the ibv backend (" + d->name + ")";
  d->limits.phys_port_cnt = da.phys_port_cnt;
  d->limits.pkey_tbl_len = pa.pkey_tbl_len;
  d->limits.gid_tbl_len = static_cast<std::uint32_t>(pa.gid_tbl_len);
  d->limits.max_mtu = static_cast<Mtu>(pa.max_mtu);
  d->limits.max_qp_rd_atom = static_cast<std::uint32_t>(da.max_qp_rd_atom);
  d->limits.max_qp_init_rd_atom = static_cast<std::uint32_t>(da.max_qp_init_rd_atom);
  // Alternate paths (IBV_QP_ALT_PATH, automatic path migration) are refused
  // here, before the kernel: its RDMA core refuses them on every RoCE port
  // (_ib_modify_qp: "alternate paths and APM" are for InfiniBand only;
  // IbvDevice.TheKernelRefusesAnAlternatePathOnARocePort shows EINVAL on
  // rxe), whatever IBV_DEVICE_AUTO_PATH_MIG says (rxe sets it, and its
  // completer never loads an alternate path either), and this backend
  // serves RoCE ports only. A second link is a second device, failed over
  // to by the sessions (docs/protocol.md §1.11); the soft backend is where
  // qpgate's QPs migrate (soft_apm.cc). Rate limits go through
  // ibv_modify_qp_rate_limit, which QpAttr does not carry.
  d->limits.unsupported = QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE | QpAttrMask::RATE_LIMIT;
  d->limits.backend_name = d->backend_label;
  return std::unique_ptr<IbvDevice>(std::make_unique<IbvDeviceImpl>(std::move(d)));
}

}  // namespace qpgate::verbs::ibv
