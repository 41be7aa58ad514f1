// The `ibv` backend: verbs::Device over libibverbs (a ConnectX NIC, or the
// kernel's soft-RoCE rdma_rxe). Built only when libibverbs-dev is present
// (QPGATE_HAVE_IBVERBS); nothing outside this folder includes verbs.h.
//
//   open_ibv_device({.device = "rxe0"})            → IbvDevice
//     GID: the RoCE v2 IPv4-mapped GID of the bound interface, chosen
//          automatically (gid_select.h) and reported; overridable by index
//     alloc_pd → reg_mr, create_ah, create_srq, create_qp
//     create_cq: every CQ raises its events on the device's one completion
//          channel (completion_fd(), non-blocking), armed from its creation
//          and re-armed by take_completion_events(), so a parked engine
//          waits on it in epoll (engine/parker.h)
//
// What the backend adds to the calls it wraps:
//  - check_modify_qp() before ibv_modify_qp, against the QP's real state
//    (ibv_query_qp: an RC QP can go to ERR by itself), so an illegal modify
//    gets the state machine's precise message, not the kernel's bare EINVAL;
//  - checks on each WR before ibv_post_send (opcode valid for the QP type,
//    SGE count, inline size, atomics: one 8-byte SGE and an 8-byte aligned
//    remote address), so a bad WR is named, not found later in a CQE;
//  - immediate data in host order both ways (ibverbs keeps it big-endian);
//  - on RoCE, attach_mcast also joins the group's IP address on the bound
//    interface (IP_ADD_MEMBERSHIP): without the join the kernel's IP layer
//    drops the group's packets before rxe sees them (rdma-lab.md: 0 of 10
//    without, 10 of 10 with);
//  - the async fd is non-blocking: get_async_event() never blocks.
// Errors carry the errno of the failing call and a sentence naming it.
//
// Atomic results: the interface promises host order. rxe writes the
// original value in host order (tested); some mlx5 configurations write
// network order — unverified here, not converted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "verbs/device.h"
#include "verbs/ibv/gid_select.h"

namespace qpgate::verbs::ibv {

struct IbvDeviceOptions {
  std::string device;  // "rxe0", "mlx5_0"; empty: the first device libibverbs lists
  std::uint8_t port_num = 1;
  // The interface the gateway is bound to: a name ("eth0") or one of its
  // IPv4 addresses ("10.77.0.1"). Empty: the interface of the port's RoCE
  // GID entries. Its address picks the GID; its index carries IP joins.
  std::string interface;
  std::optional<std::uint32_t> gid_index;  // overrides the automatic choice
};

// A CQ of this backend. Its events go to the device's completion channel:
//   park in epoll on Device::completion_fd() → take_completion_events()
//   (re-arms the CQs named) → poll().
class IbvCompletionQueue : public CompletionQueue {
 public:
  // ibv_req_notify_cq: the next completion (solicited_only: the next
  // solicited or error completion) raises an event on the device's channel.
  // Every CQ is armed at creation; one arm, at most one event.
  virtual Status req_notify(bool solicited_only) = 0;
};

class IbvDevice : public Device {
 public:
  // The port's chosen source GID (use its index as AhAttr.sgid_index).
  virtual const GidChoice& gid() const = 0;
  virtual const std::string& netdev() const = 0;   // the bound interface, "eth0"
  virtual std::uint32_t ipv4_host() const = 0;     // its address the GID carries (0 when overridden to a non-IPv4 GID)
  virtual std::uint8_t port_num() const = 0;
  // The valid entries of the port's GID table, with types and interfaces.
  virtual Result<std::vector<GidEntry>> gid_entries() const = 0;
  // create_cq with the concrete type (create_cq returns the same object).
  virtual Result<std::unique_ptr<IbvCompletionQueue>> create_ibv_cq(std::uint32_t cqe, std::uint64_t cq_context) = 0;
};

// Names of the RDMA devices libibverbs sees (ibv_get_device_list); empty
// when there are none or the kernel has no RDMA support.
std::vector<std::string> list_ibv_devices();

// ENODEV: no such device (the message lists the ones there are) or no GID
// for the interface (the message lists the table); the errno of the failing
// call otherwise. Logs nothing: the caller logs gid().report.
Result<std::unique_ptr<IbvDevice>> open_ibv_device(const IbvDeviceOptions& options);

}  // namespace qpgate::verbs::ibv
