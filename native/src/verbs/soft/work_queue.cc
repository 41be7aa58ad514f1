#include "verbs/soft/work_queue.h"

#include <cstdio>
#include <cstring>
#include <utility>

namespace qpgate::verbs::soft {

namespace {

std::string wr_label(std::size_t index, std::uint64_t wr_id) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "WR %zu (wr_id 0x%llx)", index, static_cast<unsigned long long>(wr_id));
  return std::string(buf, static_cast<std::size_t>(n));
}

Error einval(std::string m) { return Error{EINVAL, std::move(m)}; }

}  // namespace

Status check_post_send_state(QpState s) {
  switch (s) {
    case QpState::RTS:
    case QpState::SQD:
    case QpState::SQE:
    case QpState::ERR: return {};
    default:
      return einval("post_send: the QP is in " + std::string(qp_state_name(s)) +
                    "; send WRs are accepted from RTS on");
  }
}

Status check_post_recv_state(QpState s) {
  if (s == QpState::RESET) return einval("post_recv: the QP is in RESET; receive WRs are accepted from INIT on");
  return {};
}

Status check_qp_cap(const QpCap& cap, bool has_srq) {
  const auto over = [](const char* name, std::uint32_t v, std::uint32_t max) {
    return einval(std::string("create_qp: cap.") + name + " " + std::to_string(v) + " exceeds the device's " +
                  std::to_string(max));
  };
  if (cap.max_send_wr > kMaxQpWr) return over("max_send_wr", cap.max_send_wr, kMaxQpWr);
  if (cap.max_send_sge > kMaxSge) return over("max_send_sge", cap.max_send_sge, kMaxSge);
  if (cap.max_inline_data > kMaxInlineData) return over("max_inline_data", cap.max_inline_data, kMaxInlineData);
  if (!has_srq) {
    if (cap.max_recv_wr > kMaxQpWr) return over("max_recv_wr", cap.max_recv_wr, kMaxQpWr);
    if (cap.max_recv_sge > kMaxSge) return over("max_recv_sge", cap.max_recv_sge, kMaxSge);
  }
  return {};
}

// ---------------------------------------------------------------- ReceiveRing

ReceiveRing::ReceiveRing(std::uint32_t max_wr, std::uint32_t max_sge, std::string what)
    : ring_(max_wr), max_sge_(max_sge > kMaxSge ? kMaxSge : max_sge), what_(std::move(what)) {}

Status ReceiveRing::post_one(const RecvWr& wr, std::size_t index) {
  if (wr.sg_list.size() > max_sge_) {
    return einval("post_recv to " + what_ + ": " + wr_label(index, wr.wr_id) + " has " +
                  std::to_string(wr.sg_list.size()) + " SGEs; max_recv_sge is " + std::to_string(max_sge_));
  }
  if (count_ == ring_.size()) {
    return Error{ENOMEM, "post_recv to " + what_ + ": " + wr_label(index, wr.wr_id) + " does not fit; the queue holds " +
                             std::to_string(ring_.size()) + " WRs (max_recv_wr) and is full"};
  }
  const auto tail = static_cast<std::uint32_t>((head_ + count_) % ring_.size());
  RecvWqe& w = ring_[tail];
  w.wr_id = wr.wr_id;
  w.num_sge = static_cast<std::uint32_t>(wr.sg_list.size());
  w.length = 0;
  for (std::uint32_t i = 0; i < w.num_sge; ++i) {
    w.sge[i] = wr.sg_list[i];
    w.length += wr.sg_list[i].length;
  }
  ++count_;
  return {};
}

PostRecvResult ReceiveRing::post(const RecvWr& first) {
  std::size_t i = 0;
  for (const RecvWr* wr = &first; wr != nullptr; wr = wr->next, ++i) {
    if (Status s = post_one(*wr, i); !s.ok()) return PostRecvResult::failed(i, wr, s.error());
  }
  return PostRecvResult::all_posted(i);
}

PostRecvResult ReceiveRing::post(std::span<const RecvWr> wrs) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (Status s = post_one(wrs[i], i); !s.ok()) return PostRecvResult::failed(i, &wrs[i], s.error());
  }
  return PostRecvResult::all_posted(wrs.size());
}

void ReceiveRing::pop() {
  if (count_ == 0) return;
  head_ = static_cast<std::uint32_t>((head_ + 1) % ring_.size());
  --count_;
}

std::optional<RecvWqe> ReceiveRing::take() {
  if (count_ == 0) return std::nullopt;
  RecvWqe w = ring_[head_];
  pop();
  return w;
}

// ---------------------------------------------------------------- SendQueue

SendQueue::SendQueue(const SendQueueConfig& config)
    : config_(config),
      ring_(config.cap.max_send_wr),
      inline_store_(std::size_t{config.cap.max_send_wr} * config.cap.max_inline_data) {
  if (config_.cap.max_send_sge > kMaxSge) config_.cap.max_send_sge = kMaxSge;
}

Status SendQueue::validate(const SendWr& wr, std::size_t index, std::uint64_t* length) const {
  // Built only for an error: formatting it eagerly cost ~2,000 instructions
  // per posted WR, more than the rest of post_send (a callgrind profile of
  // bench_soft_rc_pingpong).
  const auto who = [&] { return "post_send to QP " + std::to_string(config_.qp_num) + ": " + wr_label(index, wr.wr_id); };
  const auto op_raw = static_cast<unsigned>(wr.opcode);
  if (op_raw > static_cast<unsigned>(WrOpcode::ATOMIC_FETCH_AND_ADD)) {
    return einval(who() + " has opcode " + std::to_string(op_raw) + ", which qpgate does not implement");
  }
  if (!opcode_valid_for(config_.qp_type, wr.opcode)) {
    return einval(who() + ": " + std::string(wr_opcode_name(wr.opcode)) + " is not valid on a " +
                  std::string(qp_type_name(config_.qp_type)) + " QP");
  }
  if (wr.sg_list.size() > config_.cap.max_send_sge) {
    return einval(who() + " has " + std::to_string(wr.sg_list.size()) + " SGEs; max_send_sge is " +
                  std::to_string(config_.cap.max_send_sge));
  }
  std::uint64_t len = 0;
  for (const Sge& s : wr.sg_list) len += s.length;  // ≤ 32 × 2^32: cannot wrap
  const wire::WrOpcodeInfo& info = wr_opcode_info(wr.opcode);
  const bool atomic = info.is(wire::kWrAtomic);
  if (len > config_.max_msg_sz) {
    return einval(who() + " is " + std::to_string(len) + " bytes; the largest message is " +
                  std::to_string(config_.max_msg_sz));
  }
  if (atomic && len != 8) {
    return einval(who() + ": " + std::string(wr_opcode_name(wr.opcode)) +
                  " needs exactly 8 bytes of local buffer for the original value, not " + std::to_string(len));
  }
  if (wr.send_flags.has(SendFlag::INLINE)) {
    if (info.is_read_or_atomic()) {
      return einval(who() + ": IBV_SEND_INLINE is not valid with " + std::string(wr_opcode_name(wr.opcode)));
    }
    if (len > config_.cap.max_inline_data) {
      return einval(who() + " has " + std::to_string(len) + " bytes inline; max_inline_data is " +
                    std::to_string(config_.cap.max_inline_data));
    }
  }
  if (config_.qp_type == QpType::UD) {
    if (wr.ud.ah == nullptr) return einval(who() + ": a UD send needs wr.ud.ah");
    if (wr.ud.remote_qpn > kQpnMask) {
      return einval(who() + ": remote_qpn " + std::to_string(wr.ud.remote_qpn) + " is not a 24-bit QPN");
    }
    if (len > config_.ud_max_payload) {
      return einval(who() + " is " + std::to_string(len) + " bytes; a UD message is one packet of at most the path MTU, " +
                    std::to_string(config_.ud_max_payload));
    }
  }
  *length = len;
  return {};
}

Status SendQueue::post_one(const SendWr& wr, std::size_t index) {
  std::uint64_t len = 0;
  if (Status s = validate(wr, index, &len); !s.ok()) return s;
  if (count_ == ring_.size()) {
    return Error{ENOMEM, "post_send to QP " + std::to_string(config_.qp_num) + ": " + wr_label(index, wr.wr_id) +
                             " does not fit; the send queue holds " + std::to_string(ring_.size()) +
                             " WRs (max_send_wr) and is full"};
  }
  const auto slot = static_cast<std::uint32_t>((head_ + count_) % ring_.size());
  SendWqe& w = ring_[slot];
  w.wr_id = wr.wr_id;
  w.opcode = wr.opcode;
  w.send_flags = wr.send_flags;
  if (config_.sq_sig_all) w.send_flags |= SendFlag::SIGNALED;
  w.imm_data = wr.imm_data;
  w.rdma = wr.rdma;
  w.atomic = wr.atomic;
  w.ud = wr.ud;
  w.length = len;
  w.num_sge = 0;
  w.inline_len = 0;
  w.inline_data = nullptr;
  if (wr.send_flags.has(SendFlag::INLINE)) {
    // IBV_SEND_INLINE: the bytes are copied now; the SGEs' lkeys are not checked
    // and the buffers may be reused as soon as post_send returns.
    std::uint8_t* dst = inline_store_.data() + std::size_t{slot} * config_.cap.max_inline_data;
    std::size_t off = 0;
    for (const Sge& s : wr.sg_list) {
      if (s.length == 0) continue;
      std::memcpy(dst + off, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(s.addr)), s.length);
      off += s.length;
    }
    w.inline_len = static_cast<std::uint32_t>(off);
    w.inline_data = dst;
  } else {
    w.num_sge = static_cast<std::uint32_t>(wr.sg_list.size());
    for (std::uint32_t i = 0; i < w.num_sge; ++i) w.sge[i] = wr.sg_list[i];
  }
  ++count_;
  return {};
}

PostSendResult SendQueue::post(const SendWr& first) {
  std::size_t i = 0;
  for (const SendWr* wr = &first; wr != nullptr; wr = wr->next, ++i) {
    if (Status s = post_one(*wr, i); !s.ok()) return PostSendResult::failed(i, wr, s.error());
  }
  return PostSendResult::all_posted(i);
}

PostSendResult SendQueue::post(std::span<const SendWr> wrs) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (Status s = post_one(wrs[i], i); !s.ok()) return PostSendResult::failed(i, &wrs[i], s.error());
  }
  return PostSendResult::all_posted(wrs.size());
}

const SendWqe* SendQueue::at(std::uint32_t i) const {
  if (i >= count_) return nullptr;
  return &ring_[(head_ + i) % ring_.size()];
}

void SendQueue::pop() {
  if (count_ == 0) return;
  head_ = static_cast<std::uint32_t>((head_ + 1) % ring_.size());
  --count_;
}

}  // namespace qpgate::verbs::soft
