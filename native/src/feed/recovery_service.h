// The gateway's recovery service (docs/protocol.md 2.8): RC sessions, one
// per subscriber, each with its own PD, CQ and buffers (RcEndpoint), bound
// to one publisher. A session's requests (RecoveryRequest, protozero) are
// answered on the engine thread, in order:
//
//   RetransmitRequest → frames from the channel's retransmission ring with
//       the RETRANSMISSION flag (at most max_messages per request and what
//       fits one reply: the subscriber asks again for the rest), or
//       RANGE_GONE / INVALID_RANGE / UNKNOWN_SESSION;
//   SnapshotRequest → the channel's snapshot frames (SnapshotBegin, state,
//       SnapshotEnd), captured at once and streamed in as many SnapshotReply
//       parts as they need, as send slots free up;
//   SubscriberReport → kept in the session's counters (lag, drops, gaps),
//       not answered;
//   garbage → ErrorReply MALFORMED.
//
// Every request first needs an entitled channel (NOT_ENTITLED) and tokens
// from the session's bucket, in messages (THROTTLED with retry_after_ns), so
// a recovering subscriber gets a bounded share of the engine and the live
// feed keeps flowing. Everything is counted per session.
//
// One thread: the engine's (FeedAgent calls do_work each duty cycle).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/counters.h"
#include "feed/feed_counters.def"
#include "feed/rc_endpoint.h"
#include "feed/recovery_codec.h"
#include "feed/snapshot_frames.h"
#include "feed/token_bucket.h"
#include "verbs/session_device.h"

namespace qpgate::feed {

class Publisher;

struct RecoveryLimits {
  std::uint32_t max_messages = 4096;          // served per RetransmitRequest
  std::uint64_t messages_per_second = 1'000'000;
  std::uint64_t burst_messages = 65'536;
  std::uint32_t reply_bytes = 64 * 1024;      // one reply (RC SEND) at most
  std::uint32_t send_slots = 8;
  std::uint32_t recv_slots = 8;
  std::uint32_t request_bytes = 1024;
  // A session that has reported (SubscriberReport) and then stays silent this
  // long is taken as gone: its QP goes to ERR so the name can reconnect (0: never).
  std::uint64_t silence_timeout_ns = 10'000'000'000;
};

std::string validate(const RecoveryLimits& limits);

struct RecoverySessionConfig {
  std::uint32_t session = 0;     // the control plane's session id (u32 > 0)
  std::uint32_t publisher = 0;   // FeedAgent publisher id
  // Which of the gateway's devices open() was given (verbs/session_device.h): reported, not used.
  std::uint8_t device = verbs::kPrimaryDevice;
  std::vector<std::uint16_t> channels;  // entitled channels
  verbs::RcPeer remote;
  RecoveryLimits limits;
};

// The lists QPGATE_FEED_RECOVERY_SESSION_COUNTERS and _REPORT_COUNTERS (feed_counters.def).
struct RecoverySessionCounters {
  QPGATE_FEED_RECOVERY_SESSION_COUNTERS(QPGATE_COUNTER_MEMBER)
  engine::SingleWriterCounter by_status[recovery::kStatusCount];  // replies by status
  // The subscriber's last SubscriberReport (not answered): its lag and losses, for the gateway's metrics.
  struct Report {
    QPGATE_FEED_RECOVERY_REPORT_COUNTERS(QPGATE_COUNTER_MEMBER)

    template <class Fn>
    void for_each(Fn&& fn) const {
      QPGATE_FEED_RECOVERY_REPORT_COUNTERS(QPGATE_COUNTER_VISIT)
    }
  } report;

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_FEED_RECOVERY_SESSION_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

struct RecoverySessionInfo {
  std::uint32_t session = 0;
  std::uint32_t publisher = 0;
  std::uint8_t device = verbs::kPrimaryDevice;
  std::uint32_t qpn = 0;
  verbs::QpState state = verbs::QpState::RESET;
  std::vector<std::uint16_t> channels;
  std::shared_ptr<RecoverySessionCounters> counters;
  verbs::RcPathInfo path;  // the path its QP runs on (verbs/rc_path.h)
};

class RecoveryService {
 public:
  using FindPublisher = std::function<Publisher*(std::uint32_t)>;
  explicit RecoveryService(FindPublisher find);
  ~RecoveryService();

  // Creates the session's QP and takes it to RTS towards `remote`; returns
  // our side for the handshake answer. EEXIST if the session id is open.
  verbs::Result<verbs::RcPeer> open(verbs::Device& device, const RecoverySessionConfig& config, std::uint64_t now_ns);
  bool close(std::uint32_t session);
  std::vector<RecoverySessionInfo> sessions() const;
  std::size_t size() const { return sessions_.size(); }
  // Closes every session bound to a publisher being removed.
  void close_publisher(std::uint32_t publisher);

  int do_work(std::uint64_t now_ns);

 private:
  struct Session;
  void serve(Session& s, std::span<const std::uint8_t> request, std::uint64_t now_ns);
  void retransmit(Session& s, const recovery::RetransmitRequest& q, std::uint64_t now_ns);
  void snapshot(Session& s, const recovery::SnapshotRequest& q, std::uint64_t now_ns);
  bool stream_snapshot(Session& s);
  void send_error(Session& s, recovery::Status status, std::string_view message);

  FindPublisher find_;
  std::vector<std::unique_ptr<Session>> sessions_;
};

}  // namespace qpgate::feed
