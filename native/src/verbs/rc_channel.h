// One RC queue pair that exchanges SENDs through fixed-size slots, the
// shape every gateway RC session has (order entry, risk, feed recovery, and
// the subscriber's recovery connection):
//
//   - a protection domain of its own, so nothing of another session is
//     reachable through it (the owner may register more in pd(): e.g. the
//     risk-region grants of an order-entry session);
//   - one CQ for both queues, one CQE per posted WR at most, so sized
//     recv_slots + send_slots it cannot overflow;
//   - receive slots in an MR with LOCAL_WRITE (the HCA writes them) and send
//     slots in an MR with no access at all (the HCA only reads them);
//   - the RC QP, created in RESET and taken to RTS by connect()
//     (verbs::connect_rc), after which every receive slot is posted.
//
// A receive slot is either posted or released: release_receive() after its
// bytes were consumed, repost_receives() posts all released ones in one
// call (an owner under back-pressure may hold them: the peer then meets RNR
// NAKs). Send slots are a ring: SEND completions of one send queue come
// back in order, so the oldest slot in flight is always the next to free.
// Sends are staged (stage_send) and posted together (flush_sends); every
// SEND is signaled, and poll() frees its slot when it completes.
//
// Only the verbs interface (verbs/device.h): the soft and ibv backends
// behave alike. One thread (the engine's).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "verbs/device.h"
#include "verbs/rc_connect.h"
#include "verbs/rc_path.h"

namespace qpgate::verbs {

// How often a long-lived RC session looks at its QP between completions:
// at its state (an error no completion reported yet) and, after a migration,
// whether it can re-arm (rearm()). The order service, the recovery service
// and a subscriber's recovery connection all use this period, so a session
// that migrated is armed again within it of the peer following and the link
// it left being up.
inline constexpr std::uint64_t kRcCheckIntervalNs = 10'000'000;

struct RcChannelShape {
  std::uint32_t recv_slots = 16;
  std::uint32_t recv_bytes = 4096;
  std::uint32_t send_slots = 16;
  std::uint32_t send_bytes = 4096;
  std::uint64_t context = 0;  // the CQ's and the QP's context (async events name the QP by it)
};

class RcChannel {
 public:
  // Errors name the step that failed ("create_qp: ...").
  static Result<std::unique_ptr<RcChannel>> create(Device& device, const RcChannelShape& shape);
  ~RcChannel();
  RcChannel(const RcChannel&) = delete;
  RcChannel& operator=(const RcChannel&) = delete;

  ProtectionDomain& pd() noexcept { return *pd_; }
  std::uint32_t qpn() const noexcept { return qp_->qp_num(); }
  QpState state() const { return qp_->state(); }
  const RcChannelShape& shape() const noexcept { return shape_; }

  // RESET → RTS towards `peer`, then posts the receive slots (those it
  // could not post stay released: see held_receives()).
  // retry_cnt at most the device's max_retry_cnt (rxe reads 7 as retry forever).
  Status connect(const RcParams& local, const RcPeer& peer);
  // The path the QP runs on (rc_path.h), towards the peer connect() was given.
  RcPathInfo path() const { return rc_path_info(*qp_, peer_, armed_); }
  // After a migration, once nothing of ours is unacknowledged (the peer
  // followed) and the link of the path the QP left is up again: that path
  // becomes its alternate again (rearm_rc). True if it re-armed.
  Result<bool> rearm();
  // QP → ERR: the peer's next request fails; our posted WRs flush.
  void to_error();

  // Up to out.size() completions; EOVERFLOW (the QP is in ERR then) as an
  // error. A SEND completion, whatever its status, frees its send slot.
  Result<std::size_t> poll(std::span<Wc> out);
  static bool is_send(const Wc& wc) noexcept { return (wc.wr_id & kSendTag) != 0; }
  static std::uint32_t slot_of(const Wc& wc) noexcept { return static_cast<std::uint32_t>(wc.wr_id); }
  // The bytes of a successful receive completion, valid until its slot is
  // posted again (empty if the slot or length is impossible).
  std::span<const std::uint8_t> received(const Wc& wc) const noexcept;

  // Receive slot `slot` may be posted again (its bytes were consumed).
  void release_receive(std::uint32_t slot) noexcept;
  // Posts the released receives in one call; returns how many.
  std::size_t repost_receives();
  std::size_t held_receives() const noexcept { return released_.size(); }

  std::size_t free_send_slots() const noexcept { return shape_.send_slots - sends_in_flight_ - staged_.size(); }
  std::uint32_t sends_in_flight() const noexcept { return sends_in_flight_; }
  // The next send slot to write into (send_bytes long); empty when none is free.
  std::span<std::uint8_t> send_slot() noexcept;
  // Stages a SEND of the first `length` bytes of send_slot() (free_send_slots() > 0).
  void stage_send(std::size_t length) noexcept;
  // Posts the staged sends in one call; the Status of the post.
  Status flush_sends();

 private:
  // Send work request ids are tagged so a completion names its queue.
  static constexpr std::uint64_t kSendTag = std::uint64_t{1} << 63;

  RcChannel(Device& device, const RcChannelShape& shape) : device_(&device), shape_(shape) {}

  Device* device_;  // outlives the channel (its owner's); rearm() asks it about links
  RcChannelShape shape_;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<CompletionQueue> cq_;
  std::vector<std::uint8_t> recv_buffer_;
  std::vector<std::uint8_t> send_buffer_;
  std::unique_ptr<MemoryRegion> recv_mr_;
  std::unique_ptr<MemoryRegion> send_mr_;
  std::unique_ptr<QueuePair> qp_;
  std::vector<std::uint32_t> released_;  // receive slots to post again
  std::vector<Sge> recv_sges_;           // one per receive slot, fixed
  std::vector<RecvWr> recv_wrs_;         // scratch for repost_receives
  std::vector<Sge> send_sges_;           // one per send slot (a staged WR points at it)
  std::vector<SendWr> staged_;
  std::uint32_t next_send_slot_ = 0;
  std::uint32_t sends_in_flight_ = 0;
  RcParams local_;      // what connect() was given
  RcPeer peer_;
  bool armed_ = false;  // connect() loaded an alternate path (arms_alternate)
};

}  // namespace qpgate::verbs
