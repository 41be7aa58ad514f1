// The soft device's wire (rxe_net.c's role): the UDP sockets that carry its
// RoCEv2 packets, batched both ways.
//
// Sockets (IPv4; one device owns one address):
//  - unicast: bound to <address>:4791, non-blocking, deliberately WITHOUT
//    SO_REUSEADDR: for UDP it would let a second socket bind the same
//    address and port and silently take some of the device's unicast
//    datagrams; without it a second device on the address is EADDRINUSE.
//    Receives every unicast packet of the device; sends what has no own
//    source port.
//  - one transmit socket per RoCEv2 UDP source port, made lazily on the first
//    packet of a flow and bound to <address>:<src_port> WITHOUT SO_REUSEADDR,
//    so it never steals a port another socket holds. A port that cannot be
//    bound (taken by another process, or more than max_tx_sockets flows)
//    falls back to the unicast socket (source port 4791) and is counted in
//    tx_sport_fallback; as the ICRC covers the UDP ports, such a packet's
//    ICRC is recomputed for port 4791 (tx_icrc_resealed). Raw sockets could write any source port, but need
//    CAP_NET_RAW; IP_PKTINFO sets the source address, never the port.
//  - one socket per joined multicast group: bound to <group>:4791 with
//    SO_REUSEADDR (several processes on a host receive the group),
//    IP_MULTICAST_ALL = 0 (only the groups this socket joined) and
//    IP_ADD_MEMBERSHIP on the device's address. join()/leave() count
//    references: the group socket opens on the first join and closes on the
//    last leave. One socket per group, because a UDP socket receives the
//    destination it is bound to: a single wildcard socket on port 4791 would
//    collide with the unicast socket (bound without SO_REUSEADDR) and with
//    other devices' sockets on the host.
// Every transmit socket: unconnected, IP_MTU_DISCOVER = IP_PMTUDISC_DO (DF,
// so Linux writes IPv4 ID 0 and the ICRC the QP computed holds; probed at
// open, see Ipv4IdProbe), SO_NO_CHECK (UDP checksum 0, as rxe; the ICRC
// covers the payload), IP_MULTICAST_IF = the device address and
// IP_MULTICAST_LOOP = 1 (local subscribers, other processes included).
// Per packet, cmsgs IP_TOS and IP_TTL carry the QP's traffic class and hop
// limit; receive sockets ask for IP_RECVTOS/IP_RECVTTL to fill RxMeta.
//
// Batching: transmit() copies the packet into a fixed queue (no allocation);
// flush() sends the queue with one sendmmsg per socket (the device calls it
// once per duty cycle; transmit() flushes early when the queue is full).
// receive() reads up to a batch per ready socket with recvmmsg. Without
// groups it reads the unicast socket directly; with groups, one epoll_wait
// over the unicast and group sockets says which to read, so an idle group
// costs nothing per pass (it used to cost a recvmmsg each).
//
// Faults (tests only) are not here: FaultNet (fault_net.h) wraps the
// PacketIo when a test asks for them.
//
// One thread (the engine's) uses it; nothing here locks.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "verbs/error.h"
#include "verbs/soft/ingress_counters.h"
#include "verbs/soft/packet_io.h"
#include "verbs/soft/packet_rx.h"
#include "verbs/soft/socket_util.h"
#include "wire/ip_udp.h"

namespace qpgate::verbs::soft {

// The largest RoCEv2 UDP payload: a 4096-byte MTU payload plus the largest
// transport headers (rxe's RXE_MAX_HDR_LENGTH 80) and the ICRC.
inline constexpr std::size_t kMaxRocePacket = 4096 + 80 + 4;

// Where received packets are read (docs/protocol.md §1.8 says what each
// checks): kPlainUdp, the UDP sockets (no privilege; the ICRC is checked
// against a pseudo header that assumes the sender's IPv4 ID is 0, as ours);
// kAfPacket, an AF_PACKET socket that sees the real IP header, so the ICRC
// of any sender (rxe, NICs) is checked (needs CAP_NET_RAW; packet_rx.h).
enum class ReceiveMode : std::uint8_t { kPlainUdp, kAfPacket };
std::string_view receive_mode_name(ReceiveMode m);  // "plain-udp", "af-packet"

struct NetConfig {
  static constexpr int kDefaultSocketBuffer = 4 << 20;
  static constexpr std::uint32_t kDefaultTxQueue = 256;
  static constexpr std::uint32_t kDefaultRxBatch = 32;
  static constexpr std::uint32_t kDefaultMaxTxSockets = 1024;

  wire::IpAddress address;  // IPv4 only
  int rcvbuf = kDefaultSocketBuffer;  // asked for; the kernel may grant less (NetReport)
  int sndbuf = kDefaultSocketBuffer;
  std::uint32_t tx_queue = kDefaultTxQueue;
  std::uint32_t rx_batch = kDefaultRxBatch;  // per socket per receive()
  bool per_flow_source_port = true;  // false: every packet leaves from port 4791
  std::uint32_t max_tx_sockets = kDefaultMaxTxSockets;
  bool probe_ipv4_id = true;
  ReceiveMode receive_mode = ReceiveMode::kPlainUdp;
  std::string interface_name;  // the interface that owns `address` (af-packet binds to it)
};

// What the start-up check of the IPv4 ID found.
enum class Ipv4IdProbe : std::uint8_t {
  ZERO,        // seen on the wire: ID 0 (the ICRC of our packets verifies)
  NON_ZERO,    // seen on the wire: this kernel does not write ID 0 (peers' ICRC checks will fail)
  UNVERIFIED,  // could not look (no CAP_NET_RAW for an AF_PACKET socket, or nothing captured)
};
std::string_view ipv4_id_probe_name(Ipv4IdProbe p);  // "zero", "non_zero", "unverified"

struct NetReport {
  int rcvbuf_granted = 0;  // SO_RCVBUF as read back (the kernel doubles what it grants)
  int sndbuf_granted = 0;
  Ipv4IdProbe ipv4_id = Ipv4IdProbe::UNVERIFIED;
  std::string ipv4_id_detail;  // what the probe saw, or why it could not look
  std::string source_port_mode;  // "per-flow sockets (bound <addr>:<sport>)" or "fixed 4791"
  ReceiveMode receive_mode = ReceiveMode::kPlainUdp;
};

// Single writer (the engine thread), any reader (/metrics).
struct NetCounters {
  Counter tx_packets;
  Counter tx_bytes;
  Counter tx_syscalls;        // sendmmsg calls
  Counter tx_errors;          // datagrams the kernel refused (counted, dropped: RoCE recovers or it is UD)
  Counter tx_queue_full;      // transmit() refused: queue full and the socket would block
  Counter tx_sport_fallback;  // packets sent from 4791 because their source port could not be bound
  Counter tx_sockets;         // per-flow sockets opened
  Counter tx_icrc_resealed;   // packets whose ICRC was recomputed for source port 4791 (fallback or fixed mode)
  Counter rx_packets;
  Counter rx_bytes;
  Counter rx_syscalls;        // recvmmsg calls that returned data
  Counter rx_errors;
  Counter rx_truncated;       // datagrams larger than kMaxRocePacket (MSG_TRUNC), dropped
  Counter rx_not_ipv4;        // a sender address that is not AF_INET, dropped
  Counter rx_not_ours;        // af-packet: to another address or an unjoined group (another device on the interface)
  Counter rx_bad_ip;          // af-packet: IP/UDP headers that do not parse, dropped

  template <class Fn>
  void for_each(Fn&& fn) const {
    fn(std::string_view("tx_packets"), tx_packets.get());
    fn(std::string_view("tx_bytes"), tx_bytes.get());
    fn(std::string_view("tx_syscalls"), tx_syscalls.get());
    fn(std::string_view("tx_errors"), tx_errors.get());
    fn(std::string_view("tx_queue_full"), tx_queue_full.get());
    fn(std::string_view("tx_sport_fallback"), tx_sport_fallback.get());
    fn(std::string_view("tx_sockets"), tx_sockets.get());
    fn(std::string_view("tx_icrc_resealed"), tx_icrc_resealed.get());
    fn(std::string_view("rx_packets"), rx_packets.get());
    fn(std::string_view("rx_bytes"), rx_bytes.get());
    fn(std::string_view("rx_syscalls"), rx_syscalls.get());
    fn(std::string_view("rx_errors"), rx_errors.get());
    fn(std::string_view("rx_truncated"), rx_truncated.get());
    fn(std::string_view("rx_not_ipv4"), rx_not_ipv4.get());
    fn(std::string_view("rx_not_ours"), rx_not_ours.get());
    fn(std::string_view("rx_bad_ip"), rx_bad_ip.get());
  }
};

// Told when a receive socket appears or goes, so the engine's parker can
// wait on it (the driver forwards it to its PollRegistry).
class FdObserver {
 public:
  virtual ~FdObserver() = default;
  virtual void fd_added(int fd) = 0;
  virtual void fd_removed(int fd) = 0;
};

class UdpNet final : public PacketIo, public MulticastMembership {
 public:
  // Opens and configures the unicast socket; EADDRINUSE when another device
  // (in this or another process) owns <address>:4791, EADDRNOTAVAIL when no
  // interface has the address. Runs the IPv4 ID probe when asked.
  static Result<std::unique_ptr<UdpNet>> open(const NetConfig& config);
  ~UdpNet() override;
  UdpNet(const UdpNet&) = delete;
  UdpNet& operator=(const UdpNet&) = delete;

  // PacketIo. enqueue() copies the packet; not accepted only when the queue
  // is full and flushing it would block (back-pressure: the QP retries
  // later). flush() sends everything queued (one sendmmsg per socket) and
  // returns how many datagrams were handed to the kernel; what the kernel
  // refused with EAGAIN stays queued for the next flush.
  Enqueued enqueue(const TxPacket& packet) override;
  int flush() override;
  std::size_t queued() const override { return tx_count_; }
  std::size_t capacity() const override;
  // Reads up to rx_batch datagrams from each ready receive socket and calls
  // fn(roce_bytes, meta) for each. Returns how many datagrams were read.
  int receive(const RxHandler& fn) override;

  // MulticastMembership, reference-counted per group. EINVAL for a group
  // outside 224.0.0.0/4 or not IPv4.
  Status join(const wire::IpAddress& group) override;
  Status leave(const wire::IpAddress& group) override;
  std::uint32_t group_refs(const wire::IpAddress& group) const;

  // The fds whose readiness means "packets to read": the unicast socket and
  // one per joined group. The observer is told of later changes.
  std::vector<int> receive_fds() const;
  void set_fd_observer(FdObserver* observer) { observer_ = observer; }

  const wire::IpAddress& address() const { return config_.address; }
  const std::string& interface_name() const { return config_.interface_name; }
  std::uint32_t rx_batch() const { return config_.rx_batch; }
  const NetReport& report() const { return report_; }
  const NetCounters& counters() const { return counters_; }

 private:
  explicit UdpNet(const NetConfig& config);
  struct TxSlot;
  struct Batch;
  struct Group {
    int fd = -1;
    std::uint32_t refs = 0;
  };
  Status open_receive(const NetConfig& config);
  int tx_socket_for(std::uint16_t src_port);
  Result<int> open_tx_socket(std::uint16_t port, bool reuse);
  bool has_room();
  int flush_socket(int fd, std::size_t first, std::size_t count);
  int receive_from(int fd, const wire::IpAddress* group, const RxHandler& fn);
  void deliver_batch(std::size_t n, const wire::IpAddress* group, const RxHandler& fn);
  int receive_ready(const RxHandler& fn);
  int receive_packets(const RxHandler& fn);
  Result<int> open_group_socket(const wire::IpAddress& group);
  bool watch(int fd, std::uint32_t group_be);
  void probe_ipv4_id();

  NetConfig config_;
  NetReport report_;
  NetCounters counters_;
  FdObserver* observer_ = nullptr;
  int unicast_fd_ = -1;
  // Plain mode: the unicast and group sockets, each keyed by its group
  // address (0 for the unicast socket); receive() asks it which are ready.
  int ready_fd_ = -1;
  std::map<std::uint16_t, int> tx_fds_;  // source port → socket (-1: could not bind, use unicast)
  std::uint32_t tx_socket_count_ = 0;
  std::map<std::uint32_t, Group> groups_;  // group address (network order as u32) → socket
  std::vector<TxSlot> tx_;
  std::size_t tx_count_ = 0;
  std::unique_ptr<Batch> batch_;
  std::optional<PacketSocketRx> packet_rx_;  // af-packet mode
};

}  // namespace qpgate::verbs::soft
