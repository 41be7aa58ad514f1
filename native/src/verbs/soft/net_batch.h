// UdpNet's fixed buffers (net.h), shared by its transmit and receive files
// (net_tx.cc, net_rx.cc): allocated once at open, never per packet.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "verbs/soft/net.h"

namespace qpgate::verbs::soft {

inline constexpr std::size_t kTxCmsgSpace = CMSG_SPACE(sizeof(int)) * 2;  // IP_TOS, IP_TTL
inline constexpr std::size_t kRxCmsgSpace = CMSG_SPACE(sizeof(int)) * 4;
// Ready sockets taken per receive(); more stay ready (level-triggered) and
// epoll hands them out next pass, round-robin.
inline constexpr int kMaxReadySockets = 64;

struct UdpNet::TxSlot {
  int fd = -1;
  sockaddr_in dst{};
  std::uint8_t tos = 0;
  std::uint8_t ttl = 64;
  std::uint16_t length = 0;
  std::array<std::uint8_t, kMaxRocePacket> bytes{};
};

struct UdpNet::Batch {
  Batch(std::uint32_t rx_batch, std::uint32_t tx_queue)
      : data(static_cast<std::size_t>(rx_batch) * kMaxRocePacket),
        control(static_cast<std::size_t>(rx_batch) * kRxCmsgSpace),
        from(rx_batch),
        iov(rx_batch),
        msgs(rx_batch),
        tx_msgs(tx_queue),
        tx_iov(tx_queue),
        tx_control(static_cast<std::size_t>(tx_queue) * kTxCmsgSpace) {
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      iov[i] = iovec{data.data() + i * kMaxRocePacket, kMaxRocePacket};
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_control = control.data() + i * kRxCmsgSpace;
    }
    rearm(msgs.size());
  }
  // recvmmsg shortens the name and control lengths of the entries it filled:
  // give the first n back their full room (the rest were not touched), so a
  // receive that finds nothing costs no header set-up.
  void rearm(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      msgs[i].msg_hdr.msg_controllen = kRxCmsgSpace;
    }
  }
  // recvmmsg
  std::vector<std::uint8_t> data;
  std::vector<std::uint8_t> control;
  std::vector<sockaddr_in> from;
  std::vector<iovec> iov;
  std::vector<mmsghdr> msgs;
  std::array<epoll_event, kMaxReadySockets> ready{};
  // sendmmsg
  std::vector<mmsghdr> tx_msgs;
  std::vector<iovec> tx_iov;
  std::vector<std::uint8_t> tx_control;
};

}  // namespace qpgate::verbs::soft
