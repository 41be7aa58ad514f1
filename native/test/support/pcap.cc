#include "support/pcap.h"

#include <cstdio>
#include <cstring>
#include <memory>

namespace qpgate::testing {
namespace {

constexpr std::uint32_t kMagicUsec = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNsec = 0xa1b23c4d;
constexpr std::uint32_t kMaxSnap = 262144;

std::uint32_t swap32(std::uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

bool read_pcap(const std::string& path, PcapFile* out, std::string* error) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    *error = "cannot open " + path;
    return false;
  }
  std::uint32_t gh[6];
  if (std::fread(gh, sizeof gh, 1, f.get()) != 1) {
    *error = path + ": shorter than the 24-byte pcap header";
    return false;
  }
  bool swapped = false;
  if (gh[0] == kMagicUsec || gh[0] == kMagicNsec) {
    swapped = false;
  } else if (swap32(gh[0]) == kMagicUsec || swap32(gh[0]) == kMagicNsec) {
    swapped = true;
  } else {
    *error = path + ": not a classic pcap file (pcapng?)";
    return false;
  }
  auto host = [&](std::uint32_t v) { return swapped ? swap32(v) : v; };
  out->link_type = host(gh[5]);
  out->records.clear();
  for (;;) {
    std::uint32_t rh[4];
    const std::size_t got = std::fread(rh, sizeof rh, 1, f.get());
    if (got != 1) break;
    PcapRecord r;
    r.ts_sec = host(rh[0]);
    r.ts_usec = host(rh[1]);
    const std::uint32_t incl = host(rh[2]);
    if (incl > kMaxSnap) {
      *error = path + ": record longer than any snaplen";
      return false;
    }
    r.data.resize(incl);
    if (incl != 0 && std::fread(r.data.data(), incl, 1, f.get()) != 1) {
      *error = path + ": truncated record";
      return false;
    }
    out->records.push_back(std::move(r));
  }
  return true;
}

PcapWriter::PcapWriter(const std::string& path, std::uint32_t link_type)
    : file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) return;
  // All fields in host order; readers detect it from the magic.
  const std::uint32_t magic = kMagicUsec;
  const std::uint16_t version[2] = {2, 4};
  const std::uint32_t rest[4] = {0 /* thiszone */, 0 /* sigfigs */, kMaxSnap, link_type};
  std::fwrite(&magic, sizeof magic, 1, file_);
  std::fwrite(version, sizeof version, 1, file_);
  std::fwrite(rest, sizeof rest, 1, file_);
}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool PcapWriter::write(std::span<const std::uint8_t> frame, std::uint32_t ts_sec,
                       std::uint32_t ts_usec) {
  if (file_ == nullptr) return false;
  const auto len = static_cast<std::uint32_t>(frame.size());
  const std::uint32_t rh[4] = {ts_sec, ts_usec, len, len};
  return std::fwrite(rh, sizeof rh, 1, file_) == 1 &&
         (frame.empty() || std::fwrite(frame.data(), frame.size(), 1, file_) == 1);
}

std::vector<std::uint8_t> ethernet_frame(std::span<const std::uint8_t> ip) {
  // Locally administered MACs: 02:00:00:00:00:01 → 02:00:00:00:00:02.
  std::vector<std::uint8_t> f = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  const bool v6 = !ip.empty() && (ip[0] >> 4) == 6;
  f.push_back(v6 ? 0x86 : 0x08);
  f.push_back(v6 ? 0xdd : 0x00);
  f.insert(f.end(), ip.begin(), ip.end());
  return f;
}

std::span<const std::uint8_t> ip_of_ethernet(std::span<const std::uint8_t> frame) {
  std::size_t at = 12;
  if (frame.size() < at + 2) return {};
  std::uint16_t type = static_cast<std::uint16_t>((frame[at] << 8) | frame[at + 1]);
  if (type == 0x8100) {
    at += 4;
    if (frame.size() < at + 2) return {};
    type = static_cast<std::uint16_t>((frame[at] << 8) | frame[at + 1]);
  }
  at += 2;
  if (type != 0x0800 && type != 0x86dd) return {};
  return frame.subspan(at);
}

}  // namespace qpgate::testing
