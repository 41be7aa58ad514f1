// Helpers of the soft device tests: plain UDP sockets on loopback addresses
// that play a peer (or a spoofer), and small waits.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "wire/ip_udp.h"

namespace qpgate::verbs::soft::test {

inline wire::IpAddress ip(const char* text) {
  in_addr a{};
  inet_pton(AF_INET, text, &a);
  wire::IpAddress out;
  std::memcpy(out.bytes.data(), &a.s_addr, 4);
  return out;
}

// A plain UDP socket bound to addr:port (port 0: any).
class PlainSocket {
 public:
  PlainSocket(const char* addr, std::uint16_t port, bool reuse = false) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (reuse) setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    setsockopt(fd_, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    inet_pton(AF_INET, addr, &sa.sin_addr);
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
  }
  ~PlainSocket() { close(fd_); }
  PlainSocket(const PlainSocket&) = delete;
  PlainSocket& operator=(const PlainSocket&) = delete;

  bool bound() const { return bound_; }
  std::uint16_t port() const { return port_; }
  int fd() const { return fd_; }

  bool send_to(const char* addr, std::uint16_t port, const void* data, std::size_t len) const {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    inet_pton(AF_INET, addr, &sa.sin_addr);
    return sendto(fd_, data, len, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == static_cast<ssize_t>(len);
  }

  struct Datagram {
    std::vector<std::uint8_t> bytes;
    std::uint16_t src_port = 0;
    std::string src;
    int tos = -1;
    int ttl = -1;
  };
  // Waits up to timeout_ms for one datagram.
  bool recv(Datagram& out, int timeout_ms = 1000) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    std::uint8_t buf[9000];
    std::uint8_t control[256];
    sockaddr_in from{};
    iovec iov{buf, sizeof buf};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd_, &m, MSG_DONTWAIT);
    if (n < 0) return false;
    out.bytes.assign(buf, buf + n);
    out.src_port = ntohs(from.sin_port);
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
    out.src = text;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != IPPROTO_IP) continue;
      if (c->cmsg_type == IP_TOS) out.tos = *CMSG_DATA(c);
      if (c->cmsg_type == IP_TTL) std::memcpy(&out.ttl, CMSG_DATA(c), sizeof(int));
    }
    return true;
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
  std::uint16_t port_ = 0;
};

// Calls step() until done() or the timeout; true when done.
inline bool spin_until(const std::function<bool()>& done, const std::function<void()>& step,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    step();
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  step();
  return done();
}

}  // namespace qpgate::verbs::soft::test
