// Hosts and QPs for the SoftQp tests: one Host is one "machine" (MR table,
// async queue, multicast table, CQs, 1 MiB of registered memory) at one IP.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "loopback_wire.h"
#include "verbs/soft/soft_qp.h"
#include "wire/opcode.h"

namespace qpgate::verbs::soft::testing {

inline wire::IpAddress ip4(std::uint8_t d) { return wire::IpAddress::v4(10, 0, 0, d); }
inline Gid gid_of(const wire::IpAddress& ip) {
  return Gid::from_ipv4((std::uint32_t{ip.bytes[0]} << 24) | (std::uint32_t{ip.bytes[1]} << 16) |
                        (std::uint32_t{ip.bytes[2]} << 8) | ip.bytes[3]);
}

struct Host {
  static constexpr std::size_t kMemBytes = 1 << 20;
  Host(LoopbackWire& w, wire::IpAddress ip_, std::uint32_t cq_depth = 65536)
      : wire_(w), ip(ip_), scq(cq_depth, 1, 0, &events), rcq(cq_depth, 2, 0, &events), mem(kMemBytes / 8) {
    auto r = mrs.register_mr(kPd, addr(), kMemBytes, kAllAccess);
    EXPECT_TRUE(r.ok());
    mr = *r;
  }

  std::unique_ptr<SoftQp> make_qp(QpType type, std::uint32_t qpn, SoftSrq* srq = nullptr, QpCap cap = default_cap(),
                                  Mtu active = Mtu::MTU_1024) {
    QpInitAttr init;
    init.qp_type = type;
    init.cap = cap;
    init.send_cq = &scq;
    init.recv_cq = &rcq;
    init.qp_context = qpn;
    SoftQpContext ctx{wire_.port(ip), mrs, events, mcast, membership, ip, gid_of(ip), {ip}, kPd, &scq, &rcq, srq, qpn, init};
    ctx.active_mtu = active;
    EXPECT_TRUE(SoftQp::check_init(ctx).ok());
    auto qp = std::make_unique<SoftQp>(ctx);
    wire_.attach(*qp, ip, &mcast);
    return qp;
  }
  static QpCap default_cap() {
    QpCap c;
    c.max_send_wr = 4096;
    c.max_recv_wr = 4096;
    c.max_send_sge = 4;
    c.max_recv_sge = 4;
    c.max_inline_data = 256;
    return c;
  }

  std::uint64_t addr(std::size_t off = 0) { return reinterpret_cast<std::uint64_t>(mem.data()) + off; }
  std::uint8_t* bytes(std::size_t off = 0) { return reinterpret_cast<std::uint8_t*>(mem.data()) + off; }
  Sge sge(std::size_t off, std::uint32_t len) { return Sge{addr(off), len, mr.lkey}; }

  std::vector<Wc> poll(SoftCompletionQueue& cq) {
    std::vector<Wc> out(256);
    std::vector<Wc> all;
    while (true) {
      auto r = cq.poll(out);
      if (!r.ok() || *r == 0) break;
      all.insert(all.end(), out.begin(), out.begin() + static_cast<long>(*r));
    }
    return all;
  }
  std::vector<Wc> send_wcs() { return poll(scq); }
  std::vector<Wc> recv_wcs() { return poll(rcq); }
  std::vector<AsyncEvent> drain_events() {
    std::vector<AsyncEvent> v;
    while (auto e = events.pop()) v.push_back(*e);
    return v;
  }

  static constexpr std::uint32_t kPd = 7;
  LoopbackWire& wire_;
  wire::IpAddress ip;
  MrTable mrs;
  AsyncEventQueue events;
  McastTable mcast;
  FakeMembership membership;
  SoftCompletionQueue scq;
  SoftCompletionQueue rcq;
  std::vector<std::uint64_t> mem;  // 8-byte aligned
  MrEntry mr;
};

struct RcOptions {
  Mtu mtu = Mtu::MTU_1024;
  std::uint32_t psn_a = 0x100;  // a's send PSN (= b's receive PSN)
  std::uint32_t psn_b = 0x200;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t max_rd_atomic = 16;
  AccessFlags access = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
};

// RESET → INIT → RTR → RTS for one side of a connected QP.
inline void bring_up(SoftQp& qp, QpType type, const wire::IpAddress& peer, std::uint32_t peer_qpn,
                     std::uint32_t sq_psn, std::uint32_t rq_psn, const RcOptions& o) {
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.access;
  ASSERT_TRUE(qp.modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS).ok());
  a.qp_state = QpState::RTR;
  a.path_mtu = o.mtu;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.ah_attr.dgid = gid_of(peer);
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = o.min_rnr_timer;
  QpAttrMaskFlags m = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN | QpAttrMask::RQ_PSN;
  if (type == QpType::RC) m = m | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
  auto s = qp.modify(a, m);
  ASSERT_TRUE(s.ok()) << s.message();
  a.qp_state = QpState::RTS;
  a.sq_psn = sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  m = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
  if (type == QpType::RC) m = m | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT | QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC;
  s = qp.modify(a, m);
  ASSERT_TRUE(s.ok()) << s.message();
}

// Two hosts, one connected pair (RC or UC) between them.
struct Pair {
  explicit Pair(QpType type = QpType::RC, RcOptions o = {}, std::int64_t latency = 1000)
      : wire(latency), a(wire, ip4(1)), b(wire, ip4(2)), opts(o) {
    qa = a.make_qp(type, 0x11);
    qb = b.make_qp(type, 0x22);
    bring_up(*qa, type, b.ip, 0x22, o.psn_a, o.psn_b, o);
    bring_up(*qb, type, a.ip, 0x11, o.psn_b, o.psn_a, o);
  }
  LoopbackWire wire;
  Host a;
  Host b;
  RcOptions opts;
  std::unique_ptr<SoftQp> qa;
  std::unique_ptr<SoftQp> qb;
};

inline SendWr send_wr(std::uint64_t id, std::span<const Sge> sg, WrOpcode op = WrOpcode::SEND,
                      SendFlags flags = SendFlag::SIGNALED) {
  SendWr w;
  w.wr_id = id;
  w.sg_list = sg;
  w.opcode = op;
  w.send_flags = flags;
  return w;
}

inline RecvWr recv_wr(std::uint64_t id, std::span<const Sge> sg) {
  RecvWr w;
  w.wr_id = id;
  w.sg_list = sg;
  return w;
}

inline void fill(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

using wire::Opcode;
constexpr std::uint8_t op(Opcode o) { return static_cast<std::uint8_t>(o); }

// The request packets `src` put on the wire, in order.
inline std::vector<const WireRecord*> requests(const LoopbackWire& w, const wire::IpAddress& src) {
  std::vector<const WireRecord*> v;
  for (const auto* r : w.sent_by(src)) {
    if (r->packet().op->is(wire::kOpRequest)) v.push_back(r);
  }
  return v;
}

}  // namespace qpgate::verbs::soft::testing
