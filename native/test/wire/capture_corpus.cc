#include "capture_corpus.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "support/pcap.h"
#include "wire/ip_udp.h"

namespace qpgate::testing {
namespace fs = std::filesystem;

std::string capture_dir() { return QPGATE_CAPTURE_DIR; }

bool capture_dir_exists() { return fs::is_directory(capture_dir()); }

namespace {

void append_file(const fs::path& path, const std::string& name, std::vector<CapturePacket>* out) {
  PcapFile pcap;
  std::string error;
  if (!read_pcap(path.string(), &pcap, &error)) throw std::runtime_error(error);
  if (pcap.link_type != kLinkTypeEthernet) throw std::runtime_error(name + ": not Ethernet");
  for (std::size_t i = 0; i < pcap.records.size(); ++i) {
    const auto ip = ip_of_ethernet(pcap.records[i].data);
    if (ip.empty()) continue;
    // Only RoCEv2 datagrams; ARP, ND and friends are not vectors.
    if (!wire::parse_ip_udp(ip).ok()) continue;
    out->push_back(CapturePacket{name, i + 1, std::vector<std::uint8_t>(ip.begin(), ip.end())});
  }
}

}  // namespace

std::vector<CapturePacket> load_reference_packets(std::vector<std::string>* files) {
  std::vector<CapturePacket> out;
  std::vector<std::string> names;
  for (const char* sub : {"", "more/"}) {
    const fs::path dir = fs::path(capture_dir()) / sub;
    if (!fs::is_directory(dir)) continue;
    std::vector<std::string> here;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".pcap") here.push_back(std::string(sub) + e.path().filename().string());
    }
    std::sort(here.begin(), here.end());
    names.insert(names.end(), here.begin(), here.end());
  }
  for (const auto& n : names) append_file(fs::path(capture_dir()) / n, n, &out);
  if (files != nullptr) *files = names;
  return out;
}

std::vector<CapturePacket> load_reference_packets(const std::string& file) {
  std::vector<CapturePacket> out;
  append_file(fs::path(capture_dir()) / file, file, &out);
  return out;
}

}  // namespace qpgate::testing
