#include "verbs/gid.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace qpgate::verbs {

namespace {
constexpr std::array<std::uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
}  // namespace

Gid Gid::from_ipv4(std::uint32_t ipv4_host) {
  Gid g;
  std::memcpy(g.raw.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
  g.raw[12] = static_cast<std::uint8_t>(ipv4_host >> 24);
  g.raw[13] = static_cast<std::uint8_t>(ipv4_host >> 16);
  g.raw[14] = static_cast<std::uint8_t>(ipv4_host >> 8);
  g.raw[15] = static_cast<std::uint8_t>(ipv4_host);
  return g;
}

std::optional<Gid> Gid::parse(std::string_view text) {
  if (text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN] = {};
  std::memcpy(buf, text.data(), text.size());
  if (auto v4 = ipv4_parse(text)) return from_ipv4(*v4);
  Gid g;
  if (inet_pton(AF_INET6, buf, g.raw.data()) != 1) return std::nullopt;
  return g;
}

bool Gid::is_zero() const {
  for (auto b : raw) {
    if (b != 0) return false;
  }
  return true;
}

bool Gid::is_ipv4_mapped() const {
  return std::memcmp(raw.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size()) == 0;
}

std::optional<std::uint32_t> Gid::to_ipv4() const {
  if (!is_ipv4_mapped()) return std::nullopt;
  return (std::uint32_t{raw[12]} << 24) | (std::uint32_t{raw[13]} << 16) | (std::uint32_t{raw[14]} << 8) |
         std::uint32_t{raw[15]};
}

bool Gid::is_multicast() const {
  if (raw[0] == 0xff) return true;
  const auto v4 = to_ipv4();
  return v4.has_value() && ipv4_is_multicast(*v4);
}

std::string Gid::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, raw.data(), buf, sizeof buf) == nullptr) return to_long_string();
  return buf;
}

std::string Gid::to_long_string() const {
  char buf[40] = {};
  std::size_t n = 0;
  for (std::size_t i = 0; i < 16; i += 2) {
    n += static_cast<std::size_t>(std::snprintf(buf + n, sizeof buf - n, i == 0 ? "%02x%02x" : ":%02x%02x",
                                                raw[i], raw[i + 1]));
  }
  return std::string(buf, n);
}

std::string ipv4_to_string(std::uint32_t ipv4_host) {
  char buf[16] = {};
  const int n = std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", (ipv4_host >> 24) & 0xffu, (ipv4_host >> 16) & 0xffu,
                              (ipv4_host >> 8) & 0xffu, ipv4_host & 0xffu);
  return std::string(buf, static_cast<std::size_t>(n));
}

std::optional<std::uint32_t> ipv4_parse(std::string_view text) {
  if (text.empty() || text.size() >= INET_ADDRSTRLEN) return std::nullopt;
  char buf[INET_ADDRSTRLEN] = {};
  std::memcpy(buf, text.data(), text.size());
  in_addr a{};
  if (inet_pton(AF_INET, buf, &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

}  // namespace qpgate::verbs
