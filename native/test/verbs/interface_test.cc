// The interface is implementable from the backend-independent pieces: a
// minimal QueuePair made of the state machine, a SendQueue, a ReceiveRing
// and the multicast table — the shape the soft transport will fill in (it
// adds the requester/responder/completer behind post_send and the CQs).
#include <gtest/gtest.h>

#include <array>
#include <memory>

#include "verbs/device.h"
#include "verbs/qp_state_machine.h"
#include "verbs/soft/mcast_table.h"
#include "verbs/soft/work_queue.h"

namespace qpgate::verbs {
namespace {

class SketchQp final : public QueuePair {
 public:
  SketchQp(const QpInitAttr& init, std::uint32_t qpn, soft::McastTable* groups)
      : init_(init),
        qpn_(qpn),
        sq_(soft::SendQueueConfig{init.qp_type, init.cap, init.sq_sig_all, soft::kMaxMsgSize, 1024, qpn}),
        rq_(init.cap.max_recv_wr, init.cap.max_recv_sge, "RQ of QP " + std::to_string(qpn)),
        groups_(groups) {}

  std::uint32_t qp_num() const override { return qpn_; }
  QpType qp_type() const override { return init_.qp_type; }
  QpState state() const override { return attr_.qp_state; }

  Status modify(const QpAttr& attr, QpAttrMaskFlags mask) override {
    ModifyLimits lim;
    lim.unsupported = QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE;
    lim.backend_name = "the soft backend";
    if (Status s = check_modify_qp(init_.qp_type, attr_.qp_state, attr, mask, lim); !s.ok()) return s;
    apply_modify_qp(attr_, attr, mask);
    return {};
  }
  Result<QpAttr> query() const override { return attr_; }
  QpInitAttr init_attr() const override { return init_; }

  PostSendResult post_send(const SendWr& first) override {
    if (Status s = soft::check_post_send_state(attr_.qp_state); !s.ok()) return PostSendResult::failed(0, &first, s.error());
    return sq_.post(first);
  }
  PostSendResult post_send(std::span<const SendWr> wrs) override {
    if (Status s = soft::check_post_send_state(attr_.qp_state); !s.ok()) {
      return PostSendResult::failed(0, wrs.empty() ? nullptr : wrs.data(), s.error());
    }
    return sq_.post(wrs);
  }
  PostRecvResult post_recv(const RecvWr& first) override {
    if (Status s = soft::check_post_recv_state(attr_.qp_state); !s.ok()) return PostRecvResult::failed(0, &first, s.error());
    return rq_.post(first);
  }
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override {
    if (Status s = soft::check_post_recv_state(attr_.qp_state); !s.ok()) {
      return PostRecvResult::failed(0, wrs.empty() ? nullptr : wrs.data(), s.error());
    }
    return rq_.post(wrs);
  }

  Status attach_mcast(const Gid& mgid) override {
    if (init_.qp_type != QpType::UD) return Error{EINVAL, "attach_mcast: only UD QPs join multicast groups"};
    auto r = groups_->attach(mgid, qpn_);
    return r.ok() ? Status{} : r.status();
  }
  Status detach_mcast(const Gid& mgid) override {
    auto r = groups_->detach(mgid, qpn_);
    return r.ok() ? Status{} : r.status();
  }

  const soft::SendQueue& sq() const { return sq_; }

 private:
  QpInitAttr init_;
  std::uint32_t qpn_;
  QpAttr attr_;
  soft::SendQueue sq_;
  soft::ReceiveRing rq_;
  soft::McastTable* groups_;
};

QpInitAttr ud_init() {
  QpInitAttr init;
  init.qp_type = QpType::UD;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  return init;
}

TEST(Interface, AUdQpWalksToRtsJoinsAGroupAndPostsThroughTheInterface) {
  soft::McastTable groups;
  std::unique_ptr<QueuePair> qp = std::make_unique<SketchQp>(ud_init(), 0x11, &groups);

  QpAttr a;
  a.qp_state = QpState::INIT;
  a.port_num = 1;
  a.qkey = 0x01234567;  // librdmacm's RDMA_UDP_QKEY
  ASSERT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());

  RecvWr rwr;
  EXPECT_TRUE(qp->post_recv(rwr).ok()) << "receives are accepted from INIT";
  SendWr swr;
  const PostSendResult early = qp->post_send(swr);
  EXPECT_EQ(early.error().code, EINVAL);
  EXPECT_EQ(early.bad_wr(), &swr);

  a.qp_state = QpState::RTR;
  ASSERT_TRUE(qp->modify(a, QpAttrMaskFlags(QpAttrMask::STATE)).ok());
  a.qp_state = QpState::RTS;
  a.sq_psn = 0;
  ASSERT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN).ok());
  EXPECT_EQ(qp->state(), QpState::RTS);
  EXPECT_EQ(qp->query()->qkey, 0x01234567u);

  const Gid mgid = *soft::mgid_for_ipv4_group(0xef000001);
  ASSERT_TRUE(qp->attach_mcast(mgid).ok());
  ASSERT_TRUE(qp->attach_mcast(mgid).ok()) << "twice is fine";
  EXPECT_EQ(groups.qps(mgid).size(), 1u);

  class Ah final : public AddressHandle {
   public:
    const AhAttr& attr() const override { return attr_; }
    AhAttr attr_;
  } ah;
  ah.attr_.dgid = mgid;
  std::array<SendWr, 2> wrs{};
  for (auto& w : wrs) {
    w.ud.ah = &ah;
    w.ud.remote_qpn = kMulticastQpn;
    w.ud.remote_qkey = 0x01234567;
  }
  const PostSendResult r = qp->post_send(wrs);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(static_cast<const SketchQp&>(*qp).sq().size(), 2u);

  QpAttr alt;
  EXPECT_EQ(qp->modify(alt, QpAttrMaskFlags(QpAttrMask::ALT_PATH)).message(),
            "IBV_QP_ALT_PATH is not allowed on RTS→RTS for UD");
  ASSERT_TRUE(qp->detach_mcast(mgid).ok());
  EXPECT_EQ(groups.group_count(), 0u);
}

}  // namespace
}  // namespace qpgate::verbs
