// SoftQp: one queue pair of the soft backend (RC, UC, UD), the InfiniBand
// transport rules done in software. Split by role like rxe:
//
//   soft_qp.*  the object: attributes, state (modify via check_modify_qp +
//              apply_modify_qp), queues, posting, multicast attach, flushing
//   req.*      requester: send WQEs → request packets (segmentation, PSNs,
//              AckReq, go-back-N retransmission)            ≈ rxe_req.c
//   resp.*     responder: request packets → receives, memory, ACK/NAK,
//              READ responses, atomic replies               ≈ rxe_resp.c
//   comp.*     completer: ACK/NAK/responses → send completions, the local
//              ACK and RNR timers, retry accounting         ≈ rxe_comp.c
//
// The QP never touches a socket (transport.h): it hands packets to PacketTx
// and is given decoded, ingress-checked packets by the device.
//
// Driving it (the device's engine thread, the only thread that touches it):
//   on_packet(pkt, meta)   a packet for this QP (right QPN, peer, P_Key, Q_Key);
//                          responses are sent from inside, and the requester
//                          runs afterwards (an ACK may open its window)
//   end_receive_batch()    the batch's coalesced ACK (resp.h), after on_packet calls
//   do_work(now_ns)        requester progress, pending responses, timers;
//                          returns the amount of work done (0 = idle)
//   send_work(now_ns)      do_work's halves, for a driver that reads its
//   on_timers(now_ns)      socket between them (soft_device.cc says why)
//   next_deadline_ns()     the earliest protocol timer, or kNoDeadline
//   has_work()             true when do_work() would make progress right now
//                          (WQEs posted, or packets held by back-pressure)
// post_send() only queues (the doorbell); the next do_work() sends.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>

#include "verbs/attr.h"
#include "verbs/device.h"
#include "verbs/qp_state_machine.h"
#include "verbs/soft/async_queue.h"
#include "verbs/soft/cq_ring.h"
#include "verbs/soft/mcast_table.h"
#include "verbs/soft/mr_table.h"
#include "verbs/soft/qp_counters.h"
#include "verbs/soft/srq.h"
#include "verbs/soft/transport.h"
#include "verbs/soft/work_queue.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

namespace qpgate::verbs::soft {

class Requester;
class Responder;
class Completer;

inline constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();

// The IP address a GID stands for in RoCEv2: IPv4 for ::ffff:a.b.c.d, else IPv6.
wire::IpAddress ip_from_gid(const Gid& gid);

// Everything a SoftQp is built from. References must outlive the QP.
struct SoftQpContext {
  PacketTx& tx;
  MrTable& mrs;
  AsyncEventQueue& events;
  McastTable& mcast;
  MulticastMembership& membership;
  wire::IpAddress local_ip;        // the device's address (GID index 0)
  Gid local_gid;                   // the same as a GID (::ffff:a.b.c.d for IPv4)
  std::vector<wire::IpAddress> gid_addresses;  // the GID table as addresses: a path's source is [sgid_index]
  std::uint32_t pd = 0;            // the QP's PD handle (MrTable checks use it)
  SoftCompletionQueue* send_cq = nullptr;
  SoftCompletionQueue* recv_cq = nullptr;
  SoftSrq* srq = nullptr;          // when set, receives come from it
  std::uint32_t qpn = 0;
  QpInitAttr init;                 // as given to create_qp (its CQ/SRQ pointers are reported by init_attr())
  ModifyLimits limits = default_limits();  // port/device bounds for modify; `unsupported` is forced to soft's list
  Mtu active_mtu = Mtu::MTU_1024;  // the port's MTU: a UD message is at most this
  std::uint16_t pkey = 0xffff;     // the P_Key at pkey_index 0 (the soft port has one)

  static ModifyLimits default_limits();
};

class SoftQp final : public QueuePair {
 public:
  // The attributes soft does not implement: EOPNOTSUPP from modify().
  static constexpr QpAttrMaskFlags kUnsupportedAttrs = QpAttrMaskFlags(QpAttrMask::RATE_LIMIT);

  // EINVAL naming the problem: caps beyond the device, a UD/UC/RC mismatch, missing CQs.
  static Status check_init(const SoftQpContext& ctx);
  explicit SoftQp(const SoftQpContext& ctx);
  ~SoftQp() override;
  SoftQp(const SoftQp&) = delete;
  SoftQp& operator=(const SoftQp&) = delete;

  // ---- verbs::QueuePair
  std::uint32_t qp_num() const override { return qpn_; }
  QpType qp_type() const override { return type_; }
  QpState state() const override { return attr_.qp_state; }
  Status modify(const QpAttr& attr, QpAttrMaskFlags mask) override;
  Result<QpAttr> query() const override;
  QpInitAttr init_attr() const override { return init_; }
  PostSendResult post_send(const SendWr& first) override;
  PostSendResult post_send(std::span<const SendWr> wrs) override;
  PostRecvResult post_recv(const RecvWr& first) override;
  PostRecvResult post_recv(std::span<const RecvWr> wrs) override;
  Status attach_mcast(const Gid& mgid) override;
  Status detach_mcast(const Gid& mgid) override;
  Status set_ack_requests(AckRequests mode) override;
  std::uint64_t path_migrations() const override { return counters_.path_migrations.get(); }

  // ---- the device's side
  void on_packet(const wire::Packet& pkt, const RxMeta& meta);
  int do_work(std::int64_t now_ns);  // send_work, then on_timers
  int send_work(std::int64_t now_ns);
  int on_timers(std::int64_t now_ns);
  // After the device's receive batch: the one ACK its requests are owed (resp.h).
  int end_receive_batch();
  std::int64_t next_deadline_ns() const;
  bool has_work() const;

  // What the ingress checks a packet against.
  std::uint32_t qkey() const { return attr_.qkey; }
  std::uint16_t pkey() const { return pkey_; }
  std::uint32_t pd() const { return pd_; }
  bool has_srq() const { return srq_ != nullptr; }
  // RC/UC from RTR on: the connected peer (from the AV) and its QPN.
  std::optional<wire::IpAddress> peer_address() const;
  // Whether a packet from `source` is this connected QP's peer: the primary
  // path's, or while ARMED the alternate path's (soft_apm.cc).
  bool accepts_peer(const wire::IpAddress& source) const;
  std::uint32_t dest_qp_num() const { return attr_.dest_qp_num; }
  // The stored attributes (what query() reports).
  const QpAttr& attr() const { return attr_; }
  const QpCounters& counters() const { return counters_; }
  // Send WRs posted and not yet completed, and receive WRs posted and not yet
  // consumed (the "outstanding WRs" of /v1/qps). Engine thread only, like the queues.
  std::uint32_t send_wrs_outstanding() const { return sq_.size(); }
  std::uint32_t recv_wrs_posted() const { return rq_.size(); }

 private:
  friend class Requester;
  friend class Responder;
  friend class Completer;

  // Shared helpers of the roles (soft_qp.cc).
  bool transmit(const wire::PacketFields& f, std::span<const std::uint8_t> payload);
  bool transmit_to(const wire::PacketFields& f, std::span<const std::uint8_t> payload, const wire::UdpFlow& flow,
                   std::uint8_t traffic_class, std::uint8_t hop_limit);
  wire::UdpFlow connected_flow() const;
  // The local address a path with this sgid_index leaves from.
  const wire::IpAddress& source_ip(std::uint8_t sgid_index) const;
  // Automatic path migration (soft_apm.cc).
  Status check_mig_request(const QpAttr& attr, QpAttrMaskFlags mask) const;
  void apply_mig_request(const QpAttr& attr, QpAttrMaskFlags mask);
  void migrate(bool on_failure);
  void follow_migration();  // a packet with MigReq on the alternate path: the peer migrated
  bool arrived_on_alternate(const wire::Packet& pkt, const RxMeta& meta) const;
  // The requester's retries ran out: true when the QP moved to its
  // alternate path (go on there); false when it must fail.
  bool fail_over();
  // Pushes a completion; on CQ overflow: QP_FATAL, counted, the QP to ERR.
  bool complete_send(const Wc& wc);
  bool complete_recv(const Wc& wc);
  // Moves the QP to ERR (from a role or a CQ overflow): flushes everything.
  void enter_error();
  void flush_all();
  void flush_recv_queue();
  void raise(EventType e);
  std::uint32_t mtu_bytes() const;
  bool sends_allowed() const;     // RTS, or SQD finishing a message
  bool receives_allowed() const;  // RTR, RTS, SQD
  void check_sq_drained();

  QpType type_;
  std::uint32_t qpn_;
  std::uint32_t pd_;
  std::uint16_t pkey_;
  QpInitAttr init_;
  PacketTx& tx_;
  MrTable& mrs_;
  AsyncEventQueue& events_;
  McastTable& mcast_;
  MulticastMembership& membership_;
  wire::IpAddress local_ip_;
  SoftCompletionQueue* send_cq_;
  SoftCompletionQueue* recv_cq_;
  SoftSrq* srq_;
  ModifyLimits limits_;
  Mtu active_mtu_;

  QpAttr attr_{};
  SendQueue sq_;
  ReceiveRing rq_;
  QpCounters counters_;
  std::vector<std::uint8_t> tx_buf_;
  std::vector<Gid> attached_;
  std::vector<wire::IpAddress> gid_addresses_;
  AckRequests ack_requests_ = AckRequests::PER_MESSAGE;  // req.cc set_ack_req
  bool alt_loaded_ = false;   // an IBV_QP_ALT_PATH not yet used by a migration
  bool failed_over_ = false;
  // The BTH MigReq bit of every packet (soft_apm.cc): 1 from a migration
  // until the QP is armed again; 0 otherwise, as rxe always sends.
  bool mig_req_ = false;  // the current path is where a failure moved the QP (PATH_MIG_ERR if it fails too)
  bool in_error_flush_ = false;
  bool sq_drained_pending_ = false;  // RTS→SQD asked for SQ_DRAINED
  std::int64_t now_ns_ = 0;          // the latest time seen (do_work / on_packet)

  std::unique_ptr<Requester> req_;
  std::unique_ptr<Responder> resp_;
  std::unique_ptr<Completer> comp_;
};

}  // namespace qpgate::verbs::soft
