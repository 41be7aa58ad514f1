// The verbs objects of a soft device (soft_device.h): PD, MR, AH, CQ, SRQ
// and QP wrappers that keep alive what they were made from.
#include <string>

#include "verbs/soft/cq_ring.h"
#include "verbs/soft/device_core.h"
#include "verbs/soft/soft_qp.h"
#include "verbs/soft/srq.h"
#include "verbs/soft/work_queue.h"

namespace qpgate::verbs::soft {
namespace {

struct PdState {
  PdState(std::shared_ptr<DeviceCore> c, std::uint32_t h) : core(std::move(c)), handle(h) {}
  ~PdState() { (void)core->pds.dealloc(handle); }  // its children held it: none is left
  std::shared_ptr<DeviceCore> core;
  std::uint32_t handle;
};

class SoftMr final : public MemoryRegion {
 public:
  SoftMr(std::shared_ptr<PdState> pd, const MrEntry& e) : pd_(std::move(pd)), e_(e) {}
  ~SoftMr() override { (void)pd_->core->mrs.deregister(e_.lkey); }
  std::uint64_t addr() const override { return e_.addr; }
  std::size_t length() const override { return static_cast<std::size_t>(e_.length); }
  std::uint32_t lkey() const override { return e_.lkey; }
  std::uint32_t rkey() const override { return e_.rkey; }
  AccessFlags access() const override { return e_.access; }

 private:
  std::shared_ptr<PdState> pd_;
  MrEntry e_;
};

class SoftAh final : public AddressHandle {
 public:
  SoftAh(std::shared_ptr<PdState> pd, const AhAttr& a) : pd_(std::move(pd)), attr_(a) { ++pd_->core->ah_count; }
  ~SoftAh() override { --pd_->core->ah_count; }
  const AhAttr& attr() const override { return attr_; }

 private:
  std::shared_ptr<PdState> pd_;
  AhAttr attr_;
};

class SoftCqObject final : public CompletionQueue {
 public:
  SoftCqObject(std::shared_ptr<DeviceCore> core, std::shared_ptr<SoftCompletionQueue> cq)
      : core_(std::move(core)), cq_(std::move(cq)) {
    ++core_->cq_count;
  }
  ~SoftCqObject() override { --core_->cq_count; }
  Result<std::size_t> poll(std::span<Wc> out) override { return cq_->poll(out); }
  std::uint32_t cqe() const override { return cq_->cqe(); }
  std::uint32_t handle() const override { return cq_->handle(); }
  const DeviceCore* core() const { return core_.get(); }
  const std::shared_ptr<SoftCompletionQueue>& cq() const { return cq_; }

 private:
  std::shared_ptr<DeviceCore> core_;
  std::shared_ptr<SoftCompletionQueue> cq_;
};

class SoftSrqObject final : public SharedReceiveQueue {
 public:
  SoftSrqObject(std::shared_ptr<PdState> pd, std::shared_ptr<SoftSrq> srq) : pd_(std::move(pd)), srq_(std::move(srq)) {
    ++pd_->core->srq_count;
  }
  ~SoftSrqObject() override { --pd_->core->srq_count; }
  PostRecvResult post_recv(const RecvWr& first) override { return srq_->post_recv(first); }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override { return srq_->post_recv(wrs); }
  Status modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) override { return srq_->modify(attr, mask); }
  Result<SrqAttr> query() const override { return srq_->query(); }
  std::uint32_t handle() const override { return srq_->handle(); }
  const PdState* pd() const { return pd_.get(); }
  const std::shared_ptr<SoftSrq>& srq() const { return srq_; }

 private:
  std::shared_ptr<PdState> pd_;
  std::shared_ptr<SoftSrq> srq_;
};

class SoftQpObject final : public QueuePair {
 public:
  SoftQpObject(std::shared_ptr<PdState> pd, std::shared_ptr<SoftCompletionQueue> scq,
               std::shared_ptr<SoftCompletionQueue> rcq, std::shared_ptr<SoftSrq> srq, std::unique_ptr<SoftQp> qp)
      : pd_(std::move(pd)), scq_(std::move(scq)), rcq_(std::move(rcq)), srq_(std::move(srq)), qp_(std::move(qp)) {
    pd_->core->qps.emplace(qp_->qp_num(), qp_.get());
  }
  ~SoftQpObject() override {
    // Out of the ingress's map first, then gone (its destructor detaches
    // its multicast groups through the device's membership).
    pd_->core->qps.erase(qp_->qp_num());
    qp_.reset();
  }
  std::uint32_t qp_num() const override { return qp_->qp_num(); }
  QpType qp_type() const override { return qp_->qp_type(); }
  QpState state() const override { return qp_->state(); }
  Status modify(const QpAttr& attr, QpAttrMaskFlags mask) override { return qp_->modify(attr, mask); }
  Result<QpAttr> query() const override { return qp_->query(); }
  QpInitAttr init_attr() const override { return qp_->init_attr(); }
  PostSendResult post_send(const SendWr& first) override { return qp_->post_send(first); }
  PostSendResult post_send(std::span<const SendWr> wrs) override { return qp_->post_send(wrs); }
  PostRecvResult post_recv(const RecvWr& first) override { return qp_->post_recv(first); }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override { return qp_->post_recv(wrs); }
  Status attach_mcast(const Gid& mgid) override { return qp_->attach_mcast(mgid); }
  Status detach_mcast(const Gid& mgid) override { return qp_->detach_mcast(mgid); }
  Status set_ack_requests(AckRequests mode) override { return qp_->set_ack_requests(mode); }
  std::uint64_t path_migrations() const override { return qp_->path_migrations(); }
  const SoftQp& soft() const { return *qp_; }

 private:
  std::shared_ptr<PdState> pd_;
  std::shared_ptr<SoftCompletionQueue> scq_;
  std::shared_ptr<SoftCompletionQueue> rcq_;
  std::shared_ptr<SoftSrq> srq_;
  std::unique_ptr<SoftQp> qp_;
};

class SoftPd final : public ProtectionDomain {
 public:
  explicit SoftPd(std::shared_ptr<PdState> state) : state_(std::move(state)) {}

  Result<std::unique_ptr<MemoryRegion>> reg_mr(void* addr, std::size_t length, AccessFlags access) override {
    Result<MrEntry> e = state_->core->mrs.register_mr(
        state_->handle, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(addr)), length, access);
    if (!e) return e.error();
    return std::unique_ptr<MemoryRegion>(std::make_unique<SoftMr>(state_, *e));
  }

  Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr& attr) override {
    DeviceCore& core = *state_->core;
    if (core.ah_count >= limits::kMaxAh) {
      return Error{ENOMEM, "create_ah: " + std::to_string(limits::kMaxAh) + " address handles exist (max_ah)"};
    }
    if (attr.port_num != 1) {
      return Error{EINVAL, "create_ah: port_num " + std::to_string(attr.port_num) + " does not exist (the soft device has port 1)"};
    }
    if (attr.sgid_index >= core.gid_addresses.size()) {
      return Error{EINVAL, "create_ah: sgid_index " + std::to_string(attr.sgid_index) +
                               " is outside the GID table (length " + std::to_string(core.gid_addresses.size()) + ")"};
    }
    if (!attr.dgid.is_ipv4_mapped() || attr.dgid.to_ipv4().value_or(0) == 0) {
      return Error{EAFNOSUPPORT, "create_ah: dgid " + attr.dgid.to_string() +
                                     " is not an IPv4-mapped GID (::ffff:a.b.c.d); the soft device speaks RoCEv2 over IPv4"};
    }
    return std::unique_ptr<AddressHandle>(std::make_unique<SoftAh>(state_, attr));
  }

  Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqAttr& attr) override {
    DeviceCore& core = *state_->core;
    if (core.srq_count >= limits::kMaxSrq) {
      return Error{ENOMEM, "create_srq: " + std::to_string(limits::kMaxSrq) + " SRQs exist (max_srq)"};
    }
    if (Status s = SoftSrq::check_attr(attr); !s) return s.error();
    auto srq = std::make_shared<SoftSrq>(attr, core.next_srq_handle++, 0, &core.events);
    return std::unique_ptr<SharedReceiveQueue>(std::make_unique<SoftSrqObject>(state_, std::move(srq)));
  }

  Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& init) override {
    DeviceCore& core = *state_->core;
    if (core.qps.size() >= limits::kMaxQp) {
      return Error{ENOMEM, "create_qp: " + std::to_string(limits::kMaxQp) + " QPs exist (max_qp)"};
    }
    auto* scq = dynamic_cast<SoftCqObject*>(init.send_cq);
    auto* rcq = dynamic_cast<SoftCqObject*>(init.recv_cq);
    if (scq == nullptr || rcq == nullptr) {
      return Error{EINVAL, std::string("create_qp: ") + (scq == nullptr ? "send_cq" : "recv_cq") +
                               " is missing or not a CQ of a soft device"};
    }
    if (scq->core() != &core || rcq->core() != &core) {
      return Error{EINVAL, "create_qp: the CQs belong to another device than the PD"};
    }
    SoftSrqObject* srq = nullptr;
    if (init.srq != nullptr) {
      srq = dynamic_cast<SoftSrqObject*>(init.srq);
      if (srq == nullptr || srq->pd() != state_.get()) {
        return Error{EINVAL, "create_qp: the SRQ is not one of this PD"};
      }
    }
    Result<std::uint32_t> qpn = core.alloc_qpn();
    if (!qpn) return qpn.error();
    ModifyLimits modify_limits = SoftQpContext::default_limits();
    modify_limits.max_mtu = core.active_mtu;
    modify_limits.gid_tbl_len = static_cast<std::uint32_t>(core.gid_addresses.size());
    SoftQpContext ctx{
        .tx = core.tx,
        .mrs = core.mrs,
        .events = core.events,
        .mcast = core.mcast,
        .membership = core.paths ? static_cast<MulticastMembership&>(*core.paths) : *core.net,
        .local_ip = core.iface.address,
        .local_gid = core.gid,
        .gid_addresses = core.gid_addresses,
        .pd = state_->handle,
        .send_cq = scq->cq().get(),
        .recv_cq = rcq->cq().get(),
        .srq = srq != nullptr ? srq->srq().get() : nullptr,
        .qpn = *qpn,
        .init = init,
        .limits = modify_limits,
        .active_mtu = core.active_mtu,
        .pkey = 0xffff,
    };
    if (Status s = SoftQp::check_init(ctx); !s) return s.error();
    auto qp = std::make_unique<SoftQp>(ctx);
    return std::unique_ptr<QueuePair>(std::make_unique<SoftQpObject>(
        state_, scq->cq(), rcq->cq(), srq != nullptr ? srq->srq() : nullptr, std::move(qp)));
  }

 private:
  std::shared_ptr<PdState> state_;
};

}  // namespace

Result<std::unique_ptr<ProtectionDomain>> SoftDevice::alloc_pd() {
  Result<std::uint32_t> h = core_->pds.alloc();
  if (!h) return h.error();
  return std::unique_ptr<ProtectionDomain>(std::make_unique<SoftPd>(std::make_shared<PdState>(core_, *h)));
}

Result<std::unique_ptr<CompletionQueue>> SoftDevice::create_cq(std::uint32_t cqe, std::uint64_t cq_context) {
  if (cqe == 0 || cqe > limits::kMaxCqe) {
    return Error{EINVAL, "create_cq: cqe " + std::to_string(cqe) + " is out of range 1.." + std::to_string(limits::kMaxCqe)};
  }
  if (core_->cq_count >= limits::kMaxCq) {
    return Error{ENOMEM, "create_cq: " + std::to_string(limits::kMaxCq) + " CQs exist (max_cq)"};
  }
  auto cq = std::make_shared<SoftCompletionQueue>(cqe, core_->next_cq_handle++, cq_context, &core_->events);
  return std::unique_ptr<CompletionQueue>(std::make_unique<SoftCqObject>(core_, std::move(cq)));
}

const SoftQp* as_soft_qp(const QueuePair& qp) {
  const auto* o = dynamic_cast<const SoftQpObject*>(&qp);
  return o == nullptr ? nullptr : &o->soft();
}

}  // namespace qpgate::verbs::soft
