#include "feed/ud_endpoint.h"

#include <string>

namespace qpgate::feed {

verbs::Gid group_gid(std::uint32_t group_host) { return verbs::Gid::from_ipv4(group_host); }

namespace {

// The PD, CQ, MR over ep->memory and the QP in RTS.
verbs::Status make_verbs_objects(verbs::Device& device, const UdEndpointConfig& c, UdEndpoint* ep) {
  auto pd = device.alloc_pd();
  if (!pd.ok()) return pd.error();
  ep->pd = std::move(pd).value();
  auto cq = device.create_cq(c.send_wr + c.recv_wr + 16, 0);
  if (!cq.ok()) return cq.error();
  ep->cq = std::move(cq).value();
  auto mr = ep->pd->reg_mr(ep->memory.data(), ep->memory.size(), verbs::Access::LOCAL_WRITE);
  if (!mr.ok()) return mr.error();
  ep->mr = std::move(mr).value();

  verbs::QpInitAttr init;
  init.qp_type = verbs::QpType::UD;
  init.send_cq = ep->cq.get();
  init.recv_cq = ep->cq.get();
  init.cap.max_send_wr = c.send_wr == 0 ? 1 : c.send_wr;
  init.cap.max_recv_wr = c.recv_wr == 0 ? 1 : c.recv_wr;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.sq_sig_all = true;
  auto qp = ep->pd->create_qp(init);
  if (!qp.ok()) return qp.error();
  ep->qp = std::move(qp).value();

  verbs::QpAttr a;
  a.qp_state = verbs::QpState::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = c.qkey;
  using M = verbs::QpAttrMask;
  if (verbs::Status s = ep->qp->modify(a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY); !s.ok()) return s.error();
  a.qp_state = verbs::QpState::RTR;
  if (verbs::Status s = ep->qp->modify(a, M::STATE); !s.ok()) return s.error();
  a.qp_state = verbs::QpState::RTS;
  a.sq_psn = 0;
  return ep->qp->modify(a, M::STATE | M::SQ_PSN);
}

}  // namespace

verbs::Result<std::unique_ptr<UdEndpoint>> make_ud_endpoint(verbs::Device& device, const UdEndpointConfig& c,
                                                            std::vector<std::uint8_t> buffer) {
  auto ep = std::make_unique<UdEndpoint>();
  if (buffer.size() == c.buffer_bytes) {
    ep->buffer = std::move(buffer);
  } else {
    ep->buffer.assign(c.buffer_bytes, 0);
  }
  ep->memory = ep->buffer;
  if (verbs::Status s = make_verbs_objects(device, c, ep.get()); !s.ok()) return s.error();
  return ep;
}

verbs::Result<std::unique_ptr<UdEndpoint>> make_ud_endpoint_over(verbs::Device& device, const UdEndpointConfig& c,
                                                                 std::span<std::uint8_t> memory) {
  auto ep = std::make_unique<UdEndpoint>();
  ep->memory = memory;
  if (verbs::Status s = make_verbs_objects(device, c, ep.get()); !s.ok()) return s.error();
  return ep;
}

}  // namespace qpgate::feed
