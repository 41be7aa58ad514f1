// RC endpoints over real UDP on loopback for the acceptance tests of the
// soft backend (issue 3): a device with one PD, one CQ and one registered
// buffer, and QPs brought RESET → INIT → RTR → RTS by verbs::connect_rc.
// Each test uses its own 127.62.x.y addresses, so ctest -j runs them side by
// side.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "soft_fixture.h"
#include "verbs/rc_connect.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"

namespace qpgate::verbs::soft::test {

struct RcOptions {
  Mtu mtu = Mtu::MTU_1024;
  std::uint8_t timeout = 10;  // 4.096 µs × 2^10 ≈ 4.2 ms: the fault tests' local ACK timeout
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 1;  // 0.01 ms
  std::uint8_t max_rd_atomic = 16;
  std::uint32_t max_send_wr = 64;
  std::uint32_t max_recv_wr = 128;
  AccessFlags qp_access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
};

struct Endpoint {
  // `alternate`: the device's second address (GID index 1), or null.
  Endpoint(const char* address, std::size_t buffer_bytes, std::uint32_t cqe = 1024,
           AccessFlags mr_access = kAllAccess, const char* alternate = nullptr)
      : buffer(buffer_bytes, 0) {
    SoftDeviceOptions o;
    o.address_or_name = address;
    if (alternate != nullptr) o.alternate_address = alternate;
    o.net.probe_ipv4_id = false;
    auto d = open_soft_device(o);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
    if (!d.ok()) return;
    device = std::move(*d);
    pd = std::move(device->alloc_pd().value());
    cq = std::move(device->create_cq(cqe, 0).value());
    auto m = pd->reg_mr(buffer.data(), buffer.size(), mr_access);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    if (m.ok()) mr = std::move(*m);
  }
  bool ok() const { return device != nullptr && mr != nullptr; }

  std::unique_ptr<QueuePair> rc_qp(const RcOptions& o) {
    QpInitAttr init;
    init.qp_type = QpType::RC;
    init.send_cq = cq.get();
    init.recv_cq = cq.get();
    init.cap.max_send_wr = o.max_send_wr;
    init.cap.max_recv_wr = o.max_recv_wr;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 2;
    init.cap.max_inline_data = 64;
    auto qp = pd->create_qp(init);
    EXPECT_TRUE(qp.ok()) << (qp.ok() ? "" : qp.error().message);
    if (!qp.ok()) return nullptr;
    return std::move(*qp);
  }

  // INIT → RTR → RTS towards (peer_gid, peer_qpn), through the gateway's own
  // verbs::connect_rc (so every acceptance test exercises it).
  static void connect(QueuePair& qp, const Gid& peer_gid, std::uint32_t peer_qpn, std::uint32_t my_psn,
                      std::uint32_t peer_psn, const RcOptions& o) {
    RcParams local;
    local.psn = my_psn;
    local.mtu = o.mtu;
    local.access = o.qp_access;
    local.timeout = o.timeout;
    local.retry_cnt = o.retry_cnt;
    local.rnr_retry = o.rnr_retry;
    local.min_rnr_timer = o.min_rnr_timer;
    local.max_rd_atomic = o.max_rd_atomic;
    local.max_dest_rd_atomic = o.max_rd_atomic;
    const Status s = connect_rc(qp, local, RcPeer{peer_gid, peer_qpn, peer_psn, o.mtu, std::nullopt});
    ASSERT_TRUE(s.ok()) << s.message();
  }

  std::uint8_t* at(std::size_t offset) { return buffer.data() + offset; }
  std::uint64_t addr(std::size_t offset) const { return reinterpret_cast<std::uint64_t>(buffer.data() + offset); }
  Sge sge(std::size_t offset, std::uint32_t length) const { return Sge{addr(offset), length, mr->lkey()}; }

  Status post_recv(QueuePair& qp, std::uint64_t wr_id, std::size_t offset, std::uint32_t length) {
    const Sge s = sge(offset, length);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = std::span<const Sge>(&s, 1);
    auto r = qp.post_recv(wr);
    return r.ok() ? Status{} : Status{r.error()};
  }

  const SoftQp& soft(const QueuePair& qp) const { return *device->find_qp(qp.qp_num()); }
  int work() { return device->do_work(now_ns()); }

  std::vector<std::uint8_t> buffer;
  std::unique_ptr<SoftDevice> device;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
};

// Two endpoints with one RC QP each, connected to each other.
struct RcPair {
  // `alt_a`, `alt_b`: the devices' alternate addresses (GID index 1), or null.
  RcPair(const char* addr_a, const char* addr_b, std::size_t buffer_bytes, const RcOptions& o = {},
         std::uint32_t cqe = 1024, const char* alt_a = nullptr, const char* alt_b = nullptr)
      : a(addr_a, buffer_bytes, cqe, kAllAccess, alt_a), b(addr_b, buffer_bytes, cqe, kAllAccess, alt_b), options(o) {
    if (!a.ok() || !b.ok()) return;
    qa = a.rc_qp(o);
    qb = b.rc_qp(o);
    Endpoint::connect(*qa, b.device->gid(), qb->qp_num(), kPsnA, kPsnB, o);
    Endpoint::connect(*qb, a.device->gid(), qa->qp_num(), kPsnB, kPsnA, o);
  }
  bool ok() const { return qa != nullptr && qb != nullptr; }
  void work() {
    a.work();
    b.work();
  }
  // Drives both devices until `n` completions are in `cq_of` (or the timeout).
  std::vector<Wc> poll(Endpoint& cq_of, std::size_t n, std::chrono::milliseconds timeout) {
    std::vector<Wc> out;
    spin_until([&] { return out.size() >= n; },
               [&] {
                 work();
                 Wc wc[32];
                 auto got = cq_of.cq->poll(std::span<Wc>(wc, 32));
                 if (got.ok()) out.insert(out.end(), wc, wc + *got);
               },
               timeout);
    return out;
  }

  // PSNs near the 24-bit wrap, so every long run crosses it.
  static constexpr std::uint32_t kPsnA = 0xfffc00;
  static constexpr std::uint32_t kPsnB = 0x000100;

  Endpoint a;
  Endpoint b;
  RcOptions options;
  std::unique_ptr<QueuePair> qa;
  std::unique_ptr<QueuePair> qb;
};

// A signaled SEND of one SGE; `s` must outlive the post (the WR points at it).
inline SendWr send_wr(std::uint64_t id, const Sge& s) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::SEND;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.send_flags = SendFlag::SIGNALED;
  return wr;
}

inline std::int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace qpgate::verbs::soft::test
