// Completion queues: batch poll (ibv_poll_cq into a fixed array) and event
// mode through the device's completion channel, as rdma-core's
// ibv_rc_pingpong --events does it: every CQ is armed from its creation;
// take_cq_events() takes the channel's events, re-arms each CQ named, and
// acks them in batches (ibv_ack_cq_events takes a lock); whoever owns a CQ
// polls it after that (the next duty cycle), which closes the race between
// a completion and the re-arm.
#include <fcntl.h>

#include <array>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

CqHolder::~CqHolder() {
  if (cq == nullptr) return;
  // ibv_destroy_cq waits until every event it raised is acked.
  if (target.unacked_events != 0) ibv_ack_cq_events(cq, target.unacked_events);
  ibv_destroy_cq(cq);
}

namespace {

// ibv_wc is 48 bytes: 32 of them on the stack per ibv_poll_cq call.
constexpr std::size_t kPollBatch = 32;
// Completion events taken per CQ before they are acked in one call.
constexpr std::uint32_t kAckBatch = 64;

class IbvCq final : public IbvCompletionQueue {
 public:
  explicit IbvCq(std::shared_ptr<CqHolder> h) : h_(std::move(h)) {}

  Result<std::size_t> poll(std::span<Wc> out) override {
    if (h_->target.cq_error) {
      return Error{EOVERFLOW, "CQ " + std::to_string(h_->cq->handle) + " on " + h_->dev->name +
                                  " overran (IBV_EVENT_CQ_ERR): completions were lost"};
    }
    std::array<ibv_wc, kPollBatch> wc;
    std::size_t filled = 0;
    while (filled < out.size()) {
      const int want = static_cast<int>(std::min(kPollBatch, out.size() - filled));
      const int n = ibv_poll_cq(h_->cq, want, wc.data());
      if (n < 0) return call_error(errno_of(n), "ibv_poll_cq on CQ " + std::to_string(h_->cq->handle) + " of " + h_->dev->name);
      for (int i = 0; i < n; ++i) from_ibv_wc(wc[static_cast<std::size_t>(i)], &out[filled++]);
      if (n < want) break;  // drained
    }
    return filled;
  }
  std::uint32_t cqe() const override { return static_cast<std::uint32_t>(h_->cq->cqe); }
  std::uint32_t handle() const override { return h_->cq->handle; }

  Status req_notify(bool solicited_only) override {
    if (int rc = ibv_req_notify_cq(h_->cq, solicited_only ? 1 : 0); rc != 0) {
      return call_error(errno_of(rc), "ibv_req_notify_cq on CQ " + std::to_string(h_->cq->handle));
    }
    return {};
  }
  const std::shared_ptr<CqHolder>& holder() const { return h_; }

 private:
  std::shared_ptr<CqHolder> h_;
};

}  // namespace

Status make_completion_channel(DeviceShared& dev) {
  errno = 0;
  dev.channel = ibv_create_comp_channel(dev.ctx);
  if (dev.channel == nullptr) return call_error(errno != 0 ? errno : EMFILE, "ibv_create_comp_channel on " + dev.name);
  const int fl = fcntl(dev.channel->fd, F_GETFL);
  if (fl < 0 || fcntl(dev.channel->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return call_error(errno, "fcntl O_NONBLOCK on the completion channel of " + dev.name);
  }
  return {};
}

Result<std::size_t> take_cq_events(DeviceShared& dev) {
  std::size_t n = 0;
  for (;;) {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(dev.channel, &cq, &ctx) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return n;
      return call_error(errno, "ibv_get_cq_event on " + dev.name);
    }
    ++n;
    auto* t = static_cast<EventTarget*>(ctx);
    if (++t->unacked_events == kAckBatch) {
      ibv_ack_cq_events(cq, t->unacked_events);
      t->unacked_events = 0;
    }
    if (int rc = ibv_req_notify_cq(cq, 0); rc != 0) {
      return call_error(errno_of(rc), "ibv_req_notify_cq on CQ " + std::to_string(cq->handle) + " of " + dev.name);
    }
  }
}

Result<std::unique_ptr<IbvCompletionQueue>> make_cq(std::shared_ptr<DeviceShared> dev, std::uint32_t cqe,
                                                    std::uint64_t cq_context) {
  if (cqe == 0 || cqe > dev->device_attr.max_cqe) {
    return Error{EINVAL, "create_cq: cqe " + std::to_string(cqe) + " is out of range 1.." +
                             std::to_string(dev->device_attr.max_cqe) + " on " + dev->name};
  }
  auto h = std::make_shared<CqHolder>();
  h->dev = std::move(dev);
  h->target.user_context = cq_context;
  errno = 0;
  h->cq = ibv_create_cq(h->dev->ctx, static_cast<int>(cqe), &h->target, h->dev->channel, 0);
  if (h->cq == nullptr) {
    return call_error(errno != 0 ? errno : ENOMEM, "ibv_create_cq with " + std::to_string(cqe) + " entries on " + h->dev->name);
  }
  // Armed from the start: its first completion wakes a parked engine.
  if (int rc = ibv_req_notify_cq(h->cq, 0); rc != 0) {
    return call_error(errno_of(rc), "ibv_req_notify_cq on CQ " + std::to_string(h->cq->handle) + " of " + h->dev->name);
  }
  return std::unique_ptr<IbvCompletionQueue>(std::make_unique<IbvCq>(std::move(h)));
}

std::shared_ptr<CqHolder> cq_holder_of(CompletionQueue* cq) {
  auto* c = dynamic_cast<IbvCq*>(cq);
  return c == nullptr ? nullptr : c->holder();
}

}  // namespace qpgate::verbs::ibv
