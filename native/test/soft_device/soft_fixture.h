// A soft device with one PD, one CQ and one registered buffer, and helpers
// that bring QPs through RESET → INIT → RTR → RTS the way rc_pingpong does.
#pragma once

#include <gtest/gtest.h>

#include <time.h>

#include <cstring>
#include <memory>
#include <vector>

#include "udp_helpers.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"

namespace qpgate::verbs::soft::test {

inline std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline constexpr std::uint32_t kQkey = 0x11111111;  // ud_pingpong's

struct Node {
  explicit Node(const char* address, std::size_t buffer_bytes = 1 << 16, SoftDeviceOptions o = {})
      : buffer(buffer_bytes, 0) {
    o.address_or_name = address;
    o.net.probe_ipv4_id = false;
    auto d = open_soft_device(o);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
    if (!d.ok()) return;
    device = std::move(*d);
    auto p = device->alloc_pd();
    pd = std::move(p.value());
    auto c = device->create_cq(256, 0);
    cq = std::move(c.value());
    auto m = pd->reg_mr(buffer.data(), buffer.size(), kAllAccess);
    EXPECT_TRUE(m.ok());
    mr = std::move(*m);
  }
  bool ok() const { return device != nullptr; }

  std::unique_ptr<QueuePair> create_qp(QpType type, SharedReceiveQueue* srq = nullptr) {
    QpInitAttr init;
    init.qp_type = type;
    init.send_cq = cq.get();
    init.recv_cq = cq.get();
    init.srq = srq;
    init.cap.max_send_wr = 64;
    init.cap.max_recv_wr = srq != nullptr ? 0 : 64;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 2;
    init.cap.max_inline_data = 64;
    auto qp = pd->create_qp(init);
    EXPECT_TRUE(qp.ok()) << (qp.ok() ? "" : qp.error().message);
    return qp.ok() ? std::move(*qp) : nullptr;
  }

  // UD: RESET → INIT → RTR → RTS.
  std::unique_ptr<QueuePair> ud_qp(std::uint32_t qkey = kQkey) {
    auto qp = create_qp(QpType::UD);
    QpAttr a;
    a.qp_state = QpState::INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = qkey;
    EXPECT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY).ok());
    a.qp_state = QpState::RTR;
    EXPECT_TRUE(qp->modify(a, QpAttrMask::STATE).ok());
    a.qp_state = QpState::RTS;
    a.sq_psn = 0;
    EXPECT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN).ok());
    return qp;
  }

  // RC/UC to INIT only.
  std::unique_ptr<QueuePair> connected_qp_init(QpType type) {
    auto qp = create_qp(type);
    QpAttr a;
    a.qp_state = QpState::INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    if (type == QpType::UC) a.qp_access_flags = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    EXPECT_TRUE(qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT |
                                  QpAttrMask::ACCESS_FLAGS).ok());
    return qp;
  }

  // INIT → RTR → RTS towards (peer_gid, peer_qpn).
  void connect(QueuePair& qp, const Gid& peer_gid, std::uint32_t peer_qpn, std::uint32_t my_psn,
               std::uint32_t peer_psn) {
    QpAttr a;
    a.qp_state = QpState::RTR;
    a.path_mtu = Mtu::MTU_1024;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = peer_psn;
    a.ah_attr.dgid = peer_gid;
    a.ah_attr.hop_limit = 64;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    QpAttrMaskFlags m = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
                        QpAttrMask::RQ_PSN;
    if (qp.qp_type() == QpType::RC) m = m | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
    Status s = qp.modify(a, m);
    EXPECT_TRUE(s.ok()) << s.message();
    a.qp_state = QpState::RTS;
    a.sq_psn = my_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    m = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
    if (qp.qp_type() == QpType::RC) {
      m = m | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT | QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC;
    }
    s = qp.modify(a, m);
    EXPECT_TRUE(s.ok()) << s.message();
  }

  Sge sge(std::size_t offset, std::uint32_t length) const {
    return Sge{reinterpret_cast<std::uint64_t>(buffer.data() + offset), length, mr->lkey()};
  }

  void post_recv(QueuePair& qp, std::uint64_t wr_id, std::size_t offset, std::uint32_t length) {
    const Sge s = sge(offset, length);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = std::span<const Sge>(&s, 1);
    auto r = qp.post_recv(wr);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  }

  int work() { return device->do_work(now_ns()); }

  // Polls until n completions or the timeout, driving every node given.
  std::vector<Wc> poll(std::size_t n, const std::vector<Node*>& drive, int timeout_ms = 2000) {
    std::vector<Wc> out;
    spin_until([&] { return out.size() >= n; },
               [&] {
                 for (Node* node : drive) node->work();
                 Wc wc[16];
                 auto got = cq->poll(std::span<Wc>(wc, 16));
                 if (got.ok()) out.insert(out.end(), wc, wc + *got);
               },
               std::chrono::milliseconds(timeout_ms));
    return out;
  }

  std::vector<std::uint8_t> buffer;
  std::unique_ptr<SoftDevice> device;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
};

inline Gid gid_of(const char* address) { return *Gid::parse(address); }

}  // namespace qpgate::verbs::soft::test
