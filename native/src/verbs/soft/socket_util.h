// Small socket helpers the soft device's sockets share (net_*.cc,
// ipv4_id_probe.cc, packet_rx.cc): IPv4 address conversions, errno texts,
// int socket options and cmsgs.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "verbs/error.h"
#include "wire/ip_udp.h"

namespace qpgate::verbs::soft {

// The errno's symbolic name for any errno ("EADDRINUSE"), from glibc's
// strerrorname_np; verbs::errno_name knows only the verbs interface's own.
std::string_view errno_symbol(int code);
std::string errno_text(int code);                      // "EADDRINUSE (Address already in use)"
Error sys_error(int code, const std::string& what);    // what + ": " + errno_text

// IPv4 address helpers for sockaddr work.
std::uint32_t ipv4_be(const wire::IpAddress& a);  // network-order u32 of an IPv4 IpAddress
wire::IpAddress ipv4_from_be(std::uint32_t be);
std::string ip_to_string(const wire::IpAddress& a);
sockaddr_in make_sockaddr(std::uint32_t addr_be, std::uint16_t port);

bool set_int(int fd, int level, int name, int value);  // setsockopt of an int; false on failure
int get_int(int fd, int level, int name);              // getsockopt of an int; -1 on failure
// Receive-side options of the unicast and group sockets: SO_RCVBUF (best
// effort, the grant is reported), IP_RECVTOS and IP_RECVTTL (for RxMeta).
bool configure_receive(int fd, int rcvbuf);
// Writes one IPPROTO_IP cmsg carrying an int at `at` (CMSG_SPACE(int) bytes).
void put_int_cmsg(std::uint8_t* at, int type, int value);

}  // namespace qpgate::verbs::soft
