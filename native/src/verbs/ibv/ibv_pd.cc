// Protection domain, memory regions, address handles, shared receive queues.
#include <algorithm>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

PdHolder::~PdHolder() {
  if (pd != nullptr) ibv_dealloc_pd(pd);
}

SrqHolder::~SrqHolder() {
  if (srq != nullptr) ibv_destroy_srq(srq);
}

namespace {

class IbvMr final : public MemoryRegion {
 public:
  IbvMr(std::shared_ptr<PdHolder> pd, ibv_mr* mr, AccessFlags access) : pd_(std::move(pd)), mr_(mr), access_(access) {}
  ~IbvMr() override { ibv_dereg_mr(mr_); }
  std::uint64_t addr() const override { return reinterpret_cast<std::uintptr_t>(mr_->addr); }
  std::size_t length() const override { return mr_->length; }
  std::uint32_t lkey() const override { return mr_->lkey; }
  std::uint32_t rkey() const override { return mr_->rkey; }
  AccessFlags access() const override { return access_; }

 private:
  std::shared_ptr<PdHolder> pd_;
  ibv_mr* mr_;
  AccessFlags access_;
};

class IbvAh final : public AddressHandle {
 public:
  IbvAh(std::shared_ptr<PdHolder> pd, ibv_ah* ah, const AhAttr& attr) : pd_(std::move(pd)), ah_(ah), attr_(attr) {}
  ~IbvAh() override { ibv_destroy_ah(ah_); }
  const AhAttr& attr() const override { return attr_; }
  ibv_ah* ah() const { return ah_; }

 private:
  std::shared_ptr<PdHolder> pd_;
  ibv_ah* ah_;
  AhAttr attr_;
};

class IbvSrq final : public SharedReceiveQueue {
 public:
  explicit IbvSrq(std::shared_ptr<SrqHolder> h) : h_(std::move(h)) {}

  PostRecvResult post_recv(const RecvWr& first) override {
    std::size_t posted = 0;
    for (const RecvWr* wr = &first; wr != nullptr; wr = wr->next, ++posted) {
      if (auto s = post_one(*wr); !s.ok()) return PostRecvResult::failed(posted, wr, s.error());
    }
    return PostRecvResult::all_posted(posted);
  }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override {
    for (std::size_t i = 0; i < wrs.size(); ++i) {
      if (auto s = post_one(wrs[i]); !s.ok()) return PostRecvResult::failed(i, &wrs[i], s.error());
    }
    return PostRecvResult::all_posted(wrs.size());
  }

  Status modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) override {
    ibv_srq_attr a{attr.max_wr, attr.max_sge, attr.srq_limit};
    int m = 0;
    if (mask.has(SrqAttrMask::MAX_WR)) m |= IBV_SRQ_MAX_WR;
    if (mask.has(SrqAttrMask::LIMIT)) m |= IBV_SRQ_LIMIT;
    if (int rc = ibv_modify_srq(h_->srq, &a, m); rc != 0) {
      return call_error(errno_of(rc), "ibv_modify_srq on SRQ " + std::to_string(h_->srq->handle));
    }
    return {};
  }
  Result<SrqAttr> query() const override {
    ibv_srq_attr a{};
    if (int rc = ibv_query_srq(h_->srq, &a); rc != 0) {
      return call_error(errno_of(rc), "ibv_query_srq on SRQ " + std::to_string(h_->srq->handle));
    }
    return SrqAttr{a.max_wr, a.max_sge, a.srq_limit};
  }
  std::uint32_t handle() const override { return h_->srq->handle; }
  const std::shared_ptr<SrqHolder>& holder() const { return h_; }

 private:
  Status post_one(const RecvWr& wr) {
    if (wr.sg_list.size() > h_->max_sge) {
      return Error{EINVAL, "post_recv on SRQ " + std::to_string(h_->srq->handle) + ": WR " + std::to_string(wr.wr_id) +
                               " has " + std::to_string(wr.sg_list.size()) + " SGEs, the SRQ takes at most " +
                               std::to_string(h_->max_sge)};
    }
    std::array<ibv_sge, 32> sge{};
    const std::size_t n = std::min(wr.sg_list.size(), sge.size());
    for (std::size_t i = 0; i < n; ++i) sge[i] = ibv_sge{wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
    ibv_recv_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = sge.data();
    w.num_sge = static_cast<int>(n);
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_srq_recv(h_->srq, &w, &bad); rc != 0) {
      return call_error(errno_of(rc), "ibv_post_srq_recv on SRQ " + std::to_string(h_->srq->handle));
    }
    return {};
  }
  std::shared_ptr<SrqHolder> h_;
};

class IbvPd final : public ProtectionDomain {
 public:
  explicit IbvPd(std::shared_ptr<PdHolder> h) : h_(std::move(h)) {}

  Result<std::unique_ptr<MemoryRegion>> reg_mr(void* addr, std::size_t length, AccessFlags access) override {
    if (access.without(kAllAccess).any()) {
      return Error{EINVAL, "reg_mr: unknown access bits 0x" + hex(access.without(kAllAccess).bits())};
    }
    if ((access.has(Access::REMOTE_WRITE) || access.has(Access::REMOTE_ATOMIC)) && !access.has(Access::LOCAL_WRITE)) {
      return Error{EINVAL, std::string("reg_mr: ") +
                               (access.has(Access::REMOTE_WRITE) ? "IBV_ACCESS_REMOTE_WRITE" : "IBV_ACCESS_REMOTE_ATOMIC") +
                               " requires IBV_ACCESS_LOCAL_WRITE (as ibv_reg_mr)"};
    }
    if (addr == nullptr || length == 0) return Error{EINVAL, "reg_mr: empty region (addr null or length 0)"};
    errno = 0;
    ibv_mr* mr = ibv_reg_mr(h_->pd, addr, length, to_ibv_access(access));
    if (mr == nullptr) {
      return call_error(errno != 0 ? errno : ENOMEM, "ibv_reg_mr of " + std::to_string(length) + " bytes on " + h_->dev->name);
    }
    return std::unique_ptr<MemoryRegion>(std::make_unique<IbvMr>(h_, mr, access));
  }

  Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr& attr) override {
    if (attr.dgid.is_zero()) return Error{EINVAL, "create_ah: dgid is the zero GID"};
    if (attr.port_num < 1 || attr.port_num > h_->dev->device_attr.phys_port_cnt) {
      return Error{EINVAL, "create_ah: port_num " + std::to_string(attr.port_num) + " is out of range 1.." +
                               std::to_string(h_->dev->device_attr.phys_port_cnt)};
    }
    if (attr.sgid_index >= h_->dev->port_attr.gid_tbl_len) {
      return Error{EINVAL, "create_ah: sgid_index " + std::to_string(attr.sgid_index) + " is beyond the GID table (" +
                               std::to_string(h_->dev->port_attr.gid_tbl_len) + " entries)"};
    }
    ibv_ah_attr a{};
    if (auto s = to_ibv_ah_attr(attr, &a); !s.ok()) return Error{s.code(), "create_ah: " + std::string(s.message())};
    errno = 0;
    ibv_ah* ah = ibv_create_ah(h_->pd, &a);
    if (ah == nullptr) {
      return call_error(errno != 0 ? errno : EINVAL, "ibv_create_ah to " + attr.dgid.to_string() + " from GID index " +
                                                         std::to_string(attr.sgid_index) + " on " + h_->dev->name);
    }
    return std::unique_ptr<AddressHandle>(std::make_unique<IbvAh>(h_, ah, attr));
  }

  Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqAttr& attr) override {
    auto h = std::make_shared<SrqHolder>();
    h->pd = h_;
    ibv_srq_init_attr ia{};
    ia.srq_context = &h->target;
    ia.attr = ibv_srq_attr{attr.max_wr, attr.max_sge, attr.srq_limit};
    errno = 0;
    h->srq = ibv_create_srq(h_->pd, &ia);
    if (h->srq == nullptr) {
      return call_error(errno != 0 ? errno : EINVAL, "ibv_create_srq (max_wr " + std::to_string(attr.max_wr) +
                                                         ", max_sge " + std::to_string(attr.max_sge) + ") on " + h_->dev->name);
    }
    h->max_sge = ia.attr.max_sge;
    return std::unique_ptr<SharedReceiveQueue>(std::make_unique<IbvSrq>(std::move(h)));
  }

  Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& attr) override { return make_qp(h_, attr); }

 private:
  static std::string hex(std::uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "%x", v);
    return b;
  }
  std::shared_ptr<PdHolder> h_;
};

}  // namespace

Result<std::unique_ptr<ProtectionDomain>> make_pd(std::shared_ptr<DeviceShared> dev) {
  auto h = std::make_shared<PdHolder>();
  h->dev = std::move(dev);
  errno = 0;
  h->pd = ibv_alloc_pd(h->dev->ctx);
  if (h->pd == nullptr) return call_error(errno != 0 ? errno : ENOMEM, "ibv_alloc_pd on " + h->dev->name);
  return std::unique_ptr<ProtectionDomain>(std::make_unique<IbvPd>(std::move(h)));
}

std::shared_ptr<SrqHolder> srq_holder_of(SharedReceiveQueue* srq) {
  auto* s = dynamic_cast<IbvSrq*>(srq);
  return s == nullptr ? nullptr : s->holder();
}

ibv_ah* ibv_ah_of(const AddressHandle* ah) {
  const auto* a = dynamic_cast<const IbvAh*>(ah);
  return a == nullptr ? nullptr : a->ah();
}

}  // namespace qpgate::verbs::ibv
