// One RC queue pair of the recovery protocol with its own PD, CQ and one
// registered buffer split into receive slots and send slots, used by both
// ends: a gateway recovery session and a subscriber's recovery connection.
// Each session has its own PD, so nothing of another session (nor the
// snapshot region) is reachable through it; the MR is LOCAL_WRITE only.
//
// Created in RESET; connect() takes it to RTS towards the peer learned in the
// handshake (verbs::connect_rc), after which the receive slots are posted.
// Send slots are handed out round robin and freed by their completions.
// One thread (the engine's).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "verbs/device.h"
#include "verbs/rc_connect.h"

namespace qpgate::feed {

struct RcEndpointConfig {
  std::uint32_t recv_slots = 16;
  std::uint32_t recv_bytes = 4096;
  std::uint32_t send_slots = 16;
  std::uint32_t send_bytes = 4096;
};

class RcEndpoint {
 public:
  static verbs::Result<std::unique_ptr<RcEndpoint>> create(verbs::Device& device, const RcEndpointConfig& config);
  ~RcEndpoint();
  RcEndpoint(const RcEndpoint&) = delete;
  RcEndpoint& operator=(const RcEndpoint&) = delete;

  // What to tell the peer in the handshake (our QPN, first PSN, GID, MTU).
  verbs::RcPeer local() const { return local_; }
  verbs::Status connect(const verbs::RcPeer& peer, const verbs::RcParams& params);
  bool connected() const { return connected_; }
  // The QP went to ERR (a completion with an error status, or closed).
  bool failed() const { return failed_; }
  void fail();

  struct Completion {
    enum class Kind : std::uint8_t { kReceived, kSent, kError } kind;
    std::uint32_t slot;
    std::span<const std::uint8_t> bytes;  // kReceived: valid until repost(slot)
  };
  // Polls up to out.size() completions; a send completion frees its slot.
  std::size_t poll(std::span<Completion> out);
  void repost(std::uint32_t recv_slot);

  // A free send slot to encode into (send_bytes long), or empty when all are in flight.
  std::span<std::uint8_t> send_buffer();
  // Posts the slot last returned by send_buffer() with `length` bytes.
  bool post_send(std::size_t length);
  std::uint32_t free_send_slots() const { return free_send_; }
  std::uint32_t qpn() const { return local_.qpn; }
  verbs::QpState state() const;

 private:
  RcEndpoint(const RcEndpointConfig& config) : config_(config) {}
  verbs::Sge sge(std::size_t offset, std::uint32_t length) const;
  std::size_t send_offset(std::uint32_t slot) const {
    return std::size_t{config_.recv_slots} * config_.recv_bytes + std::size_t{slot} * config_.send_bytes;
  }

  RcEndpointConfig config_;
  std::unique_ptr<verbs::ProtectionDomain> pd_;
  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::vector<std::uint8_t> buffer_;
  std::unique_ptr<verbs::MemoryRegion> mr_;
  std::unique_ptr<verbs::QueuePair> qp_;
  verbs::RcPeer local_;
  std::vector<bool> send_busy_;
  std::uint32_t next_send_ = 0;
  std::uint32_t free_send_ = 0;
  bool connected_ = false;
  bool failed_ = false;
};

}  // namespace qpgate::feed
