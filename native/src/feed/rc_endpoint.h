// One RC queue pair of the recovery protocol (a verbs::RcChannel: its own
// PD, CQ, receive and send slots), used by both ends: a gateway recovery
// session and a subscriber's recovery connection. Each session has its own
// PD, so nothing of another session (nor the snapshot region) is reachable
// through it; its QP grants the peer no remote access.
//
// Created in RESET with a random first PSN; local() is what the handshake
// tells the peer, and connect() takes the QP to RTS towards the peer learned
// there, after which the receive slots are posted. A send is encoded in
// place (send_buffer) and posted at once (post_send). One thread (the
// engine's).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "verbs/rc_channel.h"

namespace qpgate::feed {

// create() refuses recv_bytes below 64 and send_bytes below 256.
using RcEndpointConfig = verbs::RcChannelShape;

class RcEndpoint {
 public:
  static verbs::Result<std::unique_ptr<RcEndpoint>> create(verbs::Device& device, const RcEndpointConfig& config);

  // What to tell the peer in the handshake (our QPN, first PSN, GID, MTU,
  // and the alternate GID when the device has a second address; after
  // connect() only when the peer had one too: the path is armed).
  verbs::RcPeer local() const { return local_; }
  verbs::Status connect(const verbs::RcPeer& peer, const verbs::RcParams& params);
  verbs::RcPathInfo path() const { return channel_->path(); }
  // After a migration the peer followed, the path left becomes the alternate again (RcChannel::rearm).
  verbs::Result<bool> rearm() { return channel_->rearm(); }
  bool connected() const { return connected_; }
  // The QP went to ERR (a completion with an error status, or closed).
  bool failed() const { return failed_; }
  void fail();

  struct Completion {
    enum class Kind : std::uint8_t { kReceived, kSent, kError } kind;
    std::uint32_t slot;
    std::span<const std::uint8_t> bytes;  // kReceived: valid until repost(slot)
    verbs::WcStatus status = verbs::WcStatus::IBV_WC_SUCCESS;  // kError: why
  };
  // Polls up to out.size() completions; a send completion frees its slot.
  std::size_t poll(std::span<Completion> out);
  void repost(std::uint32_t recv_slot);

  // A free send slot to encode into (send_bytes long), or empty when all are in flight.
  std::span<std::uint8_t> send_buffer() { return channel_->send_slot(); }
  // Posts the slot last returned by send_buffer() with `length` bytes.
  bool post_send(std::size_t length);
  std::uint32_t free_send_slots() const { return static_cast<std::uint32_t>(channel_->free_send_slots()); }
  std::uint32_t qpn() const { return local_.qpn; }
  verbs::QpState state() const { return channel_->state(); }

 private:
  explicit RcEndpoint(std::unique_ptr<verbs::RcChannel> channel) : channel_(std::move(channel)) {}

  std::unique_ptr<verbs::RcChannel> channel_;
  verbs::RcPeer local_;
  std::uint8_t sgid_index_ = 0;  // local_.gid's entry (verbs/source_gid.h)
  std::optional<std::uint8_t> alt_sgid_index_;  // local_.alt_gid's entry
  bool connected_ = false;
  bool failed_ = false;
};

}  // namespace qpgate::feed
