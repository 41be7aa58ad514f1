#include "verbs/soft/srq.h"

#include <string>

namespace qpgate::verbs::soft {

SoftSrq::SoftSrq(const SrqAttr& attr, std::uint32_t handle, std::uint64_t context, AsyncEventQueue* events)
    : ring_(attr.max_wr, attr.max_sge, "SRQ " + std::to_string(handle)),
      limit_(attr.srq_limit),
      handle_(handle),
      context_(context),
      events_(events) {}

Status SoftSrq::check_attr(const SrqAttr& attr) {
  if (attr.max_wr == 0 || attr.max_wr > kMaxQpWr) {
    return Error{EINVAL, "create_srq: max_wr " + std::to_string(attr.max_wr) + " is out of range 1.." +
                             std::to_string(kMaxQpWr)};
  }
  if (attr.max_sge == 0 || attr.max_sge > kMaxSge) {
    return Error{EINVAL, "create_srq: max_sge " + std::to_string(attr.max_sge) + " is out of range 1.." +
                             std::to_string(kMaxSge)};
  }
  if (attr.srq_limit > attr.max_wr) {
    return Error{EINVAL, "create_srq: srq_limit " + std::to_string(attr.srq_limit) + " exceeds max_wr " +
                             std::to_string(attr.max_wr)};
  }
  return {};
}

Status SoftSrq::modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) {
  if (mask.has(SrqAttrMask::MAX_WR)) {
    return Error{EOPNOTSUPP, "modify_srq: IBV_SRQ_MAX_WR (resizing) is not supported by the soft backend"};
  }
  if (mask.has(SrqAttrMask::LIMIT)) {
    if (attr.srq_limit > ring_.capacity()) {
      return Error{EINVAL, "modify_srq: srq_limit " + std::to_string(attr.srq_limit) + " exceeds max_wr " +
                               std::to_string(ring_.capacity())};
    }
    limit_ = attr.srq_limit;
  }
  return {};
}

Result<SrqAttr> SoftSrq::query() const {
  return SrqAttr{ring_.capacity(), ring_.max_sge(), limit_};
}

std::optional<RecvWqe> SoftSrq::take() {
  auto w = ring_.take();
  if (w && limit_ != 0 && ring_.size() < limit_) {
    limit_ = 0;  // fires once, then disarmed
    if (events_ != nullptr) events_->push(EventType::SRQ_LIMIT_REACHED, handle_, context_);
  }
  return w;
}

}  // namespace qpgate::verbs::soft
