// Classic pcap (libpcap 2.4) reading and writing for tests and tools: enough
// to replay the reference captures and to write files tshark opens. Not for
// production I/O.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace qpgate::testing {

inline constexpr std::uint32_t kLinkTypeEthernet = 1;

struct PcapRecord {
  std::uint32_t ts_sec = 0;
  std::uint32_t ts_usec = 0;  // or ns, for a nanosecond-magic file
  std::vector<std::uint8_t> data;  // the captured bytes (incl_len)
};

struct PcapFile {
  std::uint32_t link_type = 0;
  std::vector<PcapRecord> records;
};

// Reads a whole classic pcap file, either byte order, µs or ns magic.
// On failure returns false and says why in *error.
bool read_pcap(const std::string& path, PcapFile* out, std::string* error);

class PcapWriter {
 public:
  // Opens `path` for writing and writes the global header (Ethernet link type).
  explicit PcapWriter(const std::string& path, std::uint32_t link_type = kLinkTypeEthernet);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  bool ok() const { return file_ != nullptr; }
  bool write(std::span<const std::uint8_t> frame, std::uint32_t ts_sec = 0,
             std::uint32_t ts_usec = 0);

 private:
  std::FILE* file_ = nullptr;
};

// An Ethernet II frame around an IP datagram (ethertype from the IP version).
std::vector<std::uint8_t> ethernet_frame(std::span<const std::uint8_t> ip_datagram);

// The IP datagram inside an Ethernet II frame (one 802.1Q tag allowed), or an
// empty span when the frame carries neither IPv4 nor IPv6.
std::span<const std::uint8_t> ip_of_ethernet(std::span<const std::uint8_t> frame);

}  // namespace qpgate::testing
