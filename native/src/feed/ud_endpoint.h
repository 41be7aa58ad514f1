// The verbs objects one feed endpoint (a publisher or a subscriber) uses: a
// PD, one CQ, one registered buffer and a UD QP in RTS, made on a
// verbs::Device (the soft device or an ibv one) on the engine thread that
// drives it. Destroyed in the reverse order (the QP first).
//
// A publisher whose line B leaves from a second device (an ibv gateway's
// backend.alternateDevice) has a second endpoint there that registers the
// first one's buffer instead of owning one: each frame is copied once and
// sent from both devices.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "verbs/device.h"

namespace qpgate::feed {

// The Q_Key every feed QP uses (high bit clear: not a controlled Q_Key).
inline constexpr std::uint32_t kFeedQkey = 0x0FEED001;
// UD receive buffers start with the 40-byte GRH area (IBA 11.4.1.2).
inline constexpr std::size_t kGrhBytes = 40;

struct UdEndpoint {
  std::unique_ptr<verbs::ProtectionDomain> pd;
  std::unique_ptr<verbs::CompletionQueue> cq;
  std::vector<std::uint8_t> buffer;   // owned memory (empty when `memory` is another endpoint's)
  std::span<std::uint8_t> memory;     // what `mr` registers: `buffer`, or another endpoint's
  std::unique_ptr<verbs::MemoryRegion> mr;
  std::unique_ptr<verbs::QueuePair> qp;

  ~UdEndpoint() {
    qp.reset();  // before the CQ and the memory its WQEs point at
    mr.reset();
  }
  std::uint8_t* at(std::size_t offset) { return memory.data() + offset; }
  verbs::Sge sge(std::size_t offset, std::uint32_t length) const {
    return verbs::Sge{reinterpret_cast<std::uint64_t>(memory.data() + offset), length, mr->lkey()};
  }
};

struct UdEndpointConfig {
  std::size_t buffer_bytes = 0;
  std::uint32_t send_wr = 0;
  std::uint32_t recv_wr = 0;
  std::uint32_t qkey = kFeedQkey;
};

// `buffer`: memory allocated beforehand (off the engine thread) of
// config.buffer_bytes; otherwise the buffer is allocated here.
verbs::Result<std::unique_ptr<UdEndpoint>> make_ud_endpoint(verbs::Device& device, const UdEndpointConfig& config,
                                                            std::vector<std::uint8_t> buffer = {});
// An endpoint on `device` over `memory`, which another endpoint owns and
// which must outlive this one (config.buffer_bytes is ignored).
verbs::Result<std::unique_ptr<UdEndpoint>> make_ud_endpoint_over(verbs::Device& device, const UdEndpointConfig& config,
                                                                 std::span<std::uint8_t> memory);

// A group's MGID (::ffff:a.b.c.d) from a host-order IPv4 multicast address.
verbs::Gid group_gid(std::uint32_t group_host);

}  // namespace qpgate::feed
