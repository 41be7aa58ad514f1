// The reference captures (shared/captures, real rxe traffic) as test vectors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qpgate::testing {

struct CapturePacket {
  std::string file;   // e.g. "more/rc-imm.pcap"
  std::size_t frame;  // 1-based, as tshark numbers frames
  std::vector<std::uint8_t> ip;  // the IP datagram (Ethernet header stripped)
};

// The directory the build was configured with (QPGATE_CAPTURE_DIR).
std::string capture_dir();
bool capture_dir_exists();

// Every UDP:4791 packet of every *.pcap in capture_dir() and capture_dir()/more,
// in file-name then frame order. `files` (optional) receives the file names.
std::vector<CapturePacket> load_reference_packets(std::vector<std::string>* files = nullptr);
// Only the packets of one file, e.g. "more/rc-imm.pcap".
std::vector<CapturePacket> load_reference_packets(const std::string& file);

}  // namespace qpgate::testing

// The captures ship with the repository (test/fixtures/captures), so a
// missing directory is a broken checkout or build setting: fail, never skip.
#define QPGATE_REQUIRE_CAPTURES()                                                  \
  do {                                                                             \
    if (!::qpgate::testing::capture_dir_exists())                                  \
      FAIL() << "no reference captures at " << ::qpgate::testing::capture_dir();   \
  } while (0)
