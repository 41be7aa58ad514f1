// The verbs-shaped interface both backends implement (README.md,
// "One verbs-shaped core, two backends"): `soft` (RoCEv2 in user space over UDP) and `ibv` (libibverbs).
//
//   Device ─ alloc_pd ─▶ ProtectionDomain ─ reg_mr ─────▶ MemoryRegion
//          │                              ├ create_ah ──▶ AddressHandle
//          │                              ├ create_srq ─▶ SharedReceiveQueue
//          │                              └ create_qp ──▶ QueuePair
//          └ create_cq ─▶ CompletionQueue
//
// Shaped like ibverbs, in C++:
//  - every object is a std::unique_ptr; destroying it releases it
//    (ibv_dereg_mr, ibv_destroy_qp, ...). Each object keeps alive what it
//    was made from, so destruction order does not matter (ibverbs answers
//    EBUSY instead);
//  - nothing throws: operations return Status / Result<T> whose Error carries
//    the errno value ibverbs would return and a sentence saying why;
//  - posting takes a chain (`next`, like ibv_post_send) or a std::span, and
//    on failure reports the first WR not posted (ibverbs' bad_wr) and why;
//    WRs before it were posted, WRs from it on were not;
//  - polling fills a std::span<Wc> and returns how many it filled.
//
// Threads: a QP, its CQs and SRQ belong to one engine thread, which is the
// only one that posts, polls and modifies them; the control plane reaches
// them through the engine's command ring (engine/command_agent.h). Objects are not
// internally synchronised.
//
// The soft backend and one-sidedness: with an RDMA NIC, RDMA READ, WRITE and
// atomics are one-sided — the target's CPU does nothing. In the soft
// backend the target's ENGINE THREAD serves them: it receives the request,
// checks the rkey, bounds and access, and reads, writes or updates the
// registered memory itself (atomics with a CPU std::atomic_ref CAS/fetch_add,
// so they are atomic against local CPU updates as well — stronger than the
// HCA guarantee). A READ or atomic therefore waits for the target's engine
// to be scheduled, and a target whose engine is stopped answers nothing.
// Registered memory must stay mapped until its MemoryRegion is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "verbs/async_event.h"
#include "verbs/attr.h"
#include "verbs/error.h"
#include "verbs/gid.h"
#include "verbs/types.h"
#include "verbs/wr.h"

namespace qpgate::verbs {

// The outcome of a post: how many WRs were posted and, if not all, the first
// one that was not (ibverbs' bad_wr) and why.
template <class Wr>
class [[nodiscard]] PostResult {
 public:
  static PostResult all_posted(std::size_t n) { return PostResult(n, nullptr, Status{}); }
  static PostResult failed(std::size_t posted, const Wr* bad_wr, Error e) {
    return PostResult(posted, bad_wr, Status{std::move(e)});
  }

  bool ok() const { return status_.ok(); }
  explicit operator bool() const { return ok(); }
  std::size_t posted() const { return posted_; }
  // The first WR not posted; nullptr when ok(). Its index is posted().
  const Wr* bad_wr() const { return bad_wr_; }
  const Status& status() const { return status_; }
  const Error& error() const { return status_.error(); }

 private:
  PostResult(std::size_t posted, const Wr* bad, Status s) : posted_(posted), bad_wr_(bad), status_(std::move(s)) {}
  std::size_t posted_ = 0;
  const Wr* bad_wr_ = nullptr;
  Status status_;
};
using PostSendResult = PostResult<SendWr>;
using PostRecvResult = PostResult<RecvWr>;

// ibv_mr. Destroying it deregisters the memory: after the destructor returns
// no remote access reaches it, and its lkey/rkey are invalid.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual std::uint64_t addr() const = 0;  // the VA remote peers use (= the local address; no zero-based MRs)
  virtual std::size_t length() const = 0;
  virtual std::uint32_t lkey() const = 0;
  virtual std::uint32_t rkey() const = 0;  // meaningful when access() has a REMOTE_* flag
  virtual AccessFlags access() const = 0;
};

// ibv_ah: where UD packets go.
class AddressHandle {
 public:
  virtual ~AddressHandle() = default;
  virtual const AhAttr& attr() const = 0;
};

// ibv_cq. A fixed-depth ring of completions; when it is full the backend
// does not overwrite: it raises CQ_ERR and poll() reports EOVERFLOW.
class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // Moves up to out.size() completions into out, oldest first; returns how
  // many (0 when empty). EOVERFLOW once the CQ has overflowed: completions
  // were lost and the QPs using it went to the error state (as in IBA).
  virtual Result<std::size_t> poll(std::span<Wc> out) = 0;
  virtual std::uint32_t cqe() const = 0;  // capacity
  virtual std::uint32_t handle() const = 0;  // names the CQ in async events
};

// ibv_srq: receive WRs shared by many QPs of one PD.
class SharedReceiveQueue {
 public:
  virtual ~SharedReceiveQueue() = default;
  virtual PostRecvResult post_recv(const RecvWr& first) = 0;   // follows next
  virtual PostRecvResult post_recv(std::span<const RecvWr> wrs) = 0;  // ignores next
  // IBV_SRQ_LIMIT arms the limit event; IBV_SRQ_MAX_WR resizes (EOPNOTSUPP in soft).
  virtual Status modify(const SrqAttr& attr, Flags<SrqAttrMask> mask) = 0;
  virtual Result<SrqAttr> query() const = 0;
  virtual std::uint32_t handle() const = 0;
};

// ibv_qp.
class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual std::uint32_t qp_num() const = 0;
  virtual QpType qp_type() const = 0;
  virtual QpState state() const = 0;

  // ibv_modify_qp. Legal transitions and the attributes each requires and
  // allows are checked by check_modify_qp() (qp_state_machine.h); EINVAL
  // with a message naming the transition and the attribute otherwise.
  virtual Status modify(const QpAttr& attr, QpAttrMaskFlags mask) = 0;
  // ibv_query_qp: the current attributes and the creation attributes.
  virtual Result<QpAttr> query() const = 0;
  virtual QpInitAttr init_attr() const = 0;

  // ibv_post_send / ibv_post_recv. ENOMEM when the queue is full, EINVAL for
  // a malformed WR (too many SGEs, inline too long, opcode not valid for the
  // QP type, a state that does not accept posts).
  virtual PostSendResult post_send(const SendWr& first) = 0;         // follows next
  virtual PostSendResult post_send(std::span<const SendWr> wrs) = 0;  // ignores next
  virtual PostRecvResult post_recv(const RecvWr& first) = 0;
  virtual PostRecvResult post_recv(std::span<const RecvWr> wrs) = 0;

  // ibv_attach_mcast / ibv_detach_mcast (UD only). For RoCEv2 the MGID of
  // IPv4 group a.b.c.d is ::ffff:a.b.c.d; the soft backend joins the group
  // with IP_ADD_MEMBERSHIP. Attaching twice is not an error and still
  // delivers one copy; detaching a group not attached is EINVAL.
  virtual Status attach_mcast(const Gid& mgid) = 0;
  virtual Status detach_mcast(const Gid& mgid) = 0;

  // When the requester sets AckReq (BTH A) on RC (types.h AckRequests;
  // docs/protocol.md "The ACK hold"). Not an IBA attribute: the soft backend
  // offers WINDOW to sessions whose peer said in the handshake that it holds
  // ACKs; a backend without it answers EOPNOTSUPP and keeps PER_MESSAGE.
  virtual Status set_ack_requests(AckRequests mode) {
    if (mode == AckRequests::PER_MESSAGE) return Status{};
    return Error{EOPNOTSUPP, "ack requests 'window': this backend's requester asks for an ACK per message"};
  }
  // How many times the QP moved to its alternate path by itself (automatic
  // path migration: the soft backend's, soft_apm.cc). 0 where there is no
  // APM, as on every RoCE port of the ibv backend (ibv_device.cc).
  virtual std::uint64_t path_migrations() const { return 0; }
};

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;
  // ibv_reg_mr. REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (EINVAL otherwise, as ibv_reg_mr).
  virtual Result<std::unique_ptr<MemoryRegion>> reg_mr(void* addr, std::size_t length, AccessFlags access) = 0;
  virtual Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr& attr) = 0;
  virtual Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqAttr& attr) = 0;
  virtual Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& attr) = 0;
};

// An opened device (ibv_open_device + its port).
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string_view name() const = 0;     // "qpgate_soft0", "rxe0", "mlx5_0"
  virtual std::string_view backend() const = 0;  // "soft" or "ibv"
  // The kernel's index of the device, as `rdma dev` lists it (ibv_get_device_index);
  // 0 for the soft device, which the kernel does not know.
  virtual std::uint32_t index() const { return 0; }
  // How long this device's RC responder holds the ACK of a request that did
  // not ask for one (types.h AckRequests); 0: it never sends one, as rxe.
  virtual std::int64_t ack_hold_ns() const { return 0; }
  // The largest QP retry_cnt this device counts down. The IBA's 0..7 are all
  // counts, but rxe reads 7 as "retry forever" (the kernel's
  // drivers/infiniband/sw/rxe/rxe_comp.c skips the decrement at 7), so a
  // session on a dead link would never end: RC sessions ask such a device
  // for at most this many (verbs::RcChannel::connect, the TS clients).
  virtual std::uint8_t max_retry_cnt() const { return 7; }

  virtual Result<DeviceAttr> query_device() const = 0;
  virtual Result<PortAttr> query_port(std::uint8_t port_num) const = 0;
  // ibv_query_gid over the whole table; entries that are unset are zero GIDs.
  virtual Result<std::vector<Gid>> query_gid_table(std::uint8_t port_num) const = 0;
  // Whether the link under GID `gid_index` of the port carries traffic now.
  // On RoCE each GID belongs to a network interface, and two GIDs of one
  // port can be two links (an alternate path's); this default knows only
  // the port's state.
  virtual bool gid_link_up(std::uint8_t port_num, std::uint8_t gid_index) const {
    (void)gid_index;
    const Result<PortAttr> p = query_port(port_num);
    return p.ok() && p->state == PortState::ACTIVE;
  }

  virtual Result<std::unique_ptr<ProtectionDomain>> alloc_pd() = 0;
  virtual Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t cqe, std::uint64_t cq_context) = 0;

  // ibv_get_async_event without blocking: the next event, if any. The
  // backend's engine waits on async_fd() (an eventfd or the verbs async fd).
  virtual std::optional<AsyncEvent> get_async_event() = 0;
  virtual int async_fd() const = 0;

  // Completion events (ibv: the completion channel all the device's CQs
  // share): readable when an armed CQ got a completion; -1 when the device
  // raises none (the soft device's agent polls its own sockets).
  virtual int completion_fd() const { return -1; }
  // Takes the pending completion events without blocking and re-arms each
  // CQ they name; returns how many. The CQs' owners poll them afterwards.
  virtual Result<std::size_t> take_completion_events() { return std::size_t{0}; }
};

}  // namespace qpgate::verbs
