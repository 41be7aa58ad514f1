// Shared receive queue of the soft device: one ReceiveRing that many QPs of
// a PD consume from, with the SRQ limit (ibv_modify_srq(3)): armed by
// modify(IBV_SRQ_LIMIT), it fires IBV_EVENT_SRQ_LIMIT_REACHED once when the
// number of posted WQEs drops below srq_limit, and disarms (srq_limit reads
// back 0) until armed again. The engine uses it to re-post receives before
// clients feel RNR.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "verbs/device.h"
#include "verbs/soft/async_queue.h"
#include "verbs/soft/work_queue.h"

namespace qpgate::verbs::soft {

class SoftSrq final : public SharedReceiveQueue {
 public:
  // events may be null. attr.srq_limit > 0 arms the limit at creation.
  SoftSrq(const SrqAttr& attr, std::uint32_t handle, std::uint64_t context, AsyncEventQueue* events);

  // EINVAL naming the field when attr exceeds the device (max_wr, max_sge) or srq_limit > max_wr.
  static Status check_attr(const SrqAttr& attr);

  PostRecvResult post_recv(const RecvWr& first) override { return ring_.post(first); }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override { return ring_.post(wrs); }
  Status modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) override;
  Result<SrqAttr> query() const override;
  std::uint32_t handle() const override { return handle_; }

  // The responder's side: the next receive WQE for a QP, and the limit check.
  std::optional<RecvWqe> take();
  std::uint32_t size() const { return ring_.size(); }
  bool armed() const { return limit_ != 0; }

 private:
  ReceiveRing ring_;
  std::uint32_t limit_ = 0;  // 0 = not armed
  std::uint32_t handle_;
  std::uint64_t context_;
  AsyncEventQueue* events_;
};

}  // namespace qpgate::verbs::soft
