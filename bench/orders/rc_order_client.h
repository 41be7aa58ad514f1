// The client side of bench_orders_rc: ONE native client process holding N
// order-entry sessions, each an RC QP on the client's own SoftDevice, all
// sharing one CQ that the caller busy-polls (do_work + poll). It encodes
// NewOrders with the gateway's own codec (orders/codec.h), decodes every
// answer, and reports the Acks to the caller; Fills (every second order
// trades) and Welcomes are counted and their receives re-posted.
//
// Session i (0-based) is gateway session i + 1 with accounts 2i + 1 (buys)
// and 2i + 2 (sells): its orders alternate buy / sell at one price, so
// every sell trades against a resting buy (of any session; no account ever
// meets itself) and the book never holds more than a window of orders.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.h"
#include "bench_verbs.h"
#include "orders/codec.h"
#include "orders/order_service.h"
#include "verbs/rc_connect.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"

namespace qpgate::bench {

inline constexpr std::uint32_t kBenchInstrument = 1;
inline constexpr std::int64_t kBenchPrice = 100;
inline constexpr std::int64_t kBenchQuantity = 10;

inline std::uint64_t buy_account(std::uint32_t session_index) { return 2 * std::uint64_t{session_index} + 1; }
inline std::uint64_t sell_account(std::uint32_t session_index) { return 2 * std::uint64_t{session_index} + 2; }

// What crosses the set-up pipe each way (trivially copyable).
struct PeerWire {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  verbs::Gid gid;
  verbs::Mtu mtu = verbs::Mtu::MTU_1024;
  std::int64_t ack_hold_ns = 0;  // its responder's ACK hold, as the handshake's ackHoldUs
};

class RcOrderClient {
 public:
  static constexpr std::uint32_t kSlotBytes = 512;   // the service's max_message_bytes
  static constexpr std::uint32_t kRecvSlots = 256;   // per session: Acks and Fills of a full window
  static constexpr std::uint32_t kSendSlots = 128;   // per session: orders in flight (RC-unacknowledged)

  // Called for each Ack: (session index, client order id, receive time).
  using OnAck = std::function<void(std::uint32_t, std::uint64_t, std::int64_t)>;

  RcOrderClient(const std::string& address, std::uint32_t sessions) : sessions_(sessions) {
    verbs::soft::SoftDeviceOptions o;
    o.address_or_name = address;
    device_ = take(verbs::soft::open_soft_device(o), "open_soft_device " + address);
    pd_ = take(device_->alloc_pd(), "alloc_pd");
    cq_ = take(device_->create_cq(sessions * (kRecvSlots + kSendSlots), 0), "create_cq");
    buffer_.assign(std::size_t{sessions} * (kRecvSlots + kSendSlots) * kSlotBytes, 0);
    mr_ = take(pd_->reg_mr(buffer_.data(), buffer_.size(), verbs::Access::LOCAL_WRITE), "reg_mr");
    for (std::uint32_t i = 0; i < sessions; ++i) {
      verbs::QpInitAttr init;
      init.qp_type = verbs::QpType::RC;
      init.send_cq = cq_.get();
      init.recv_cq = cq_.get();
      init.cap.max_send_wr = kSendSlots;
      init.cap.max_recv_wr = kRecvSlots;
      Session s;
      s.qp = take(pd_->create_qp(init), "create_qp");
      s.psn = verbs::random_psn();
      qps_.push_back(std::move(s));
    }
  }

  std::uint32_t sessions() const { return sessions_; }

  std::vector<PeerWire> peers() const {
    std::vector<PeerWire> out;
    for (const Session& s : qps_) out.push_back(PeerWire{s.qp->qp_num(), s.psn, device_->gid(), verbs::Mtu::MTU_1024, device_->ack_hold_ns()});
    return out;
  }

  // RTR/RTS towards the gateway's answers, receives posted, then a Hello
  // on every session and its Welcome awaited (a session must greet first).
  void connect(const std::vector<PeerWire>& gateway) {
    for (std::uint32_t i = 0; i < sessions_; ++i) {
      verbs::RcParams p;
      p.psn = qps_[i].psn;
      p.access = verbs::Access::LOCAL_WRITE;
      const PeerWire& g = gateway[i];
      check(verbs::connect_rc(*qps_[i].qp, p, verbs::RcPeer{g.gid, g.qpn, g.psn, g.mtu, std::nullopt, g.ack_hold_ns}), "connect_rc");
      for (std::uint32_t slot = 0; slot < kRecvSlots; ++slot) post_recv(i, slot);
    }
    for (std::uint32_t i = 0; i < sessions_; ++i) send(i, orders::Hello{0});
    const std::int64_t give_up = now_ns() + 5'000'000'000;
    while (welcomes_ < sessions_) {
      if (now_ns() > give_up) die("no Welcome within 5 s");
      poll(now_ns(), [](std::uint32_t, std::uint64_t, std::int64_t) {});
    }
  }

  // The next order of session i: buys and sells alternate. Returns its client order id.
  std::uint64_t send_order(std::uint32_t i) {
    Session& s = qps_[i];
    const std::uint64_t clid = ++s.last_clid;
    const bool buy = (clid & 1) != 0;
    send(i, orders::NewOrder{clid, kBenchInstrument, buy ? orders::Side::kBuy : orders::Side::kSell, kBenchPrice,
                             kBenchQuantity, orders::TimeInForce::kDay, buy ? buy_account(i) : sell_account(i)});
    return clid;
  }

  // Room for another SEND on session i (its earlier SENDs RC-acknowledged).
  bool can_send(std::uint32_t i) const { return qps_[i].sends_out < kSendSlots; }

  // One pass of the busy-poll loop: the device's duty cycle, then the CQ.
  void poll(std::int64_t now, const OnAck& on_ack) {
    device_->do_work(now);
    verbs::Wc wc[32];
    auto got = cq_->poll(std::span<verbs::Wc>(wc, 32));
    if (!got.ok()) die("poll_cq: " + got.error().message);
    if (*got == 0) return;
    const std::int64_t seen = now_ns();
    for (std::size_t k = 0; k < *got; ++k) {
      const verbs::Wc& c = wc[k];
      if (c.status != verbs::WcStatus::IBV_WC_SUCCESS) die("completion status " + std::to_string(int(c.status)));
      const auto session = static_cast<std::uint32_t>(c.wr_id >> 32);
      if (!verbs::wc_opcode_is_recv(c.opcode)) {
        --qps_[session].sends_out;
        continue;
      }
      const auto slot = static_cast<std::uint32_t>(c.wr_id & 0xffffffffu);
      on_answer(session, std::span<const std::uint8_t>(recv_slot(session, slot), c.byte_len), seen, on_ack);
      post_recv(session, slot);
    }
  }

  std::uint64_t fills() const { return fills_; }

  // A soft QP counter (verbs/soft/qp_counters.h) summed over the sessions.
  std::uint64_t counter(std::string_view name) const {
    std::uint64_t sum = 0;
    for (const Session& s : qps_) {
      if (const verbs::soft::SoftQp* q = verbs::soft::as_soft_qp(*s.qp)) {
        q->counters().for_each([&](std::string_view n, std::uint64_t v) { sum += n == name ? v : 0; });
      }
    }
    return sum;
  }

 private:
  struct Session {
    std::unique_ptr<verbs::QueuePair> qp;
    std::uint32_t psn = 0;
    std::uint64_t last_clid = 0;
    std::uint32_t next_send_slot = 0;
    std::uint32_t sends_out = 0;
  };

  std::uint8_t* recv_slot(std::uint32_t session, std::uint32_t slot) {
    return buffer_.data() + (std::size_t{session} * (kRecvSlots + kSendSlots) + slot) * kSlotBytes;
  }
  std::uint8_t* send_slot(std::uint32_t session, std::uint32_t slot) { return recv_slot(session, kRecvSlots + slot); }

  void post_recv(std::uint32_t session, std::uint32_t slot) {
    const verbs::Sge sge{reinterpret_cast<std::uint64_t>(recv_slot(session, slot)), kSlotBytes, mr_->lkey()};
    verbs::RecvWr wr;
    wr.wr_id = (std::uint64_t{session} << 32) | slot;
    wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
    if (!qps_[session].qp->post_recv(wr).ok()) die("post_recv");
  }

  void send(std::uint32_t i, const orders::OrderMessage& m) {
    Session& s = qps_[i];
    if (s.sends_out >= kSendSlots) die("send queue full");
    const std::uint32_t slot = s.next_send_slot++ % kSendSlots;
    std::uint8_t* at = send_slot(i, slot);
    const std::size_t n = orders::encode(m, std::span<std::uint8_t>(at, kSlotBytes));
    const verbs::Sge sge{reinterpret_cast<std::uint64_t>(at), static_cast<std::uint32_t>(n), mr_->lkey()};
    verbs::SendWr wr;
    wr.wr_id = (std::uint64_t{i} << 32) | slot;
    wr.opcode = verbs::WrOpcode::SEND;
    wr.send_flags = verbs::SendFlag::SIGNALED;
    wr.sg_list = std::span<const verbs::Sge>(&sge, 1);
    auto r = s.qp->post_send(wr);
    if (!r.ok()) die("post_send: " + r.error().message);
    ++s.sends_out;
  }

  void on_answer(std::uint32_t session, std::span<const std::uint8_t> bytes, std::int64_t seen, const OnAck& on_ack) {
    orders::OrderMessage m;
    const orders::DecodeResult d = orders::decode(bytes, m);
    if (!d.ok()) die("undecodable answer: " + std::string(d.text()));
    if (const auto* ack = std::get_if<orders::Ack>(&m)) {
      on_ack(session, ack->client_order_id, seen);
    } else if (std::holds_alternative<orders::Fill>(m)) {
      ++fills_;
    } else if (std::holds_alternative<orders::Welcome>(m)) {
      ++welcomes_;
    } else if (const auto* rej = std::get_if<orders::Reject>(&m)) {
      die("order " + std::to_string(rej->client_order_id) + " rejected: " + std::string(orders::name_of(rej->reason)) +
          " " + std::string(rej->text));
    } else {
      die("unexpected answer " + std::string(orders::body_name(m)));
    }
  }

  std::uint32_t sessions_;
  std::unique_ptr<verbs::soft::SoftDevice> device_;
  std::unique_ptr<verbs::ProtectionDomain> pd_;
  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::vector<std::uint8_t> buffer_;
  std::unique_ptr<verbs::MemoryRegion> mr_;
  std::vector<Session> qps_;
  std::uint64_t fills_ = 0;
  std::uint32_t welcomes_ = 0;
};

}  // namespace qpgate::bench
