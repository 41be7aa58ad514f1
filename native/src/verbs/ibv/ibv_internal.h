// Internal to the ibv backend: the shared holders that keep libibverbs
// objects alive in the right order, the conversions between the verbs
// interface and <infiniband/verbs.h>, and error helpers. Not installed, not
// included outside native/src/verbs/ibv.
//
// Ownership: every interface object holds a shared_ptr to the holder of what
// it was made from (an MR its PD, a QP its PD, CQs and SRQ, a PD the device),
// so they may be destroyed in any order; the last one out closes the device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "verbs/ibv/ibv_device.h"
#include "verbs/qp_state_machine.h"

namespace qpgate::verbs::ibv {

// ---------------------------------------------------------------- errors
// libibverbs returns an errno value, or -1 with errno set, or a negative errno
// depending on the call and provider; this normalises to a positive errno.
int errno_of(int rc);
// "<what> failed: <strerror> (<ENAME>)", with code.
Error call_error(int code, const std::string& what);

// ---------------------------------------------------------------- multicast IP joins
// The IP-level membership RoCE multicast needs (rdma-lab.md): one UDP socket
// per address family, joined to each group on the bound interface, counted
// per group so that several QPs attaching one group join it once.
class McastIpJoins {
 public:
  McastIpJoins() = default;
  ~McastIpJoins();
  McastIpJoins(const McastIpJoins&) = delete;
  McastIpJoins& operator=(const McastIpJoins&) = delete;

  void bind(unsigned ifindex, std::uint32_t ipv4_host, std::string netdev);
  // An IPv4-mapped MGID (::ffff:a.b.c.d, RoCE v2) joins a.b.c.d with
  // IP_ADD_MEMBERSHIP; any other MGID joins itself with IPV6_ADD_MEMBERSHIP.
  Status join(const Gid& mgid);
  Status leave(const Gid& mgid);
  int members(const Gid& mgid) const;

 private:
  Result<int> socket_for(bool v4);
  unsigned ifindex_ = 0;
  std::uint32_t ipv4_host_ = 0;
  std::string netdev_;
  int fd4_ = -1;
  int fd6_ = -1;
  std::map<Gid, int> refs_;
};

// ---------------------------------------------------------------- holders
struct DeviceShared {
  ibv_context* ctx = nullptr;
  std::string name;
  std::uint8_t port_num = 1;
  std::string netdev;
  unsigned ifindex = 0;
  std::uint32_t ipv4_host = 0;
  GidChoice gid;
  DeviceAttr device_attr;
  PortAttr port_attr;
  ModifyLimits limits;
  std::string backend_label;  // "the ibv backend (rxe0)", for ModifyLimits::backend_name
  McastIpJoins joins;
  // One completion channel for all the device's CQs (non-blocking fd): the
  // engine watches one fd per device, and ibv_get_cq_event names the CQ.
  ibv_comp_channel* channel = nullptr;

  DeviceShared() = default;
  ~DeviceShared();
  DeviceShared(const DeviceShared&) = delete;
  DeviceShared& operator=(const DeviceShared&) = delete;
};

struct PdHolder {
  std::shared_ptr<DeviceShared> dev;
  ibv_pd* pd = nullptr;
  ~PdHolder();
};

// ibv_cq's cq_context, ibv_qp's qp_context and ibv_srq's srq_context point
// at one of these, so async events find the user's context.
struct EventTarget {
  std::uint64_t user_context = 0;
  bool cq_error = false;  // CQ: IBV_EVENT_CQ_ERR was seen (overrun)
  std::uint32_t unacked_events = 0;  // CQ: completion events taken, not yet acked (acked in batches)
};

struct CqHolder {
  std::shared_ptr<DeviceShared> dev;
  ibv_cq* cq = nullptr;
  EventTarget target;
  ~CqHolder();
};

struct SrqHolder {
  std::shared_ptr<PdHolder> pd;
  ibv_srq* srq = nullptr;
  EventTarget target;
  std::uint32_t max_sge = 0;
  ~SrqHolder();
};

// The device's completion channel, made non-blocking; and taking its pending
// events without blocking, each CQ re-armed as it is named (ibv_cq.cc).
Status make_completion_channel(DeviceShared& dev);
Result<std::size_t> take_cq_events(DeviceShared& dev);

// Factories of the objects in ibv_pd.cc, ibv_cq.cc, ibv_qp.cc.
Result<std::unique_ptr<ProtectionDomain>> make_pd(std::shared_ptr<DeviceShared> dev);
Result<std::unique_ptr<IbvCompletionQueue>> make_cq(std::shared_ptr<DeviceShared> dev, std::uint32_t cqe,
                                                    std::uint64_t cq_context);
Result<std::unique_ptr<QueuePair>> make_qp(std::shared_ptr<PdHolder> pd, const QpInitAttr& attr);
// The holder behind one of our CQs / SRQs (nullptr for another backend's).
std::shared_ptr<CqHolder> cq_holder_of(CompletionQueue* cq);
std::shared_ptr<SrqHolder> srq_holder_of(SharedReceiveQueue* srq);
ibv_ah* ibv_ah_of(const AddressHandle* ah);  // nullptr for another backend's

// ---------------------------------------------------------------- conversions
int to_ibv_access(AccessFlags a);
AccessFlags from_ibv_access(unsigned flags);
ibv_gid to_ibv_gid(const Gid& g);
Gid from_ibv_gid(const ibv_gid& g);
// ibv_ah_attr for RoCE: always is_global, port, GRH from attr. udp_sport,
// when set, becomes the flow label whose UDP source port it is (the kernel's
// rdma_flow_label_to_udp_sport; honoured by NICs that derive the port from
// the flow label — rxe derives it from the QPN instead). EINVAL when the
// port is outside 0xC000..0xFFFF or contradicts a flow label.
Status to_ibv_ah_attr(const AhAttr& a, ibv_ah_attr* out);
AhAttr from_ibv_ah_attr(const ibv_ah_attr& a);
// The fields named by mask; the returned mask is the ibv_qp_attr_mask.
Status to_ibv_qp_attr(const QpAttr& a, QpAttrMaskFlags mask, ibv_qp_attr* out, int* ibv_mask);
QpAttr from_ibv_qp_attr(const ibv_qp_attr& a);
void from_ibv_wc(const ibv_wc& in, Wc* out);

}  // namespace qpgate::verbs::ibv
