// Queue pairs: creation, the state machine (our check_modify_qp first, then
// ibv_modify_qp), query, batched posting with per-WR checks, multicast
// attach with the IP join.
#include <arpa/inet.h>

#include <array>
#include <cstdio>
#include <set>

#include "verbs/ibv/ibv_internal.h"

namespace qpgate::verbs::ibv {

namespace {

// WRs converted and handed to libibverbs per call; their SGEs share a pool.
constexpr std::size_t kPostBatch = 16;
constexpr std::size_t kSgePool = 64;

std::string hex24(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%06x", v);
  return b;
}

class IbvQp final : public QueuePair {
 public:
  IbvQp(std::shared_ptr<PdHolder> pd, std::shared_ptr<CqHolder> scq, std::shared_ptr<CqHolder> rcq,
        std::shared_ptr<SrqHolder> srq, const QpInitAttr& init)
      : pd_(std::move(pd)), send_cq_(std::move(scq)), recv_cq_(std::move(rcq)), srq_(std::move(srq)), init_(init) {
    target_.user_context = init.qp_context;
  }

  Status create() {
    ibv_qp_init_attr ia{};
    ia.qp_context = &target_;
    ia.send_cq = send_cq_->cq;
    ia.recv_cq = recv_cq_->cq;
    ia.srq = srq_ ? srq_->srq : nullptr;
    ia.cap.max_send_wr = init_.cap.max_send_wr;
    ia.cap.max_recv_wr = srq_ ? 0 : init_.cap.max_recv_wr;
    ia.cap.max_send_sge = init_.cap.max_send_sge;
    ia.cap.max_recv_sge = srq_ ? 0 : init_.cap.max_recv_sge;
    ia.cap.max_inline_data = init_.cap.max_inline_data;
    ia.qp_type = static_cast<ibv_qp_type>(init_.qp_type);
    ia.sq_sig_all = init_.sq_sig_all ? 1 : 0;
    errno = 0;
    qp_ = ibv_create_qp(pd_->pd, &ia);
    if (qp_ == nullptr) {
      return call_error(errno != 0 ? errno : EINVAL,
                        "ibv_create_qp " + std::string(qp_type_name(init_.qp_type)) + " (max_send_wr " +
                            std::to_string(init_.cap.max_send_wr) + ", max_recv_wr " + std::to_string(init_.cap.max_recv_wr) +
                            ", max_send_sge " + std::to_string(init_.cap.max_send_sge) + ", max_inline_data " +
                            std::to_string(init_.cap.max_inline_data) + ") on " + pd_->dev->name);
    }
    // What the device actually gave (at least what was asked).
    init_.cap = QpCap{ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge,
                      ia.cap.max_inline_data};
    return {};
  }

  ~IbvQp() override {
    if (qp_ == nullptr) return;
    for (const Gid& g : attached_) {
      ibv_gid gid = to_ibv_gid(g);
      ibv_detach_mcast(qp_, &gid, 0);
      (void)pd_->dev->joins.leave(g);
    }
    ibv_destroy_qp(qp_);
  }

  std::uint32_t qp_num() const override { return qp_->qp_num; }
  QpType qp_type() const override { return init_.qp_type; }

  // The real state: an RC QP moves to ERR by itself on a fatal completion.
  QpState state() const override {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp_, &a, IBV_QP_STATE, &ia) == 0) state_ = static_cast<QpState>(a.qp_state);
    return state_;
  }

  Status modify(const QpAttr& attr, QpAttrMaskFlags mask) override {
    const QpState current = state();
    if (auto s = check_modify_qp(init_.qp_type, current, attr, mask, pd_->dev->limits); !s.ok()) {
      return Error{s.code(), std::string(s.message()) + " (" + what() + ")"};
    }
    const QpState next = target_state(current, attr, mask);
    ibv_qp_attr a{};
    int m = 0;
    if (auto s = to_ibv_qp_attr(attr, mask, &a, &m); !s.ok()) return Error{s.code(), std::string(s.message()) + " (" + what() + ")"};
    if (int rc = ibv_modify_qp(qp_, &a, m); rc != 0) {
      return call_error(errno_of(rc), "ibv_modify_qp " + transition_name(current, next) + " on " + what() + " with " +
                                          qp_attr_mask_names(mask));
    }
    state_ = next;
    return {};
  }

  Result<QpAttr> query() const override {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    const int mask = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
                     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
                     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP | IBV_QP_DEST_QPN;
    if (int rc = ibv_query_qp(qp_, &a, mask, &ia); rc != 0) return call_error(errno_of(rc), "ibv_query_qp on " + what());
    state_ = static_cast<QpState>(a.qp_state);
    return from_ibv_qp_attr(a);
  }
  QpInitAttr init_attr() const override { return init_; }

  PostSendResult post_send(const SendWr& first) override {
    return post_send_impl(&first, [](const SendWr* w, std::size_t) { return w->next; });
  }
  PostSendResult post_send(std::span<const SendWr> wrs) override {
    if (wrs.empty()) return PostSendResult::all_posted(0);
    return post_send_impl(wrs.data(), [wrs](const SendWr*, std::size_t i) {
      return i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
    });
  }
  PostRecvResult post_recv(const RecvWr& first) override {
    return post_recv_impl(&first, [](const RecvWr* w, std::size_t) { return w->next; });
  }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override {
    if (wrs.empty()) return PostRecvResult::all_posted(0);
    return post_recv_impl(wrs.data(), [wrs](const RecvWr*, std::size_t i) {
      return i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
    });
  }

  Status attach_mcast(const Gid& mgid) override {
    if (init_.qp_type != QpType::UD) {
      return Error{EINVAL, "attach_mcast on " + what() + ": only UD QPs join multicast groups"};
    }
    if (!mgid.is_multicast()) {
      return Error{EINVAL, "attach_mcast on " + what() + ": " + mgid.to_string() +
                               " is not a multicast GID (ff00::/8, or ::ffff:224.0.0.0/100 for RoCEv2 IPv4 groups)"};
    }
    if (attached_.count(mgid) != 0) return {};  // attached already: still one copy per datagram
    ibv_gid gid = to_ibv_gid(mgid);
    if (int rc = ibv_attach_mcast(qp_, &gid, 0); rc != 0) {
      return call_error(errno_of(rc), "ibv_attach_mcast " + mgid.to_string() + " on " + what());
    }
    // RoCE: the IP layer must accept the group's packets (rdma-lab.md).
    if (auto s = pd_->dev->joins.join(mgid); !s.ok()) {
      ibv_detach_mcast(qp_, &gid, 0);
      return Error{s.code(), "attach_mcast " + mgid.to_string() + " on " + what() + ": " + std::string(s.message())};
    }
    attached_.insert(mgid);
    return {};
  }

  Status detach_mcast(const Gid& mgid) override {
    if (attached_.count(mgid) == 0) {
      return Error{EINVAL, "detach_mcast on " + what() + ": " + mgid.to_string() + " is not attached"};
    }
    ibv_gid gid = to_ibv_gid(mgid);
    if (int rc = ibv_detach_mcast(qp_, &gid, 0); rc != 0) {
      return call_error(errno_of(rc), "ibv_detach_mcast " + mgid.to_string() + " on " + what());
    }
    attached_.erase(mgid);
    return pd_->dev->joins.leave(mgid);
  }

 private:
  // "RC QP 0x000011 on rxe0"
  std::string what() const {
    return std::string(qp_type_name(init_.qp_type)) + " QP " + hex24(qp_ ? qp_->qp_num : 0) + " on " + pd_->dev->name;
  }

  Status check_send(const SendWr& wr) const {
    const auto bad = [&](std::string why) {
      return Error{EINVAL, "post_send on " + what() + ", WR " + std::to_string(wr.wr_id) + " (" +
                               std::string(wr_opcode_name(wr.opcode)) + "): " + why};
    };
    if (state_ == QpState::RESET || state_ == QpState::INIT || state_ == QpState::RTR) {
      return bad("the QP is in " + std::string(qp_state_name(state_)) + "; the send queue takes WRs from RTS on");
    }
    if (static_cast<unsigned>(wr.opcode) > static_cast<unsigned>(WrOpcode::ATOMIC_FETCH_AND_ADD)) {
      return bad("opcode " + std::to_string(static_cast<unsigned>(wr.opcode)) + " is not a work request opcode");
    }
    if (!opcode_valid_for(init_.qp_type, wr.opcode)) {
      return bad("not valid on a " + std::string(qp_type_name(init_.qp_type)) + " QP");
    }
    if (wr.sg_list.size() > init_.cap.max_send_sge) {
      return bad(std::to_string(wr.sg_list.size()) + " SGEs, the QP takes at most max_send_sge " +
                 std::to_string(init_.cap.max_send_sge));
    }
    if (wr.send_flags.has(SendFlag::INLINE)) {
      std::uint64_t total = 0;
      for (const auto& s : wr.sg_list) total += s.length;
      if (total > init_.cap.max_inline_data) {
        return bad("IBV_SEND_INLINE with " + std::to_string(total) + " bytes, max_inline_data is " +
                   std::to_string(init_.cap.max_inline_data));
      }
    }
    if (wr_opcode_info(wr.opcode).is(wire::kWrAtomic)) {
      if (wr.sg_list.size() != 1 || wr.sg_list[0].length != 8) {
        return bad("an atomic takes exactly one 8-byte SGE for the original value");
      }
      if (wr.atomic.remote_addr % 8 != 0) {
        return bad("atomic.remote_addr 0x" + hex64(wr.atomic.remote_addr) + " is not 8-byte aligned");
      }
    }
    if (init_.qp_type == QpType::UD) {
      if (wr.ud.ah == nullptr) return bad("a UD send needs ud.ah");
      if (ibv_ah_of(wr.ud.ah) == nullptr) return bad("ud.ah was not made by this backend");
      if (wr.ud.remote_qpn > kQpnMask) return bad("ud.remote_qpn " + std::to_string(wr.ud.remote_qpn) + " is wider than 24 bits");
    }
    return {};
  }

  static std::string hex64(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
  }

  static void to_ibv_send_wr(const SendWr& wr, ibv_sge* sge, ibv_send_wr* out) {
    *out = ibv_send_wr{};
    for (std::size_t i = 0; i < wr.sg_list.size(); ++i) {
      sge[i] = ibv_sge{wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
    }
    out->wr_id = wr.wr_id;
    out->sg_list = sge;
    out->num_sge = static_cast<int>(wr.sg_list.size());
    out->opcode = static_cast<ibv_wr_opcode>(wr.opcode);
    out->send_flags = wr.send_flags.bits();
    if (wr_opcode_info(wr.opcode).is(wire::kWrImm)) {
      out->imm_data = htonl(wr.imm_data);  // our interface: host order; ibverbs: big-endian
    }
    switch (wr.opcode) {
      case WrOpcode::RDMA_WRITE:
      case WrOpcode::RDMA_WRITE_WITH_IMM:
      case WrOpcode::RDMA_READ:
        out->wr.rdma.remote_addr = wr.rdma.remote_addr;
        out->wr.rdma.rkey = wr.rdma.rkey;
        break;
      case WrOpcode::ATOMIC_CMP_AND_SWP:
      case WrOpcode::ATOMIC_FETCH_AND_ADD:
        out->wr.atomic.remote_addr = wr.atomic.remote_addr;
        out->wr.atomic.compare_add = wr.atomic.compare_add;
        out->wr.atomic.swap = wr.atomic.swap;
        out->wr.atomic.rkey = wr.atomic.rkey;
        break;
      case WrOpcode::SEND:
      case WrOpcode::SEND_WITH_IMM:
        if (wr.ud.ah != nullptr) {
          out->wr.ud.ah = ibv_ah_of(wr.ud.ah);
          out->wr.ud.remote_qpn = wr.ud.remote_qpn;
          out->wr.ud.remote_qkey = wr.ud.remote_qkey;
        }
        break;
    }
  }

  // Converts WRs into chunks of up to kPostBatch (and kSgePool SGEs) and
  // posts each chunk as one chain.
  template <class Next>
  PostSendResult post_send_impl(const SendWr* first, Next next) {
    std::array<ibv_send_wr, kPostBatch> w;
    std::array<const SendWr*, kPostBatch> ours{};
    std::array<ibv_sge, kSgePool> sge;
    std::size_t n = 0, nsge = 0, posted = 0, index = 0;
    const auto flush = [&]() -> PostSendResult {
      if (n == 0) return PostSendResult::all_posted(posted);
      for (std::size_t i = 0; i + 1 < n; ++i) w[i].next = &w[i + 1];
      w[n - 1].next = nullptr;
      ibv_send_wr* bad = nullptr;
      if (int rc = ibv_post_send(qp_, w.data(), &bad); rc != 0) {
        const std::size_t k = bad != nullptr ? static_cast<std::size_t>(bad - w.data()) : 0;
        const SendWr* b = ours[k < n ? k : 0];
        const int code = errno_of(rc);
        return PostSendResult::failed(posted + k, b,
                                      call_error(code, "ibv_post_send on " + what() + ", WR " + std::to_string(b->wr_id) +
                                                           (code == ENOMEM ? " (send queue full)" : "")));
      }
      posted += n;
      n = 0;
      nsge = 0;
      return PostSendResult::all_posted(posted);
    };
    for (const SendWr* wr = first; wr != nullptr; wr = next(wr, index++)) {
      if (auto s = check_send(*wr); !s.ok()) {
        if (auto f = flush(); !f.ok()) return f;
        return PostSendResult::failed(posted, wr, s.error());
      }
      if (n == kPostBatch || nsge + wr->sg_list.size() > kSgePool) {
        if (auto f = flush(); !f.ok()) return f;
      }
      to_ibv_send_wr(*wr, &sge[nsge], &w[n]);
      ours[n++] = wr;
      nsge += wr->sg_list.size();
    }
    return flush();
  }

  template <class Next>
  PostRecvResult post_recv_impl(const RecvWr* first, Next next) {
    std::array<ibv_recv_wr, kPostBatch> w;
    std::array<const RecvWr*, kPostBatch> ours{};
    std::array<ibv_sge, kSgePool> sge;
    std::size_t n = 0, nsge = 0, posted = 0, index = 0;
    const auto flush = [&]() -> PostRecvResult {
      if (n == 0) return PostRecvResult::all_posted(posted);
      for (std::size_t i = 0; i + 1 < n; ++i) w[i].next = &w[i + 1];
      w[n - 1].next = nullptr;
      ibv_recv_wr* bad = nullptr;
      if (int rc = ibv_post_recv(qp_, w.data(), &bad); rc != 0) {
        const std::size_t k = bad != nullptr ? static_cast<std::size_t>(bad - w.data()) : 0;
        const RecvWr* b = ours[k < n ? k : 0];
        const int code = errno_of(rc);
        return PostRecvResult::failed(posted + k, b,
                                      call_error(code, "ibv_post_recv on " + what() + ", WR " + std::to_string(b->wr_id) +
                                                           (code == ENOMEM ? " (receive queue full)" : "")));
      }
      posted += n;
      n = 0;
      nsge = 0;
      return PostRecvResult::all_posted(posted);
    };
    for (const RecvWr* wr = first; wr != nullptr; wr = next(wr, index++)) {
      Status s;
      if (srq_) {
        s = Error{EINVAL, "post_recv on " + what() + ": the QP takes its receives from an SRQ; post to the SRQ"};
      } else if (state_ == QpState::RESET) {
        s = Error{EINVAL, "post_recv on " + what() + ": the QP is in RESET; the receive queue takes WRs from INIT on"};
      } else if (wr->sg_list.size() > init_.cap.max_recv_sge) {
        s = Error{EINVAL, "post_recv on " + what() + ", WR " + std::to_string(wr->wr_id) + ": " +
                              std::to_string(wr->sg_list.size()) + " SGEs, the QP takes at most max_recv_sge " +
                              std::to_string(init_.cap.max_recv_sge)};
      }
      if (!s.ok()) {
        if (auto f = flush(); !f.ok()) return f;
        return PostRecvResult::failed(posted, wr, s.error());
      }
      if (n == kPostBatch || nsge + wr->sg_list.size() > kSgePool) {
        if (auto f = flush(); !f.ok()) return f;
      }
      w[n] = ibv_recv_wr{};
      for (std::size_t i = 0; i < wr->sg_list.size(); ++i) {
        sge[nsge + i] = ibv_sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
      }
      w[n].wr_id = wr->wr_id;
      w[n].sg_list = &sge[nsge];
      w[n].num_sge = static_cast<int>(wr->sg_list.size());
      ours[n++] = wr;
      nsge += wr->sg_list.size();
    }
    return flush();
  }

  std::shared_ptr<PdHolder> pd_;
  std::shared_ptr<CqHolder> send_cq_;
  std::shared_ptr<CqHolder> recv_cq_;
  std::shared_ptr<SrqHolder> srq_;
  QpInitAttr init_;
  ibv_qp* qp_ = nullptr;
  EventTarget target_;
  mutable QpState state_ = QpState::RESET;
  std::set<Gid> attached_;
};

}  // namespace

Result<std::unique_ptr<QueuePair>> make_qp(std::shared_ptr<PdHolder> pd, const QpInitAttr& attr) {
  const auto t = static_cast<unsigned>(attr.qp_type);
  if (attr.qp_type != QpType::RC && attr.qp_type != QpType::UC && attr.qp_type != QpType::UD) {
    return Error{EINVAL, "create_qp: QP type " + std::to_string(t) + " is not RC (2), UC (3) or UD (4)"};
  }
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr) return Error{EINVAL, "create_qp: send_cq and recv_cq are required"};
  auto scq = cq_holder_of(attr.send_cq);
  auto rcq = cq_holder_of(attr.recv_cq);
  if (!scq || !rcq) return Error{EINVAL, "create_qp: a CQ was not made by the ibv backend"};
  if (scq->dev != pd->dev || rcq->dev != pd->dev) return Error{EINVAL, "create_qp: a CQ belongs to another device"};
  std::shared_ptr<SrqHolder> srq;
  if (attr.srq != nullptr) {
    srq = srq_holder_of(attr.srq);
    if (!srq) return Error{EINVAL, "create_qp: the SRQ was not made by the ibv backend"};
    if (srq->pd != pd) return Error{EINVAL, "create_qp: the SRQ belongs to another protection domain"};
  }
  auto qp = std::make_unique<IbvQp>(pd, std::move(scq), std::move(rcq), std::move(srq), attr);
  if (auto s = qp->create(); !s.ok()) return s.error();
  return std::unique_ptr<QueuePair>(std::move(qp));
}

}  // namespace qpgate::verbs::ibv
