#include "verbs/soft/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/soft/key_gen.h"
#include "wire/icrc.h"

namespace qpgate::verbs::soft {
namespace {

constexpr std::size_t kTxCmsgSpace = CMSG_SPACE(sizeof(int)) * 2;
constexpr std::size_t kRxCmsgSpace = CMSG_SPACE(sizeof(int)) * 4;
constexpr std::int64_t kProbeTimeoutNs = 300'000'000;

std::int64_t monotonic_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string errno_text(int e) { return std::string(errno_symbol(e)) + " (" + std::strerror(e) + ")"; }

Error sys_error(int e, const std::string& what) { return Error{e, what + ": " + errno_text(e)}; }

sockaddr_in make_sockaddr(std::uint32_t addr_be, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr_be;
  sa.sin_port = htons(port);
  return sa;
}

bool set_int(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof value) == 0;
}

int get_int(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof value;
  if (getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

// Writes one IPPROTO_IP cmsg carrying an int at `at` (CMSG_SPACE(int) bytes).
void put_int_cmsg(std::uint8_t* at, int type, int value) {
  cmsghdr header{};
  header.cmsg_level = IPPROTO_IP;
  header.cmsg_type = type;
  header.cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(at, &header, sizeof header);
  std::memcpy(at + CMSG_LEN(0), &value, sizeof value);
}

// Receive-side options shared by the unicast and group sockets.
bool configure_receive(int fd, int rcvbuf) {
  set_int(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf);  // best effort: the grant is reported
  return set_int(fd, IPPROTO_IP, IP_RECVTOS, 1) && set_int(fd, IPPROTO_IP, IP_RECVTTL, 1);
}

}  // namespace

std::string_view errno_symbol(int code) {
  const std::string_view known = errno_name(code);
  if (known != "E?") return known;
  const char* name = strerrorname_np(code);
  return name != nullptr ? std::string_view(name) : known;
}

std::string_view receive_mode_name(ReceiveMode m) {
  return m == ReceiveMode::kAfPacket ? "af-packet" : "plain-udp";
}

std::string_view ipv4_id_probe_name(Ipv4IdProbe p) {
  switch (p) {
    case Ipv4IdProbe::ZERO: return "zero";
    case Ipv4IdProbe::NON_ZERO: return "non_zero";
    case Ipv4IdProbe::UNVERIFIED: return "unverified";
  }
  return "unknown";
}

std::uint32_t ipv4_be(const wire::IpAddress& a) {
  std::uint32_t be = 0;
  std::memcpy(&be, a.bytes.data(), 4);
  return be;
}

wire::IpAddress ipv4_from_be(std::uint32_t be) {
  wire::IpAddress a;
  a.family = wire::IpFamily::kIpv4;
  std::memcpy(a.bytes.data(), &be, 4);
  return a;
}

std::string ip_to_string(const wire::IpAddress& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.family == wire::IpFamily::kIpv4) {
    inet_ntop(AF_INET, a.bytes.data(), text, sizeof text);
  } else {
    inet_ntop(AF_INET6, a.bytes.data(), text, sizeof text);
  }
  return text;
}

// ---------------------------------------------------------------- buffers
struct UdpNet::TxSlot {
  int fd = -1;
  sockaddr_in dst{};
  std::uint8_t tos = 0;
  std::uint8_t ttl = 64;
  std::uint16_t length = 0;
  std::array<std::uint8_t, kMaxRocePacket> bytes{};
};

struct UdpNet::RxBatch {
  explicit RxBatch(std::uint32_t n)
      : data(static_cast<std::size_t>(n) * kMaxRocePacket), control(static_cast<std::size_t>(n) * kRxCmsgSpace),
        from(n), iov(n), msgs(n) {}
  std::vector<std::uint8_t> data;
  std::vector<std::uint8_t> control;
  std::vector<sockaddr_in> from;
  std::vector<iovec> iov;
  std::vector<mmsghdr> msgs;
  // Scratch for sendmmsg.
  std::vector<mmsghdr> tx_msgs;
  std::vector<iovec> tx_iov;
  std::vector<std::uint8_t> tx_control;
};

// ---------------------------------------------------------------- open / close
UdpNet::UdpNet(const NetConfig& config) : config_(config) {}

UdpNet::~UdpNet() {
  for (auto& [port, fd] : tx_fds_) {
    if (fd >= 0) close(fd);
  }
  const bool plain = !packet_rx_.has_value();  // only the plain mode's sockets were announced
  for (auto& [group, g] : groups_) {
    if (observer_ != nullptr && plain) observer_->fd_removed(g.fd);
    close(g.fd);
  }
  if (packet_rx_ && observer_ != nullptr) observer_->fd_removed(packet_rx_->fd());
  if (unicast_fd_ >= 0) {
    if (observer_ != nullptr && plain) observer_->fd_removed(unicast_fd_);
    close(unicast_fd_);
  }
}

Result<int> UdpNet::open_tx_socket(std::uint16_t port, bool reuse) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno, "socket(AF_INET, SOCK_DGRAM)");
  auto fail = [&](const std::string& what) -> Result<int> {
    const int e = errno;
    close(fd);
    return sys_error(e, what);
  };
  if (reuse && !set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1)) return fail("setsockopt(SO_REUSEADDR)");
  // DF on every datagram, so Linux writes IPv4 ID 0 (unconnected socket).
  if (!set_int(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)) return fail("setsockopt(IP_MTU_DISCOVER)");
  // UDP checksum 0, as rxe: the ICRC covers the transport.
  set_int(fd, SOL_SOCKET, SO_NO_CHECK, 1);
  set_int(fd, SOL_SOCKET, SO_SNDBUF, config_.sndbuf);
  in_addr ifaddr{};
  ifaddr.s_addr = ipv4_be(config_.address);
  if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) != 0) {
    return fail("setsockopt(IP_MULTICAST_IF " + ip_to_string(config_.address) + ")");
  }
  if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1)) return fail("setsockopt(IP_MULTICAST_LOOP)");
  const sockaddr_in local = make_sockaddr(ipv4_be(config_.address), port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    return fail("bind(" + ip_to_string(config_.address) + ":" + std::to_string(port) + ")");
  }
  return fd;
}

Result<std::unique_ptr<UdpNet>> UdpNet::open(const NetConfig& config) {
  if (config.address.family != wire::IpFamily::kIpv4) {
    return Error{EAFNOSUPPORT, "soft device: only IPv4 addresses are supported, got " + ip_to_string(config.address)};
  }
  if (config.tx_queue == 0 || config.rx_batch == 0) {
    return Error{EINVAL, "soft device: tx_queue and rx_batch must be at least 1"};
  }
  std::unique_ptr<UdpNet> net(new UdpNet(config));
  // No SO_REUSEADDR: for UDP it would let a second device bind the same
  // <address>:4791 and silently take part of its unicast datagrams.
  Result<int> fd = net->open_tx_socket(wire::kRoceV2Port, false);
  if (!fd) {
    Error e = fd.error();
    if (e.code == EADDRINUSE) {
      e.message += " — another soft device (in this or another process) owns " + ip_to_string(config.address) +
                   ":4791; one device per IP address";
    }
    return e;
  }
  net->unicast_fd_ = *fd;
  if (!configure_receive(net->unicast_fd_, config.rcvbuf)) {
    return sys_error(errno, "setsockopt(IP_RECVTOS/IP_RECVTTL)");
  }
  if (config.receive_mode == ReceiveMode::kAfPacket) {
    // The UDP socket keeps <address>:4791 (no ICMP port unreachable, no
    // second device on the address) but reads nothing: the packet socket does.
    Result<PacketSocketRx> rx = PacketSocketRx::open(config.interface_name, config.rcvbuf, config.rx_batch,
                                                     wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes + kMaxRocePacket);
    if (!rx) return rx.error();
    if (!attach_drop_all_filter(net->unicast_fd_)) return sys_error(errno, "setsockopt(SO_ATTACH_FILTER) on the 4791 socket");
    net->packet_rx_.emplace(std::move(*rx));
  }
  net->report_.receive_mode = config.receive_mode;
  net->report_.rcvbuf_granted = get_int(net->unicast_fd_, SOL_SOCKET, SO_RCVBUF);
  net->report_.sndbuf_granted = get_int(net->unicast_fd_, SOL_SOCKET, SO_SNDBUF);
  net->report_.source_port_mode =
      config.per_flow_source_port
          ? "per-flow sockets bound to " + ip_to_string(config.address) +
                ":<RoCEv2 source port>, falling back to 4791 when a port is taken"
          : "fixed: every packet leaves from port 4791";
  net->tx_.resize(config.tx_queue);
  net->rx_ = std::make_unique<RxBatch>(config.rx_batch);
  net->rx_->tx_msgs.resize(config.tx_queue);
  net->rx_->tx_iov.resize(config.tx_queue);
  net->rx_->tx_control.resize(config.tx_queue * kTxCmsgSpace);
  if (config.probe_ipv4_id) {
    net->probe_ipv4_id();
  } else {
    net->report_.ipv4_id_detail = "probe disabled";
  }
  return net;
}

// Sends one datagram from a transmit socket configured like every other
// (IP_PMTUDISC_DO, unconnected; an ephemeral port, so captures of port 4791
// do not see the probe) to a sink socket of our own, and reads its IP header back through an
// AF_PACKET socket on the loopback device (local traffic always crosses lo).
// The only raw-free alternative would be trusting the kernel source
// (ip_select_ident_segs); this looks at what the kernel really wrote.
void UdpNet::probe_ipv4_id() {
  const int sink = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int raw = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_IP));
  auto done = [&](Ipv4IdProbe result, std::string detail) {
    report_.ipv4_id = result;
    report_.ipv4_id_detail = std::move(detail);
    if (sink >= 0) close(sink);
    if (raw >= 0) close(raw);
  };
  if (raw < 0) {
    done(Ipv4IdProbe::UNVERIFIED, "not checked: an AF_PACKET socket needs CAP_NET_RAW (" + errno_text(errno) +
                                       "); the ID-0 rule is the kernel's ip_select_ident_segs for DF on "
                                       "unconnected sockets");
    return;
  }
  if (sink < 0) {
    done(Ipv4IdProbe::UNVERIFIED, "not checked: socket() failed: " + errno_text(errno));
    return;
  }
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_protocol = htons(ETH_P_IP);
  ll.sll_ifindex = static_cast<int>(if_nametoindex("lo"));
  sockaddr_in sink_addr = make_sockaddr(ipv4_be(config_.address), 0);
  socklen_t sink_len = sizeof sink_addr;
  if (ll.sll_ifindex == 0 || bind(raw, reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0 ||
      bind(sink, reinterpret_cast<sockaddr*>(&sink_addr), sizeof sink_addr) != 0 ||
      getsockname(sink, reinterpret_cast<sockaddr*>(&sink_addr), &sink_len) != 0) {
    done(Ipv4IdProbe::UNVERIFIED, "not checked: binding the probe sockets failed: " + errno_text(errno));
    return;
  }
  Result<int> probe_tx = open_tx_socket(0, false);
  if (!probe_tx) {
    done(Ipv4IdProbe::UNVERIFIED, "not checked: " + probe_tx.error().message);
    return;
  }
  const int tx = *probe_tx;
  std::array<std::uint8_t, 24> marker{};
  std::memcpy(marker.data(), "qpgate-id-probe:", 16);
  getrandom_fill(marker.data() + 16, 8);
  const bool sent = sendto(tx, marker.data(), marker.size(), 0, reinterpret_cast<sockaddr*>(&sink_addr),
                          sizeof sink_addr) == static_cast<ssize_t>(marker.size());
  const int send_errno = errno;
  close(tx);
  if (!sent) {
    done(Ipv4IdProbe::UNVERIFIED, "not checked: sending the probe failed: " + errno_text(send_errno));
    return;
  }
  const std::int64_t deadline = monotonic_now_ns() + kProbeTimeoutNs;
  std::array<std::uint8_t, 2048> frame{};
  while (monotonic_now_ns() < deadline) {
    pollfd p{raw, POLLIN, 0};
    poll(&p, 1, 10);
    for (;;) {
      const ssize_t n = recv(raw, frame.data(), frame.size(), 0);
      if (n <= 0) break;
      const auto len = static_cast<std::size_t>(n);
      if (len < 20 + 8 + marker.size() || (frame[0] >> 4) != 4) continue;
      const std::size_t ihl = (frame[0] & 0x0fu) * 4u;
      if (frame[9] != IPPROTO_UDP || len < ihl + 8 + marker.size()) continue;
      if (std::memcmp(frame.data() + ihl + 8, marker.data(), marker.size()) != 0) continue;
      const std::uint16_t id = static_cast<std::uint16_t>(frame[4] << 8 | frame[5]);
      const bool df = (frame[6] & 0x40u) != 0;
      if (id == 0 && df) {
        done(Ipv4IdProbe::ZERO, "seen on lo: IPv4 ID 0, DF set");
      } else {
        done(Ipv4IdProbe::NON_ZERO, "seen on lo: IPv4 ID " + std::to_string(id) + (df ? ", DF set" : ", DF clear") +
                                        " — peers checking our ICRC with the real header will fail");
      }
      return;
    }
  }
  done(Ipv4IdProbe::UNVERIFIED, "not checked: the probe datagram was not seen on lo within 300 ms");
}

// ---------------------------------------------------------------- transmit
int UdpNet::tx_socket_for(std::uint16_t src_port) {
  if (!config_.per_flow_source_port || src_port == 0 || src_port == wire::kRoceV2Port) return unicast_fd_;
  auto it = tx_fds_.find(src_port);
  if (it != tx_fds_.end()) {
    if (it->second < 0) counters_.tx_sport_fallback.inc();
    return it->second >= 0 ? it->second : unicast_fd_;
  }
  int fd = -1;
  if (tx_socket_count_ < config_.max_tx_sockets) {
    Result<int> opened = open_tx_socket(src_port, false);
    if (opened) {
      fd = *opened;
      ++tx_socket_count_;
      counters_.tx_sockets.inc();
    }
  }
  tx_fds_.emplace(src_port, fd);
  if (fd < 0) counters_.tx_sport_fallback.inc();
  return fd >= 0 ? fd : unicast_fd_;
}

bool UdpNet::transmit(const TxPacket& packet) {
  if (packet.roce.size() > kMaxRocePacket || packet.flow.dst.family != wire::IpFamily::kIpv4) {
    counters_.tx_errors.inc();  // a QP bug; refusing it would stall the QP forever
    return true;
  }
  if (tx_dice_.active() || !tx_held_.empty()) return transmit_faulty(packet);
  return enqueue(packet, nullptr);
}

bool UdpNet::has_room() {
  if (tx_count_ < tx_.size()) return true;
  flush();
  return tx_count_ < tx_.size();
}

bool UdpNet::enqueue(const TxPacket& packet, const FaultDecision* corruption) {
  if (!has_room()) {
    counters_.tx_queue_full.inc();
    return false;
  }
  TxSlot& slot = tx_[tx_count_++];
  slot.fd = tx_socket_for(packet.flow.src_port);
  slot.dst = make_sockaddr(ipv4_be(packet.flow.dst), packet.flow.dst_port);
  slot.tos = packet.traffic_class;
  slot.ttl = packet.hop_limit == 0 ? 64 : packet.hop_limit;
  slot.length = static_cast<std::uint16_t>(packet.roce.size());
  std::memcpy(slot.bytes.data(), packet.roce.data(), packet.roce.size());
  if (slot.fd == unicast_fd_ && packet.flow.src_port != wire::kRoceV2Port && packet.roce.size() >= 16) {
    // It leaves from 4791, not the port the QP sealed it for: the ICRC
    // covers the UDP ports, so seal it again for the flow it really takes.
    wire::UdpFlow real = packet.flow;
    real.src = config_.address;
    real.src_port = wire::kRoceV2Port;
    wire::icrc_store(std::span<std::uint8_t>(slot.bytes.data(), slot.length), real);
    counters_.tx_icrc_resealed.inc();
  }
  if (corruption != nullptr) corruption->corrupt(std::span<std::uint8_t>(slot.bytes.data(), slot.length));
  return true;
}

// ---------------------------------------------------------------- faults (tests)
void UdpNet::set_faults(const FaultPlan& plan) {
  fault_plan_ = plan;
  tx_dice_.configure(plan, plan.tx, plan.seed, &fault_counters_.tx);
  rx_dice_.configure(plan, plan.rx, plan.seed ^ 0x5bd1e9955bd1e995ULL, &fault_counters_.rx);
}

std::int64_t UdpNet::next_fault_release_ns() const { return std::min(tx_held_.next_due(), rx_held_.next_due()); }

bool UdpNet::transmit_faulty(const TxPacket& packet) {
  // Room first: a packet refused for back-pressure comes back, and must not
  // be rolled for twice.
  if (!has_room()) {
    counters_.tx_queue_full.inc();
    return false;
  }
  const std::int64_t now = monotonic_now_ns();
  release_tx_held(now);
  const FaultDecision d = tx_dice_.roll(packet.roce);
  if (d.drop) return true;
  const auto requeue = [this](std::span<std::uint8_t> bytes, const TxHeldMeta& m) {
    TxPacket p;
    p.flow = m.flow;
    p.traffic_class = m.traffic_class;
    p.hop_limit = m.hop_limit;
    p.roce = bytes;
    // Never flush from here (flush releases held packets): no room, stay held.
    return tx_count_ < tx_.size() && enqueue(p, &m.corruption);
  };
  if (d.hold != FaultDecision::Hold::NONE) {
    const bool reorder = d.hold == FaultDecision::Hold::REORDER;
    const std::int64_t due = now + (reorder ? fault_plan_.reorder_max_hold_ns : fault_plan_.delay_ns);
    const TxHeldMeta meta{packet.flow, packet.traffic_class, packet.hop_limit, d};
    tx_held_.hold(packet.roce, meta, due, reorder ? std::max<std::uint32_t>(1, fault_plan_.reorder_distance) : 0);
    if (d.duplicate) enqueue(packet, &d);  // one copy now, the other later
    return true;
  }
  if (!enqueue(packet, &d)) return false;  // cannot happen: room was made above
  if (d.duplicate) enqueue(packet, &d);    // skipped when the queue is full
  tx_held_.passed(requeue);
  return true;
}

void UdpNet::release_tx_held(std::int64_t now_ns) {
  if (tx_held_.empty()) return;
  tx_held_.release_due(now_ns, [this](std::span<std::uint8_t> bytes, const TxHeldMeta& m) {
    TxPacket p;
    p.flow = m.flow;
    p.traffic_class = m.traffic_class;
    p.hop_limit = m.hop_limit;
    p.roce = bytes;
    // Never flush from here (flush releases held packets): no room, stay held.
    return tx_count_ < tx_.size() && enqueue(p, &m.corruption);
  });
}

void UdpNet::deliver_rx(std::span<std::uint8_t> bytes, const RxMeta& meta, const RxHandler& fn) {
  if (!rx_dice_.active()) {
    fn(bytes, meta);
  } else {
    const FaultDecision d = rx_dice_.roll(bytes);
    if (d.drop) return;
    d.corrupt(bytes);
    if (d.hold != FaultDecision::Hold::NONE) {
      const bool reorder = d.hold == FaultDecision::Hold::REORDER;
      const std::int64_t due = meta.rx_ns + (reorder ? fault_plan_.reorder_max_hold_ns : fault_plan_.delay_ns);
      rx_held_.hold(bytes, meta, due, reorder ? std::max<std::uint32_t>(1, fault_plan_.reorder_distance) : 0);
      if (d.duplicate) fn(bytes, meta);
      return;
    }
    fn(bytes, meta);
    if (d.duplicate) fn(bytes, meta);
  }
  if (!rx_held_.empty()) {
    rx_held_.passed([&fn](std::span<std::uint8_t> held, const RxMeta& m) {
      fn(held, m);
      return true;
    });
  }
}

// Sends tx_[first, first+count), all for `fd`. Returns how many are done
// (sent, or refused for good and counted); fewer than count on EAGAIN.
int UdpNet::flush_socket(int fd, std::size_t first, std::size_t count) {
  RxBatch& s = *rx_;
  for (std::size_t i = 0; i < count; ++i) {
    TxSlot& slot = tx_[first + i];
    mmsghdr& m = s.tx_msgs[i];
    m = mmsghdr{};
    s.tx_iov[i] = iovec{slot.bytes.data(), slot.length};
    m.msg_hdr.msg_name = &slot.dst;
    m.msg_hdr.msg_namelen = sizeof slot.dst;
    m.msg_hdr.msg_iov = &s.tx_iov[i];
    m.msg_hdr.msg_iovlen = 1;
    std::uint8_t* control = s.tx_control.data() + i * kTxCmsgSpace;
    std::memset(control, 0, kTxCmsgSpace);
    m.msg_hdr.msg_control = control;
    m.msg_hdr.msg_controllen = kTxCmsgSpace;
    // Two cmsgs at fixed offsets: IP_TOS, then IP_TTL (each an int).
    put_int_cmsg(control, IP_TOS, slot.tos);
    put_int_cmsg(control + CMSG_SPACE(sizeof(int)), IP_TTL, slot.ttl);
  }
  std::size_t done = 0;
  while (done < count) {
    const int n = sendmmsg(fd, s.tx_msgs.data() + done, static_cast<unsigned>(count - done), MSG_DONTWAIT);
    counters_.tx_syscalls.inc();
    if (n > 0) {
      for (int i = 0; i < n; ++i) {
        counters_.tx_packets.inc();
        counters_.tx_bytes.add(tx_[first + done + static_cast<std::size_t>(i)].length);
      }
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) break;
    if (n < 0 && errno == EINTR) continue;
    // The datagram at `done` was refused (EMSGSIZE, ENETUNREACH, EPERM...):
    // drop it, count it, go on with the rest.
    counters_.tx_errors.inc();
    ++done;
  }
  return static_cast<int>(done);
}

int UdpNet::flush() {
  if (!tx_held_.empty()) release_tx_held(monotonic_now_ns());
  if (tx_count_ == 0) return 0;
  int sent_total = 0;
  std::size_t i = 0;
  std::size_t keep_from = tx_count_;  // first slot left queued after EAGAIN
  while (i < tx_count_) {
    std::size_t j = i + 1;
    while (j < tx_count_ && tx_[j].fd == tx_[i].fd) ++j;  // a run for one socket, in order
    const int done = flush_socket(tx_[i].fd, i, j - i);
    sent_total += done;
    if (static_cast<std::size_t>(done) < j - i) {
      keep_from = i + static_cast<std::size_t>(done);
      break;
    }
    i = j;
  }
  if (keep_from < tx_count_) {
    std::size_t w = 0;
    for (std::size_t r = keep_from; r < tx_count_; ++r) std::swap(tx_[w++], tx_[r]);
    tx_count_ = w;
  } else {
    tx_count_ = 0;
  }
  return sent_total;
}

// ---------------------------------------------------------------- receive
int UdpNet::receive_from(int fd, const wire::IpAddress* group, const RxHandler& fn) {
  RxBatch& b = *rx_;
  const std::uint32_t n_max = config_.rx_batch;
  for (std::uint32_t i = 0; i < n_max; ++i) {
    b.iov[i] = iovec{b.data.data() + static_cast<std::size_t>(i) * kMaxRocePacket, kMaxRocePacket};
    mmsghdr& m = b.msgs[i];
    m = mmsghdr{};
    m.msg_hdr.msg_name = &b.from[i];
    m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
    m.msg_hdr.msg_iov = &b.iov[i];
    m.msg_hdr.msg_iovlen = 1;
    m.msg_hdr.msg_control = b.control.data() + static_cast<std::size_t>(i) * kRxCmsgSpace;
    m.msg_hdr.msg_controllen = kRxCmsgSpace;
  }
  const int n = recvmmsg(fd, b.msgs.data(), n_max, MSG_DONTWAIT, nullptr);
  if (n <= 0) {
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) counters_.rx_errors.inc();
    return 0;
  }
  counters_.rx_syscalls.inc();
  const std::int64_t now = monotonic_now_ns();  // one receive time per batch
  for (int i = 0; i < n; ++i) {
    mmsghdr& m = b.msgs[static_cast<std::size_t>(i)];
    counters_.rx_packets.inc();
    counters_.rx_bytes.add(m.msg_len);
    if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
      counters_.rx_truncated.inc();
      continue;
    }
    const sockaddr_in& from = b.from[static_cast<std::size_t>(i)];
    if (m.msg_hdr.msg_namelen < sizeof(sockaddr_in) || from.sin_family != AF_INET) {
      counters_.rx_not_ipv4.inc();
      continue;
    }
    RxMeta meta;
    meta.flow.src = ipv4_from_be(from.sin_addr.s_addr);
    meta.flow.src_port = ntohs(from.sin_port);
    meta.flow.dst = group != nullptr ? *group : config_.address;
    meta.flow.dst_port = wire::kRoceV2Port;
    meta.rx_ns = now;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c != nullptr; c = CMSG_NXTHDR(&m.msg_hdr, c)) {
      if (c->cmsg_level != IPPROTO_IP) continue;
      if (c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
        meta.traffic_class = *CMSG_DATA(c);
      } else if (c->cmsg_type == IP_TTL && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int ttl = 0;
        std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
        meta.hop_limit = static_cast<std::uint8_t>(ttl);
      }
    }
    deliver_rx(std::span<std::uint8_t>(static_cast<std::uint8_t*>(b.iov[static_cast<std::size_t>(i)].iov_base),
                                       m.msg_len),
               meta, fn);
  }
  return n;
}

// af-packet mode: whole IPv4 datagrams; the headers go into RxMeta so the
// ingress checks the ICRC against them.
int UdpNet::receive_packets(const RxHandler& fn) {
  std::uint64_t truncated = 0;
  const std::int64_t now = monotonic_now_ns();
  int delivered = 0;
  const int n = packet_rx_->receive(
      [&](std::span<std::uint8_t> datagram) {
        wire::Result<wire::OuterView> outer = wire::parse_ip_udp(datagram);
        if (!outer.ok() || outer->family != wire::IpFamily::kIpv4) {
          counters_.rx_bad_ip.inc();
          return;
        }
        const wire::IpAddress& dst = outer->flow.dst;
        const bool ours = dst == config_.address || groups_.count(ipv4_be(dst)) != 0;
        if (!ours) {
          counters_.rx_not_ours.inc();
          return;
        }
        counters_.rx_packets.inc();
        counters_.rx_bytes.add(outer->roce.size());
        RxMeta meta;
        meta.flow = outer->flow;
        meta.traffic_class = outer->ip_header[1];
        meta.hop_limit = outer->ip_header[8];
        meta.rx_ns = now;
        meta.ip_udp_len = static_cast<std::uint8_t>(outer->ip_header.size() + outer->udp_header.size());
        std::memcpy(meta.ip_udp.data(), outer->ip_header.data(), meta.ip_udp_len);  // contiguous in the datagram
        const std::size_t at = static_cast<std::size_t>(outer->roce.data() - datagram.data());
        deliver_rx(datagram.subspan(at, outer->roce.size()), meta, fn);
        ++delivered;
      },
      truncated);
  if (n < 0) counters_.rx_errors.inc();
  if (n > 0) counters_.rx_syscalls.inc();
  counters_.rx_truncated.add(truncated);
  return delivered;
}

int UdpNet::receive(const RxHandler& fn) {
  int total = 0;
  if (!rx_held_.empty()) {
    rx_held_.release_due(monotonic_now_ns(), [&](std::span<std::uint8_t> held, const RxMeta& m) {
      fn(held, m);
      ++total;
      return true;
    });
  }
  if (packet_rx_) return total + receive_packets(fn);
  total += receive_from(unicast_fd_, nullptr, fn);
  for (auto& [group_be, g] : groups_) {
    const wire::IpAddress group = ipv4_from_be(group_be);
    total += receive_from(g.fd, &group, fn);
  }
  return total;
}

// ---------------------------------------------------------------- multicast
Status UdpNet::join(const wire::IpAddress& group) {
  if (group.family != wire::IpFamily::kIpv4 || (group.bytes[0] & 0xf0u) != 0xe0u) {
    return Error{EINVAL, "join: " + ip_to_string(group) + " is not an IPv4 multicast group (224.0.0.0/4)"};
  }
  const std::uint32_t be = ipv4_be(group);
  auto it = groups_.find(be);
  if (it != groups_.end()) {
    ++it->second.refs;
    return {};
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno, "join " + ip_to_string(group) + ": socket()");
  auto fail = [&](const std::string& what) -> Status {
    const int e = errno;
    close(fd);
    return sys_error(e, "join " + ip_to_string(group) + " on " + ip_to_string(config_.address) + ": " + what);
  };
  if (!set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1)) return fail("setsockopt(SO_REUSEADDR)");
  const sockaddr_in local = make_sockaddr(be, wire::kRoceV2Port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) return fail("bind(<group>:4791)");
  if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0)) return fail("setsockopt(IP_MULTICAST_ALL, 0)");
  ip_mreq mreq{};
  mreq.imr_multiaddr.s_addr = be;
  mreq.imr_interface.s_addr = ipv4_be(config_.address);
  if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
    return fail("setsockopt(IP_ADD_MEMBERSHIP)");
  }
  if (packet_rx_) {
    // The membership makes the interface accept the group; the packet socket reads it.
    if (!attach_drop_all_filter(fd)) return fail("setsockopt(SO_ATTACH_FILTER)");
    groups_.emplace(be, Group{fd, 1});
    return {};
  }
  if (!configure_receive(fd, config_.rcvbuf)) return fail("setsockopt(IP_RECVTOS/IP_RECVTTL)");
  groups_.emplace(be, Group{fd, 1});
  if (observer_ != nullptr) observer_->fd_added(fd);
  return {};
}

Status UdpNet::leave(const wire::IpAddress& group) {
  auto it = groups_.find(group.family == wire::IpFamily::kIpv4 ? ipv4_be(group) : 0);
  if (group.family != wire::IpFamily::kIpv4 || it == groups_.end()) {
    return Error{EINVAL, "leave: " + ip_to_string(group) + " is not joined on " + ip_to_string(config_.address)};
  }
  if (--it->second.refs > 0) return {};
  if (observer_ != nullptr && !packet_rx_) observer_->fd_removed(it->second.fd);
  close(it->second.fd);  // closing drops the membership (IGMP leave)
  groups_.erase(it);
  return {};
}

std::uint32_t UdpNet::group_refs(const wire::IpAddress& group) const {
  if (group.family != wire::IpFamily::kIpv4) return 0;
  auto it = groups_.find(ipv4_be(group));
  return it == groups_.end() ? 0 : it->second.refs;
}

std::vector<int> UdpNet::receive_fds() const {
  if (packet_rx_) return {packet_rx_->fd()};
  std::vector<int> fds{unicast_fd_};
  for (const auto& [be, g] : groups_) fds.push_back(g.fd);
  return fds;
}

}  // namespace qpgate::verbs::soft
