// UdpNet's start-up check of the IPv4 ID the kernel writes (net.h: the
// ICRC our QPs compute assumes ID 0).
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "verbs/soft/key_gen.h"
#include "verbs/soft/net.h"

namespace qpgate::verbs::soft {
namespace {
constexpr std::uint64_t kProbeTimeoutNs = 300'000'000;
}  // namespace

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
  const std::uint64_t deadline = monotonic_ns() + kProbeTimeoutNs;
  std::array<std::uint8_t, 2048> frame{};
  while (monotonic_ns() < deadline) {
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

}  // namespace qpgate::verbs::soft
