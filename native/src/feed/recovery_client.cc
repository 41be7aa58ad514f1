#include "feed/recovery_client.h"

namespace qpgate::feed {

verbs::Result<std::unique_ptr<RecoveryClient>> RecoveryClient::create(verbs::Device& device,
                                                                      const SubscriberRecoveryConfig& c,
                                                                      std::shared_ptr<RecoveryClientCounters> counters) {
  std::unique_ptr<RecoveryClient> r(new RecoveryClient(c));
  if (counters != nullptr) r->counters_ = std::move(counters);
  RcEndpointConfig ec;
  ec.recv_slots = c.recv_slots;
  ec.recv_bytes = c.reply_bytes;
  ec.send_slots = 4;
  ec.send_bytes = 256;  // requests are a few dozen bytes
  auto ep = RcEndpoint::create(device, ec);
  if (!ep.ok()) return ep.error();
  r->ep_ = std::move(ep).value();
  return r;
}

verbs::Status RecoveryClient::connect(const verbs::RcPeer& peer) {
  verbs::RcParams p;
  p.mtu = peer.mtu;
  return ep_->connect(peer, p);
}

void RecoveryClient::rearm_when_due(std::uint64_t now_ns) {
  if (now_ns < next_rearm_check_ns_ || !ep_->connected()) return;
  next_rearm_check_ns_ = now_ns + verbs::kRcCheckIntervalNs;
  // A failure leaves it MIGRATED: it ends as it would have without the re-arm.
  if (const verbs::Result<bool> r = ep_->rearm(); r.ok() && *r) counters_->path_rearms.add();
}

template <class Q>
bool RecoveryClient::send_request(const Q& q) {
  const auto out = ep_->send_buffer();
  const std::size_t n = out.empty() ? 0 : recovery::encode_request(q, out);
  if (n == 0 || !ep_->post_send(n)) {
    counters_->send_failures.add();
    return false;
  }
  counters_->requests.add();
  return true;
}

bool RecoveryClient::send(const recovery::RetransmitRequest& q) { return send_request(q); }
bool RecoveryClient::send(const recovery::SnapshotRequest& q) { return send_request(q); }
bool RecoveryClient::send(const recovery::SubscriberReport& q) { return send_request(q); }

}  // namespace qpgate::feed
