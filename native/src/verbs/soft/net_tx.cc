// UdpNet's transmit side (net.h): the per-flow source-port sockets, the
// fixed transmit queue and its sendmmsg flush.
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "verbs/soft/net.h"
#include "verbs/soft/net_batch.h"
#include "wire/icrc.h"

namespace qpgate::verbs::soft {

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

std::size_t UdpNet::capacity() const { return tx_.size(); }

bool UdpNet::has_room() {
  if (tx_count_ < tx_.size()) return true;
  flush();
  return tx_count_ < tx_.size();
}

Enqueued UdpNet::enqueue(const TxPacket& packet) {
  if (packet.roce.size() > kMaxRocePacket || packet.flow.dst.family != wire::IpFamily::kIpv4) {
    counters_.tx_errors.inc();  // a QP bug; refusing it would stall the QP forever
    return Enqueued{true, {}};
  }
  if (!has_room()) {
    counters_.tx_queue_full.inc();
    return Enqueued{false, {}};
  }
  TxSlot& slot = tx_[tx_count_++];
  slot.fd = tx_socket_for(packet.flow.src_port);
  slot.dst = make_sockaddr(ipv4_be(packet.flow.dst), packet.flow.dst_port);
  slot.tos = packet.traffic_class;
  slot.ttl = packet.hop_limit == 0 ? 64 : packet.hop_limit;
  slot.length = static_cast<std::uint16_t>(packet.roce.size());
  std::memcpy(slot.bytes.data(), packet.roce.data(), packet.roce.size());
  const std::span<std::uint8_t> bytes(slot.bytes.data(), slot.length);
  if (slot.fd == unicast_fd_ && packet.flow.src_port != wire::kRoceV2Port && packet.roce.size() >= 16) {
    // It leaves from 4791, not the port the QP sealed it for: the ICRC
    // covers the UDP ports, so seal it again for the flow it really takes.
    wire::UdpFlow real = packet.flow;
    real.src = config_.address;
    real.src_port = wire::kRoceV2Port;
    wire::icrc_store(bytes, real);
    counters_.tx_icrc_resealed.inc();
  }
  return Enqueued{true, bytes};
}

// Sends tx_[first, first+count), all for `fd`. Returns how many are done
// (sent, or refused for good and counted); fewer than count on EAGAIN.
int UdpNet::flush_socket(int fd, std::size_t first, std::size_t count) {
  Batch& s = *batch_;
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

}  // namespace qpgate::verbs::soft
