#include "device_open.h"

#include <arpa/inet.h>

#include <fstream>

#include "args.h"
#include "engine/engine.h"
#include "engine_wrap.h"
#include "gateway/engine_agents.h"
#include "verbs/soft/net.h"
#include "verbs/soft/soft_device.h"
#include "verbs/source_gid.h"
#include "verbs_convert.h"
#if defined(QPGATE_HAVE_IBVERBS)
#include "verbs/ibv/ibv_device.h"
#endif

namespace qpgate::addon {
namespace {

namespace soft = verbs::soft;

const std::string kWhere = "openDevice: ";

std::string opt_string(Napi::Env env, Napi::Object o, const char* key) {
  return has(o, key) ? to_str(env, o.Get(key), kWhere + key) : std::string();
}

std::uint32_t opt_u32(Napi::Env env, Napi::Object o, const char* key, std::uint32_t max, std::uint32_t fallback) {
  return has(o, key) ? to_u32(env, o.Get(key), kWhere + key, max) : fallback;
}

bool opt_bool(Napi::Env env, Napi::Object o, const char* key, bool fallback) {
  return has(o, key) ? to_bool(env, o.Get(key), kWhere + key) : fallback;
}

soft::SoftDeviceOptions soft_options(Napi::Env env, Napi::Object o) {
  soft::SoftDeviceOptions opts;
  const std::string address = opt_string(env, o, "address");
  const std::string name = opt_string(env, o, "name");
  if (address.empty() == name.empty()) {
    throw Napi::TypeError::New(env, "openDevice: give exactly one of address ('127.0.0.2') or name ('eth0')");
  }
  opts.address_or_name = address.empty() ? name : address;
  if (std::string d = opt_string(env, o, "deviceName"); !d.empty()) opts.name = d;
  opts.alternate_address = opt_string(env, o, "alternateAddress");
  constexpr soft::IcrcPolicy kIcrcPolicies[] = {soft::IcrcPolicy::STRICT, soft::IcrcPolicy::COUNT_UNVERIFIABLE};
  if (has(o, "icrcPolicy")) opts.icrc_policy = kIcrcPolicies[to_choice(env, o.Get("icrcPolicy"), kWhere + "icrcPolicy", {"strict", "count-unverifiable"})];
  constexpr soft::ReceiveMode kReceiveModes[] = {soft::ReceiveMode::kPlainUdp, soft::ReceiveMode::kAfPacket};
  if (has(o, "receiveMode")) {
    opts.net.receive_mode = kReceiveModes[to_choice(env, o.Get("receiveMode"), kWhere + "receiveMode", {"plain-udp", "af-packet"})];
  }
  opts.net.rcvbuf = static_cast<int>(opt_u32(env, o, "rcvbuf", 1u << 30, static_cast<std::uint32_t>(opts.net.rcvbuf)));
  opts.net.sndbuf = static_cast<int>(opt_u32(env, o, "sndbuf", 1u << 30, static_cast<std::uint32_t>(opts.net.sndbuf)));
  opts.net.per_flow_source_port = opt_bool(env, o, "perFlowSourcePort", opts.net.per_flow_source_port);
  opts.net.probe_ipv4_id = opt_bool(env, o, "probeIpv4Id", opts.net.probe_ipv4_id);
  return opts;
}

OpenedDevice open_soft(Napi::Env env, EngineWrap& ew, Napi::Object o) {
  const soft::SoftDeviceOptions opts = soft_options(env, o);
  engine::SoftDeviceAgent* agent = ew.agents().soft_devices;
  verbs::Result<std::unique_ptr<soft::SoftDevice>> r = verbs::Error{};
  ew.engine()->run_on_engine([&] {
    r = soft::open_soft_device(opts);
    if (r.ok()) {
      verbs::Status s = agent->attach(*r.value());
      if (!s.ok()) r = s.error();
    }
  });
  if (!r.ok()) throw verbs_error(env, r.error());
  OpenedDevice out;
  const soft::SoftDevice& d = *r.value();
  const soft::InterfaceInfo& i = d.interface_info();
  out.facts = {soft::ip_to_string(d.address()), d.gid().to_string(), 0, "", i.name, i.mtu, i.loopback, 1, ""};
  if (auto alt = verbs::choose_alternate_gid(*r.value(), verbs::SourceGid{d.gid(), 0})) out.facts.alternate_gid = alt->gid.to_string();
  out.device = std::move(r).value();
  return out;
}

#if defined(QPGATE_HAVE_IBVERBS)
std::uint32_t interface_mtu(const std::string& netdev) {
  std::ifstream f("/sys/class/net/" + netdev + "/mtu");  // the IP MTU; the port's active MTU is the RoCE one
  std::uint32_t mtu = 0;
  f >> mtu;
  return mtu;
}

std::string dotted(std::uint32_t ipv4_host) {
  char buf[INET_ADDRSTRLEN] = {};
  const std::uint32_t be = htonl(ipv4_host);
  inet_ntop(AF_INET, &be, buf, sizeof buf);
  return buf;
}

OpenedDevice open_ibv(Napi::Env env, EngineWrap& ew, Napi::Object o) {
  verbs::ibv::IbvDeviceOptions opts;
  opts.device = opt_string(env, o, "name");
  if (opts.device.empty()) throw Napi::TypeError::New(env, "openDevice: kind 'ibv' needs name, the RDMA device ('rxe0', 'mlx5_0')");
  opts.port_num = static_cast<std::uint8_t>(opt_u32(env, o, "port", 255, opts.port_num));
  if (has(o, "gidIndex")) opts.gid_index = to_u32(env, o.Get("gidIndex"), kWhere + "gidIndex", 255);
  opts.interface = opt_string(env, o, "interface");
  engine::DeviceEventsAgent* agent = ew.agents().device_events;
  verbs::Result<std::unique_ptr<verbs::ibv::IbvDevice>> r = verbs::Error{};
  ew.engine()->run_on_engine([&] {
    r = verbs::ibv::open_ibv_device(opts);  // ENETDOWN when the port is not active
    if (!r.ok()) return;
    verbs::Status s = agent->attach(*r.value());
    if (!s.ok()) r = s.error();  // destroyed here, on the engine thread: nothing half-started
  });
  if (!r.ok()) throw verbs_error(env, r.error());
  const verbs::ibv::IbvDevice& d = *r.value();
  OpenedDevice out;
  out.facts = {dotted(d.ipv4_host()), d.gid().gid.to_string(), d.gid().index, d.gid().report,
               d.netdev(), interface_mtu(d.netdev()), d.netdev() == "lo", d.port_num(), ""};
  out.device = std::move(r).value();
  out.events_agent = true;
  return out;
}
#endif

}  // namespace

OpenedDevice open_device(Napi::Env env, EngineWrap& ew, Napi::Value options) {
  Napi::Object o = to_object(env, options, kWhere + "options", "an object {kind, address | name, ...}");
  if (!has(o, "kind") || to_choice(env, o.Get("kind"), kWhere + "kind", {"soft", "ibv"}) == 0) return open_soft(env, ew, o);
#if defined(QPGATE_HAVE_IBVERBS)
  return open_ibv(env, ew, o);
#else
  throw verbs_error(env, verbs::Error{EOPNOTSUPP, "this build has no ibv backend: libibverbs-dev was missing when the addon was built"});
#endif
}

verbs::Result<std::vector<GidRow>> gid_rows(verbs::Device& device, std::uint8_t port) {
  std::vector<GidRow> rows;
#if defined(QPGATE_HAVE_IBVERBS)
  if (device.backend() == "ibv") {
    auto entries = static_cast<verbs::ibv::IbvDevice&>(device).gid_entries();
    if (!entries.ok()) return entries.error();
    for (const auto& e : *entries) {
      rows.push_back({e.index, e.gid.to_string(), std::string(verbs::ibv::gid_type_name(e.type)), e.netdev});
    }
    return rows;
  }
#endif
  auto gids = device.query_gid_table(port);
  if (!gids.ok()) return gids.error();
  for (std::size_t i = 0; i < gids->size(); ++i) rows.push_back({static_cast<std::uint32_t>(i), (*gids)[i].to_string(), "RoCE v2", ""});
  return rows;
}

}  // namespace qpgate::addon
