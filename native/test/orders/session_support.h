// Helpers for the RC session tests: a gateway soft device with an
// OrderService driven by hand (no engine), and clients with their own soft
// devices and RC QPs on loopback that do the handshake through the service's
// API, send OrderMessages and collect what comes back.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "orders/codec.h"
#include "orders/order_service.h"
#include "../feed/live_util.h"
#include "support.h"
#include "verbs/rc_connect.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"

namespace qpgate::orders::test {

// A soft device on a loopback address, as the feed's live tests open them.
using feed::test::open_device;

inline ServiceConfig service_config(const std::string& journal_path) {
  ServiceConfig c;
  c.handler = small_config(journal_path);
  c.handler.sessions.clear();
  c.handler.journal.sync = SyncPolicy::kGroupCommit;
  c.recv_depth = 16;
  c.send_depth = 16;
  c.back_pressure_messages = 64;
  c.resend_capacity = 256;
  c.max_queued_messages = 256;
  return c;
}

// A received message, decoded from its own copy of the bytes.
struct Got {
  std::vector<std::uint8_t> bytes;
  OrderMessage message;
  template <typename T>
  const T* as() const { return std::get_if<T>(&message); }
};

inline std::uint64_t app_seq_of(const OrderMessage& m) {
  return std::visit([](const auto& v) -> std::uint64_t {
    if constexpr (requires { v.app_seq; }) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, Welcome>) return v.app_seq;
    }
    return 0;
  }, m);
}

// The app_seqs of the sequenced messages a client received, in order.
template <typename C>
std::vector<std::uint64_t> app_seqs(const C& c) {
  std::vector<std::uint64_t> out;
  for (const auto& g : c.received) {
    if (const std::uint64_t s = app_seq_of(g->message); s != 0) out.push_back(s);
  }
  return out;
}

inline std::vector<std::uint64_t> one_to(std::uint64_t n, std::uint64_t from = 1) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = from; i <= n; ++i) v.push_back(i);
  return v;
}

class Client {
 public:
  static constexpr std::size_t kSlot = 1024;
  static constexpr std::uint32_t kRecvSlots = 64;
  static constexpr std::uint32_t kSendSlots = 64;

  explicit Client(const std::string& address) : buffer_(kSlot * (kRecvSlots + kSendSlots + 1), 0) {
    device = open_device(address.c_str());
    if (!device) return;
    pd_ = std::move(device->alloc_pd().value());
    cq_ = std::move(device->create_cq(512, 0).value());
    mr_ = std::move(pd_->reg_mr(buffer_.data(), buffer_.size(), verbs::kAllAccess).value());
    verbs::QpInitAttr init;
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.cap.max_send_wr = kSendSlots;
    init.cap.max_recv_wr = kRecvSlots;
    qp = std::move(pd_->create_qp(init).value());
  }

  verbs::RcPeer peer() const { return verbs::RcPeer{device->gid(), qp->qp_num(), psn_, verbs::Mtu::MTU_1024, std::nullopt}; }

  // The handshake (what POST /v1/sessions does), then RTR/RTS towards the gateway.
  verbs::Result<SessionAnswer> handshake(OrderService& service, std::uint32_t session, SessionRole role,
                                         std::vector<std::uint64_t> accounts, bool cancel_on_disconnect = true,
                                         std::uint32_t receives = kRecvSlots) {
    SessionRequest r;
    r.session = session;
    r.role = role;
    r.accounts = std::move(accounts);
    r.throttle = ThrottleConfig{0, 1};
    r.cancel_on_disconnect = cancel_on_disconnect;
    r.device = gateway_device;
    r.remote = peer();
    auto a = service.open_session(r, qpgate::monotonic_ns());
    if (!a.ok()) return a;
    verbs::RcParams p;
    p.psn = psn_;
    p.access = verbs::Access::LOCAL_WRITE;
    p.timeout = 14;  // ≈ 67 ms, as the gateway's: a loop iteration under ASan can take milliseconds
    p.max_rd_atomic = 16;
    p.min_rnr_timer = 1;
    const verbs::Status s = verbs::connect_rc(*qp, p, verbs::RcPeer{a->gid, a->qpn, a->psn, a->mtu, a->alt_gid});
    EXPECT_TRUE(s.ok()) << s.message();
    post_receives(receives);
    return a;
  }

  void post_receives(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n && posted_recvs_ < kRecvSlots; ++i) {
      const std::uint32_t slot = next_recv_slot_++ % kRecvSlots;
      const verbs::Sge sge{addr(slot * kSlot), static_cast<std::uint32_t>(kSlot), mr_->lkey()};
      verbs::RecvWr wr;
      wr.wr_id = slot;
      wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
      ASSERT_TRUE(qp->post_recv(wr).ok());
      ++posted_recvs_;
    }
  }
  // Receives are re-posted after each completion unless told not to.
  bool repost = true;
  // The gateway's device the handshake asks for (SessionRequest::device).
  std::uint8_t gateway_device = kPrimaryDevice;

  void send(const OrderMessage& m) { send_bytes(bytes_of(m)); }
  void send_bytes(const std::vector<std::uint8_t>& bytes) {
    const std::uint32_t slot = kRecvSlots + (next_send_slot_++ % kSendSlots);
    std::memcpy(buffer_.data() + slot * kSlot, bytes.data(), bytes.size());
    const verbs::Sge sge{addr(slot * kSlot), static_cast<std::uint32_t>(bytes.size()), mr_->lkey()};
    verbs::SendWr wr;
    wr.wr_id = 1000000 + slot;
    wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
    wr.send_flags = verbs::SendFlag::SIGNALED;
    auto r = qp->post_send(wr);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }

  // RDMA atomics / READ on a granted region; the completion lands in `completions`.
  void atomic(verbs::WrOpcode op, std::uint64_t remote_addr, std::uint32_t rkey, std::uint64_t compare_add,
              std::uint64_t swap = 0) {
    const std::uint32_t slot = kRecvSlots + kSendSlots;  // the last slot: 8-byte result
    const verbs::Sge sge{addr(slot * kSlot), 8, mr_->lkey()};
    verbs::SendWr wr;
    wr.wr_id = 2000000;
    wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
    wr.opcode = op;
    wr.send_flags = verbs::SendFlag::SIGNALED;
    wr.atomic = verbs::SendWr::Atomic{remote_addr, compare_add, swap, rkey};
    auto r = qp->post_send(wr);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  void read(std::uint64_t remote_addr, std::uint32_t rkey, std::uint32_t length) {
    const std::uint32_t slot = kRecvSlots + kSendSlots;
    const verbs::Sge sge{addr(slot * kSlot), length, mr_->lkey()};
    verbs::SendWr wr;
    wr.wr_id = 3000000;
    wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
    wr.opcode = verbs::WrOpcode::RDMA_READ;
    wr.send_flags = verbs::SendFlag::SIGNALED;
    wr.rdma = verbs::SendWr::Rdma{remote_addr, rkey};
    auto r = qp->post_send(wr);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  std::uint64_t result_word() const {
    std::uint64_t v = 0;
    std::memcpy(&v, buffer_.data() + (kRecvSlots + kSendSlots) * kSlot, 8);
    return v;
  }
  const std::uint8_t* result_bytes() const { return buffer_.data() + (kRecvSlots + kSendSlots) * kSlot; }

  // One step: drive the device, poll the CQ.
  void work() {
    device->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
    verbs::Wc wcs[32];
    auto n = cq_->poll(wcs);
    if (!n.ok()) return;
    for (std::size_t i = 0; i < *n; ++i) {
      const verbs::Wc& wc = wcs[i];
      if (wc.status == verbs::WcStatus::IBV_WC_SUCCESS && verbs::wc_opcode_is_recv(wc.opcode)) {
        --posted_recvs_;
        auto got = std::make_unique<Got>();
        const std::uint8_t* at = buffer_.data() + wc.wr_id * kSlot;
        got->bytes.assign(at, at + wc.byte_len);
        const DecodeResult d = decode(got->bytes, got->message);
        EXPECT_TRUE(d.ok()) << d.text();
        if (got->as<Ack>() != nullptr || got->as<Reject>() != nullptr) ++answers;
        received.push_back(std::move(got));
        if (repost) post_receives(1);
      } else {
        completions.push_back(wc);
      }
    }
  }

  std::size_t count_sent_completions() const {
    std::size_t n = 0;
    for (const auto& c : completions) n += c.wr_id >= 1000000 && c.wr_id < 2000000 ? 1 : 0;
    return n;
  }
  const verbs::soft::SoftQp& soft_qp() const { return *device->find_qp(qp->qp_num()); }

  template <typename T>
  std::vector<const T*> all() const {
    std::vector<const T*> out;
    for (const auto& g : received) {
      if (const T* t = g->as<T>()) out.push_back(t);
    }
    return out;
  }

  std::unique_ptr<verbs::soft::SoftDevice> device;
  std::unique_ptr<verbs::QueuePair> qp;
  std::vector<std::unique_ptr<Got>> received;
  std::size_t answers = 0;  // Acks and Rejects received
  std::vector<verbs::Wc> completions;

 private:
  std::uint64_t addr(std::size_t offset) const { return reinterpret_cast<std::uint64_t>(buffer_.data() + offset); }

  std::vector<std::uint8_t> buffer_;
  std::unique_ptr<verbs::ProtectionDomain> pd_;
  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::unique_ptr<verbs::MemoryRegion> mr_;
  std::uint32_t psn_ = verbs::random_psn();
  std::uint32_t posted_recvs_ = 0;
  std::uint32_t next_recv_slot_ = 0;
  std::uint32_t next_send_slot_ = 0;
};

// The gateway side: a soft device (and an alternate one, when given an
// address for it) and the service on it, and a loop that drives the gateway
// and every client until a condition holds.
struct Gateway {
  Gateway(const std::string& address, ServiceConfig config, const std::string& alternate_address = "")
      : device(open_device(address.c_str())) {
    if (!device) return;
    if (!alternate_address.empty()) {
      alternate = open_device(alternate_address.c_str());
      if (!alternate) return;
    }
    auto s = OrderService::open(*device, std::move(config), alternate.get());
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    if (s.ok()) service = std::move(*s);
  }
  void work(std::vector<Client*> clients) {
    device->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
    if (alternate) alternate->do_work(static_cast<std::int64_t>(qpgate::monotonic_ns()));
    if (service) service->do_work(qpgate::monotonic_ns());
    for (Client* c : clients) c->work();
  }
  bool run_until(std::vector<Client*> clients, const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      work(clients);
      if (done()) return true;
    }
    return done();
  }
  void run_for(std::vector<Client*> clients, std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) work(clients);
  }

  std::unique_ptr<verbs::soft::SoftDevice> device;
  std::unique_ptr<verbs::soft::SoftDevice> alternate;  // declared before the service: it outlives it
  std::unique_ptr<OrderService> service;
};

}  // namespace qpgate::orders::test
