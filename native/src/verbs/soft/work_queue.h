// Send and receive queue storage of the soft device: what post_send and
// post_recv validate and copy, held until the requester/responder consumes
// it. Depths (max_send_wr/max_recv_wr), SGE counts and the inline limit are
// fixed at creation; all memory is allocated then, none when posting.
//
// Posting beyond the depth fails with ENOMEM and the first WR not posted, as
// ibv_post_send/ibv_post_recv do; a malformed WR fails with EINVAL. The WRs
// before the bad one stay posted. Which QP states accept posts is the QP's
// to check (check_post_send_state / check_post_recv_state).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "verbs/attr.h"
#include "verbs/device.h"
#include "verbs/error.h"
#include "verbs/types.h"
#include "verbs/wr.h"

namespace qpgate::verbs::soft {

inline constexpr std::uint32_t kMaxSge = 32;              // rxe RXE_MAX_SGE
inline constexpr std::uint32_t kMaxQpWr = 0x4000;         // rxe RXE_MAX_QP_WR
inline constexpr std::uint32_t kMaxInlineData = 400;      // rxe RXE_MAX_INLINE_DATA
inline constexpr std::uint32_t kMaxMsgSize = 0x800000;    // rxe RXE_PORT_MAX_MSG_SZ (8 MiB)

// post_send is accepted in RTS, SQD (queued, not sent until RTS), SQE and ERR
// (both complete it with IBV_WC_WR_FLUSH_ERR); EINVAL in RESET, INIT, RTR,
// as rxe answers.
Status check_post_send_state(QpState s);
// post_recv is accepted from INIT on (ERR: flushed); EINVAL in RESET.
Status check_post_recv_state(QpState s);

// Caps a QP may be created with on the soft device; EINVAL naming the cap.
Status check_qp_cap(const QpCap& cap, bool has_srq);

// ---------------------------------------------------------------- receive
struct RecvWqe {
  std::uint64_t wr_id = 0;
  std::uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sge{};
  std::uint64_t length = 0;  // sum of the SGE lengths

  std::span<const Sge> sg_list() const { return {sge.data(), num_sge}; }
};

// A ring of receive WQEs: a QP's receive queue, or an SRQ's.
class ReceiveRing {
 public:
  // `what` names the queue in error messages ("RQ of QP 0x11", "SRQ 3").
  ReceiveRing(std::uint32_t max_wr, std::uint32_t max_sge, std::string what);

  PostRecvResult post(const RecvWr& first);  // follows next
  PostRecvResult post(std::span<const RecvWr> wrs);

  const RecvWqe* front() const { return count_ == 0 ? nullptr : &ring_[head_]; }
  void pop();
  std::optional<RecvWqe> take();  // front() copied, then pop()

  std::uint32_t size() const { return count_; }
  std::uint32_t capacity() const { return static_cast<std::uint32_t>(ring_.size()); }
  std::uint32_t max_sge() const { return max_sge_; }
  bool empty() const { return count_ == 0; }

 private:
  Status post_one(const RecvWr& wr, std::size_t index);

  std::vector<RecvWqe> ring_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::uint32_t max_sge_;
  std::string what_;
};

// ---------------------------------------------------------------- send
struct SendWqe {
  std::uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::SEND;
  SendFlags send_flags;  // SIGNALED added when the QP has sq_sig_all
  std::uint32_t imm_data = 0;
  SendWr::Rdma rdma;
  SendWr::Atomic atomic;
  SendWr::Ud ud;
  std::uint32_t num_sge = 0;  // 0 when inline
  std::array<Sge, kMaxSge> sge{};
  std::uint32_t inline_len = 0;
  const std::uint8_t* inline_data = nullptr;  // copied at post time, owned by the queue
  std::uint64_t length = 0;  // message length in bytes

  std::span<const Sge> sg_list() const { return {sge.data(), num_sge}; }
  std::span<const std::uint8_t> inline_bytes() const { return {inline_data, inline_len}; }
  bool signaled() const { return send_flags.has(SendFlag::SIGNALED); }
};

struct SendQueueConfig {
  QpType qp_type = QpType::RC;
  QpCap cap;
  bool sq_sig_all = false;
  std::uint32_t max_msg_sz = kMaxMsgSize;
  std::uint32_t ud_max_payload = 4096;  // a UD message is one packet: the path MTU in bytes
  std::uint32_t qp_num = 0;             // for messages
};

class SendQueue {
 public:
  explicit SendQueue(const SendQueueConfig& config);

  PostSendResult post(const SendWr& first);  // follows next
  PostSendResult post(std::span<const SendWr> wrs);

  // The oldest WQE not yet completed, and the i-th after it: the requester
  // sends from a cursor and completes from the front.
  const SendWqe* front() const { return count_ == 0 ? nullptr : &ring_[head_]; }
  const SendWqe* at(std::uint32_t i) const;
  void pop();

  std::uint32_t size() const { return count_; }
  std::uint32_t capacity() const { return static_cast<std::uint32_t>(ring_.size()); }
  bool empty() const { return count_ == 0; }
  void set_ud_max_payload(std::uint32_t bytes) { config_.ud_max_payload = bytes; }
  const SendQueueConfig& config() const { return config_; }

 private:
  Status validate(const SendWr& wr, std::size_t index, std::uint64_t* length) const;
  Status post_one(const SendWr& wr, std::size_t index);

  SendQueueConfig config_;
  std::vector<SendWqe> ring_;
  std::vector<std::uint8_t> inline_store_;  // capacity × max_inline_data
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
};

}  // namespace qpgate::verbs::soft
