#include "verbs/soft/socket_util.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

namespace qpgate::verbs::soft {

std::string_view errno_symbol(int code) {
  const std::string_view known = errno_name(code);
  if (known != "E?") return known;
  const char* name = strerrorname_np(code);
  return name != nullptr ? std::string_view(name) : known;
}

std::string errno_text(int code) { return std::string(errno_symbol(code)) + " (" + std::strerror(code) + ")"; }

Error sys_error(int code, const std::string& what) { return Error{code, what + ": " + errno_text(code)}; }

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

sockaddr_in make_sockaddr(std::uint32_t addr_be, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr_be;
  sa.sin_port = htons(port);
  return sa;
}

bool set_int(int fd, int level, int name, int value) { return setsockopt(fd, level, name, &value, sizeof value) == 0; }

int get_int(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof value;
  if (getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

bool configure_receive(int fd, int rcvbuf) {
  set_int(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf);
  return set_int(fd, IPPROTO_IP, IP_RECVTOS, 1) && set_int(fd, IPPROTO_IP, IP_RECVTTL, 1);
}

void put_int_cmsg(std::uint8_t* at, int type, int value) {
  cmsghdr header{};
  header.cmsg_level = IPPROTO_IP;
  header.cmsg_type = type;
  header.cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(at, &header, sizeof header);
  std::memcpy(at + CMSG_LEN(0), &value, sizeof value);
}

}  // namespace qpgate::verbs::soft
