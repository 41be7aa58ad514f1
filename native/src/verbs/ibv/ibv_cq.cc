// Completion queues: batch poll (ibv_poll_cq into a fixed array) and event
// mode through a per-CQ completion channel whose fd is non-blocking.
#include <fcntl.h>

#include <array>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

CqHolder::~CqHolder() {
  if (cq != nullptr) ibv_destroy_cq(cq);
  if (channel != nullptr) ibv_destroy_comp_channel(channel);
}

namespace {

// ibv_wc is 48 bytes: 32 of them on the stack per ibv_poll_cq call.
constexpr std::size_t kPollBatch = 32;

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

  int channel_fd() const override { return h_->channel->fd; }
  Status req_notify(bool solicited_only) override {
    if (int rc = ibv_req_notify_cq(h_->cq, solicited_only ? 1 : 0); rc != 0) {
      return call_error(errno_of(rc), "ibv_req_notify_cq on CQ " + std::to_string(h_->cq->handle));
    }
    return {};
  }
  Result<bool> get_event() override {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(h_->channel, &cq, &ctx) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      return call_error(errno, "ibv_get_cq_event on CQ " + std::to_string(h_->cq->handle));
    }
    ibv_ack_cq_events(cq, 1);  // acknowledged at once: destroy never waits for us
    return true;
  }
  const std::shared_ptr<CqHolder>& holder() const { return h_; }

 private:
  std::shared_ptr<CqHolder> h_;
};

}  // namespace

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
  h->channel = ibv_create_comp_channel(h->dev->ctx);
  if (h->channel == nullptr) return call_error(errno != 0 ? errno : EMFILE, "ibv_create_comp_channel on " + h->dev->name);
  const int fl = fcntl(h->channel->fd, F_GETFL);
  if (fl < 0 || fcntl(h->channel->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return call_error(errno, "fcntl O_NONBLOCK on a completion channel of " + h->dev->name);
  }
  errno = 0;
  h->cq = ibv_create_cq(h->dev->ctx, static_cast<int>(cqe), &h->target, h->channel, 0);
  if (h->cq == nullptr) {
    return call_error(errno != 0 ? errno : ENOMEM, "ibv_create_cq with " + std::to_string(cqe) + " entries on " + h->dev->name);
  }
  return std::unique_ptr<IbvCompletionQueue>(std::make_unique<IbvCq>(std::move(h)));
}

std::shared_ptr<CqHolder> cq_holder_of(CompletionQueue* cq) {
  auto* c = dynamic_cast<IbvCq*>(cq);
  return c == nullptr ? nullptr : c->holder();
}

}  // namespace qpgate::verbs::ibv
