#include "backend.h"

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "../common/ud_setup.h"
#include "verbs/rc_connect.h"
#include "verbs/soft/soft_device.h"
#ifdef QPGATE_CONFORMANCE_IBV
#include "verbs/ibv/ibv_device.h"
#endif

namespace qpgate::verbs::conformance {
namespace {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

bool ibv_required() {
  const char* e = std::getenv("QPGATE_REQUIRE_IBV");
  return e != nullptr && std::string(e) == "1";
}

// Registers the side's buffer and makes its PD and CQ.
void finish(Side& s) {
  auto pd = s.device->alloc_pd();
  ASSERT_TRUE(pd.ok()) << pd.error().message;
  s.pd = std::move(*pd);
  auto cq = s.device->create_cq(1024, 0);
  ASSERT_TRUE(cq.ok()) << cq.error().message;
  s.cq = std::move(*cq);
  auto mr = s.pd->reg_mr(s.buffer.data(), s.buffer.size(), kAllAccess);
  ASSERT_TRUE(mr.ok()) << mr.error().message;
  s.mr = std::move(*mr);
}

void open_soft(Side& s, const std::string& address, bool interop = false) {
  soft::SoftDeviceOptions o;
  o.address_or_name = address;
  o.net.probe_ipv4_id = false;
  if (interop) {
    // rxe's IPv4 ID is not 0: only the real header lets us check its ICRC.
    o.net.receive_mode = soft::ReceiveMode::kAfPacket;
    // Per-flow sockets open lazily, on the first packet, outside the
    // namespace guard; one socket on 4791 opens here, inside it.
    o.net.per_flow_source_port = false;
  }
  auto d = soft::open_soft_device(o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  soft::SoftDevice* raw = d->get();
  s.gid = raw->gid();
  s.work = [raw] { raw->do_work(now_ns()); };
  if (interop) s.soft = raw;
  s.device = std::move(*d);
  finish(s);
}

// This thread inside network namespace `name` for the guard's life.
class NetnsGuard {
 public:
  explicit NetnsGuard(const std::string& name) {
    home_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = ::open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    ok_ = home_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
    if (target >= 0) ::close(target);
  }
  ~NetnsGuard() {
    if (ok_) setns(home_, CLONE_NEWNET);
    if (home_ >= 0) ::close(home_);
  }
  bool ok() const { return ok_; }

 private:
  int home_ = -1;
  bool ok_ = false;
};

#ifdef QPGATE_CONFORMANCE_IBV
void open_ibv(Side& s, const char* name) {
  auto d = ibv::open_ibv_device({.device = name});
  ASSERT_TRUE(d.ok()) << d.error().message;
  s.gid = (*d)->gid().gid;
  s.sgid_index = static_cast<std::uint8_t>((*d)->gid().index);
  s.work = [] {};
  s.device = std::move(*d);
  finish(s);
}
#endif

}  // namespace

void Conformance::TearDown() {
  for (const Side& s : side) {
    if (s.soft == nullptr) continue;
    // Interop: every rxe packet the soft side took (if it was a receiver in
    // this test) was checked against its real headers, and none failed.
    EXPECT_EQ(s.soft->wire_counters().rejected_count(wire::DecodeError::kIcrcMismatch), 0u);
    EXPECT_EQ(s.soft->ingress_counters().icrc_unverifiable.get(), 0u);
    EXPECT_EQ(s.soft->wire_counters().accepted.get(), s.soft->net_counters().rx_packets.get());
  }
}

void Conformance::SetUp() {
  if (GetParam() == "soft") {
    // Each test its own addresses: a test that failed mid-way never blocks the next.
    std::random_device rd;
    const std::string net = "127.64." + std::to_string(rd() % 250) + ".";
    const std::string host = std::to_string(1 + rd() % 120);
    open_soft(side[0], net + host);
    open_soft(side[1], net + std::to_string(130 + rd() % 120));
    return;
  }
#ifdef QPGATE_CONFORMANCE_IBV
  if (GetParam() == "ibv") {
    const char* a = std::getenv("QPGATE_VM_VETH_A_DEV");
    const char* b = std::getenv("QPGATE_VM_VETH_B_DEV");
    if (a == nullptr || b == nullptr || ibv::list_ibv_devices().empty()) {
      if (ibv_required()) FAIL() << "QPGATE_REQUIRE_IBV=1 but there is no rxe pair (test/rdma-vm/run --veth)";
      GTEST_SKIP() << "needs two rxe devices on a veth pair (test/rdma-vm/run --veth)";
    }
    open_ibv(side[0], a);
    open_ibv(side[1], b);
    return;
  }
  // soft-rxe (the soft side is side 0) or rxe-soft (side 1).
  const char* ns = std::getenv("QPGATE_VM_NETNS");
  const char* ns_ip = std::getenv("QPGATE_VM_NETNS_IP");
  const char* rxe = std::getenv("QPGATE_VM_NETNS_RXE_DEV");
  if (ns == nullptr || ns_ip == nullptr || rxe == nullptr || ibv::list_ibv_devices().empty()) {
    if (ibv_required()) FAIL() << "QPGATE_REQUIRE_IBV=1 but there is no rxe/netns pair (test/rdma-vm/run --netns)";
    GTEST_SKIP() << "needs rxe_v and the qpgate-peer namespace (test/rdma-vm/run --netns)";
  }
  const int soft_side = GetParam() == "soft-rxe" ? 0 : 1;
  {
    NetnsGuard in_peer(ns);
    ASSERT_TRUE(in_peer.ok()) << "setns into " << ns << ": " << std::strerror(errno);
    open_soft(side[soft_side], ns_ip, /*interop=*/true);
  }
  const std::string ns_name = ns;
  side[soft_side].in_netns = [ns_name](const std::function<void()>& fn) {
    NetnsGuard in_peer(ns_name);
    ASSERT_TRUE(in_peer.ok());
    fn();
  };
  open_ibv(side[1 - soft_side], rxe);
#else
  if (ibv_required()) FAIL() << "QPGATE_REQUIRE_IBV=1 but this build has no ibv backend (no libibverbs-dev)";
  GTEST_SKIP() << "built without the ibv backend";
#endif
}

std::unique_ptr<QueuePair> Conformance::make_qp(int s, QpType type, std::uint32_t send_wr, std::uint32_t recv_wr) {
  QpInitAttr init;
  init.qp_type = type;
  init.send_cq = side[s].cq.get();
  init.recv_cq = side[s].cq.get();
  init.cap.max_send_wr = send_wr;
  init.cap.max_recv_wr = recv_wr;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  auto qp = side[s].pd->create_qp(init);
  EXPECT_TRUE(qp.ok()) << (qp.ok() ? "" : qp.error().message);
  return qp.ok() ? std::move(*qp) : nullptr;
}

void Conformance::connect(QueuePair& q0, QueuePair& q1, std::uint8_t min_rnr_timer) {
  QueuePair* q[2] = {&q0, &q1};
  const std::uint32_t psn[2] = {random_psn(), random_psn()};
  for (int i = 0; i < 2; ++i) {
    RcParams local;
    local.psn = psn[i];
    local.access = kAllAccess;
    local.max_rd_atomic = 4;
    local.max_dest_rd_atomic = 4;
    local.min_rnr_timer = min_rnr_timer;
    local.sgid_index = side[i].sgid_index;
    const Side& peer = side[1 - i];
    const Status st = connect_rc(*q[i], local, RcPeer{peer.gid, q[1 - i]->qp_num(), psn[1 - i], Mtu::MTU_1024, std::nullopt});
    ASSERT_TRUE(st.ok()) << st.message();
  }
}

void Conformance::ready_ud(QueuePair& q, std::uint32_t qkey) { test::ready_ud(q, qkey, random_psn()); }

std::vector<Wc> Conformance::poll(int s, std::size_t n, std::chrono::milliseconds timeout) {
  std::vector<Wc> out;
  Wc batch[32];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    side[0].work();
    side[1].work();
    auto r = side[s].cq->poll(std::span<Wc>(batch, std::min<std::size_t>(32, n - out.size())));
    EXPECT_TRUE(r.ok());
    if (!r.ok()) break;
    out.insert(out.end(), batch, batch + *r);
    if (*r == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return out;
}

void Conformance::idle(std::chrono::milliseconds how_long) {
  const auto until = std::chrono::steady_clock::now() + how_long;
  while (std::chrono::steady_clock::now() < until) {
    side[0].work();
    side[1].work();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string wc_text(const Wc& wc) {
  return std::string(wc_status_enum_name(wc.status)) + " " + std::string(wc_opcode_name(wc.opcode)) + " wr_id " +
         std::to_string(wc.wr_id);
}

}  // namespace qpgate::verbs::conformance
