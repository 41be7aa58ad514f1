// fuzz_recovery_codec: arbitrary bytes as a RecoveryRequest (what a
// subscriber sends the gateway) and as a RecoveryReply (what the gateway
// sends back), with the invariants the recovery service and the subscriber
// rely on:
//   - decoding never crashes, and fails with a named reason;
//   - a decoded request re-encodes to a request that decodes to the same fields;
//   - every frame view of a decoded reply lies inside the input.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "feed/recovery_codec.h"

namespace {

using namespace qpgate::feed::recovery;  // NOLINT(google-build-using-namespace)

void check(bool ok) {
  if (!ok) std::abort();
}

bool same(const Request& a, const Request& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case RequestKind::kRetransmit:
      return a.retransmit.channel == b.retransmit.channel && a.retransmit.session == b.retransmit.session &&
             a.retransmit.from_sequence == b.retransmit.from_sequence && a.retransmit.count == b.retransmit.count &&
             a.retransmit.request_id == b.retransmit.request_id;
    case RequestKind::kSnapshot:
      return a.snapshot.channel == b.snapshot.channel && a.snapshot.request_id == b.snapshot.request_id;
    case RequestKind::kReport:
      return a.report.queued == b.report.queued && a.report.dropped == b.report.dropped &&
             a.report.conflated == b.report.conflated && a.report.gaps == b.report.gaps &&
             a.report.unrecoverable == b.report.unrecoverable && a.report.ring_full_drops == b.report.ring_full_drops;
    case RequestKind::kNone: return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  const char* error = nullptr;
  Request q;
  if (decode_request(in, q, &error)) {
    std::vector<std::uint8_t> buf(256);
    std::size_t n = 0;
    if (q.kind == RequestKind::kRetransmit) n = encode_request(q.retransmit, buf);
    if (q.kind == RequestKind::kSnapshot) n = encode_request(q.snapshot, buf);
    if (q.kind == RequestKind::kReport) n = encode_request(q.report, buf);
    check(n > 0);
    Request again;
    check(decode_request(std::span<const std::uint8_t>(buf.data(), n), again, &error));
    check(same(q, again));
  } else {
    check(error != nullptr);
  }
  static auto reply = std::make_unique<Reply>();
  if (decode_reply(in, *reply, &error)) {
    for (std::size_t i = 0; i < reply->frame_count; ++i) {
      const auto f = reply->frames[i];
      check(f.data() >= data && f.data() + f.size() <= data + size);
    }
  } else {
    check(error != nullptr);
  }
  return 0;
}
