// One order-entry service: an OrderHandler (books, journal, risk) and the RC
// sessions that reach it, driven by the engine's duty cycle (order_agent.h).
//
//   do_work: journal the risk words clients' atomics changed (order_handler.h)
//   → poll every session's CQ in batches (no waiting) → on_message →
//   handler.poll (group commit) → post the SENDs whose journal records are
//   durable → publish the durable trades/book changes on the feed → hand the
//   durable order events to the order-event sink, if one is attached (a JS
//   handler) → re-post receives unless back-pressured → end the sessions
//   that are too far behind.
//
// Back-pressure is per session: a session whose own queue holds more than
// `back_pressure_messages` answers, the oldest of them durable (so it waits
// for the client to take them, not for the journal), stops getting its
// receives re-posted: its client meets RNR NAKs; nothing is dropped. Other
// sessions are not affected. Only the order-event sink's backlog (the
// gateway's own JS handler) holds every session's receives. A session that
// still does not read — its queue passes `max_queued_messages`, as fills
// for its resting orders keep coming, and nothing could be posted to it for
// `stall_timeout_ms` — is ended (lost, below); what was queued is in the journal,
// and its next Hello gets it again (the ResendStore rebuilt from there). (The time keeps a client that does read
// from being ended by a burst: one order sweeping thousands of its resting
// orders queues thousands of fills at once.) That time is the gateway's own:
// a gap between two duty cycles longer than kMaxStallStepNs (the engine was
// descheduled or stuck) counts as kMaxStallStepNs, as the client could not
// have been served in it either.
//
// A journal that fails ends every session and refuses new ones (EIO): what
// it could not record was never acknowledged, and a restart replays what it
// holds; requests seen before that are answered JOURNAL_FAILURE.
//
// A session whose QP leaves RTS (an error completion, a failed post, a
// periodic state check, an async event handed to on_async_event, or
// close_session) is "lost", with what said so kept in ended_by: on_disconnect runs once
// (cancel-on-disconnect if configured), and its ResendStore is freed, so a
// closed session costs no memory (issue 13 item 4). On the next connection's
// Hello the handler answers Welcome; if the client asks for messages the
// session has no store for (it was closed, or the gateway restarted), the
// service rebuilds them from the journal — OrderHandler::replay_messages
// replays the journal file through a handler of its own and keeps this
// session's messages from the client's last_app_seq on, the newest
// resend_capacity of them — and resends them. That replay costs what a
// start's replay costs (resend_rebuild_ns), so it runs on the rebuild
// worker (resend_rebuilder.h), never on the engine thread: the Welcome goes
// out at once, and the session's sequenced messages — the resent ones, then
// those made meanwhile, kept in its new store — follow when the rebuild is
// done. It happens once per connection, only when the client missed
// something. A Hello that missed nothing costs an empty store. Once
// welcomed, the session's new messages go into its store as they are made.
//
// Ack latency: from the batch's receive completions seen (monotonic clock
// read right after the poll) to the answer's SEND posted, in a
// LatencyHistogram (no allocation).
//
// Engine thread only, except the counters and histogram (relaxed atomics).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/counters.h"
#include "orders/order_counters.def"
#include "metrics/latency_histogram.h"
#include "orders/market_data.h"
#include "orders/order_events.h"
#include "orders/order_handler.h"
#include "orders/rc_session.h"
#include "orders/resend_rebuilder.h"
#include "orders/resend_store.h"
#include "verbs/rc_path.h"
#include "verbs/session_device.h"
#include "verbs/source_gid.h"

namespace qpgate::orders {

struct ServiceConfig {
  HandlerConfig handler;               // sessions come from open_session; on_replayed is the service's
  std::vector<InstrumentFeed> feeds;   // channel and depth per instrument (used with a feed publisher)
  std::uint32_t feed_publisher_id = 0; // 0 = trades and book changes are not published
  // recv_depth, send_depth, max_message_bytes, back_pressure_messages,
  // resend_capacity, max_queued_messages (a session's queue beyond this ends
  // it ...) and stall_timeout_ms (... once nothing could be posted to it for
  // this long): config_limits.def.
#define QPGATE_X(js, member, lo, hi, def, help) std::uint32_t member = def;
  QPGATE_ORDERS_SESSION_LIMITS(QPGATE_X)
#undef QPGATE_X
  int gid_index = -1;                    // -1: the first IPv4-mapped GID of port 1 (else the first set one)
  verbs::RcParams rc;                    // timers and hop limit; psn, mtu, access and sgid_index are per session
};

// "" when valid, else what is wrong (naming the field).
std::string validate(const ServiceConfig& config);

// Which of the service's devices a session runs on (SessionRequest::device;
// verbs/session_device.h). The alternate is given to open(); the resend
// after a failover goes by app_seq.
using verbs::kAlternateDevice;
using verbs::kPrimaryDevice;

struct SessionRequest {
  std::uint32_t session = 0;
  std::uint8_t device = kPrimaryDevice;
  SessionRole role = SessionRole::kTrading;
  std::vector<std::uint64_t> accounts;
  ThrottleConfig throttle;
  bool cancel_on_disconnect = true;
  verbs::RcPeer remote;
};

struct SessionAnswer {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  verbs::Gid gid;
  verbs::Mtu mtu = verbs::Mtu::MTU_1024;
  std::vector<RegionGrant> regions;
  std::optional<verbs::Gid> alt_gid;  // our alternate path's GID, when both ends have one (armed)
  std::int64_t ack_hold_ns = 0;       // our responder's ACK hold (verbs::Device::ack_hold_ns)
};

struct SessionInfo {
  std::uint32_t session = 0;
  std::uint8_t device = kPrimaryDevice;  // the device its QP is on
  SessionRole role = SessionRole::kTrading;
  std::uint32_t qpn = 0;
  verbs::QpState state = verbs::QpState::RESET;
  std::uint64_t last_app_seq = 0;
  std::uint64_t received = 0;
  std::uint64_t sent = 0;
  std::uint64_t rnr_held = 0;  // receives consumed and not re-posted (back-pressure)
  std::uint64_t queued = 0;    // answers waiting to be posted
  bool back_pressured = false;
  bool disconnected = false;
  std::string ended_by;  // why it was lost: RcSession::ended_by
  verbs::RcPathInfo path;  // the path it runs on (verbs/rc_path.h)
};

// The list QPGATE_ORDER_SERVICE_COUNTERS (order_counters.def).
struct ServiceCounters {
  QPGATE_ORDER_SERVICE_COUNTERS(QPGATE_COUNTER_MEMBER)

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_ORDER_SERVICE_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

class OrderService {
 public:
  // `alternate` (may be null): a second device sessions may be opened on
  // (SessionRequest::device kAlternateDevice); both outlive the service.
  static verbs::Result<std::unique_ptr<OrderService>> open(verbs::Device& device, ServiceConfig config,
                                                           verbs::Device* alternate = nullptr);
  ~OrderService();
  OrderService(const OrderService&) = delete;
  OrderService& operator=(const OrderService&) = delete;

  // EEXIST if the session is connected; EINVAL for a bad request (naming it).
  verbs::Result<SessionAnswer> open_session(const SessionRequest& request, std::uint64_t now_ns);
  // Ends the session's connection and frees its resend store (the next run
  // of the session gets what it missed from the journal, at its Hello).
  bool close_session(std::uint32_t session, std::uint64_t now_ns);
  std::vector<SessionInfo> sessions() const;

  int do_work(std::uint64_t now_ns);
  // A device async event, forwarded by whoever drains the device's events
  // (the agent does not: the device's owner does). QP_FATAL, QP_REQ_ERR and
  // QP_ACCESS_ERR on a session's QP lose that session at once, before its
  // flushed completions are polled; one lost already to its flushed receives
  // takes the event as its ended_by (it says why the QP went to ERR). True if
  // it concerned a live session. `device` says whose event it is: QP numbers
  // are per device, and two devices may both have a QP 17.
  bool on_async_event(const verbs::AsyncEvent& event, std::uint64_t now_ns, std::uint8_t device = kPrimaryDevice);
  // Flushes the journal and closes every session (cancel-on-disconnect applies).
  void close(std::uint64_t now_ns);

  // Where durable trades and book changes go (the agent sets the FeedAgent's publisher).
  void set_market_data_sink(MarketDataSink sink) { sink_ = std::move(sink); }
  // Where durable order events go (the agent's fromEngine writer); events
  // are made only while a sink is set. An empty sink detaches (and forgets
  // what was queued).
  void set_order_event_sink(OrderEventSink sink);

  const ServiceConfig& config() const noexcept { return config_; }
  bool has_alternate_device() const noexcept { return devices_.size() > kAlternateDevice; }
  OrderHandler& handler() noexcept { return *handler_; }
  const ServiceCounters& counters() const noexcept { return counters_; }
  const metrics::LatencyHistogram& ack_latency() const noexcept { return ack_latency_; }
  const MarketData& market_data() const noexcept { return market_data_; }
  RcSession* session(std::uint32_t id) const noexcept;
  std::size_t session_count() const noexcept { return sessions_.size(); }
  // Memory held by the resend stores (each grows with its session's messages; closed sessions hold none).
  std::size_t resend_bytes() const noexcept;
  // Why the last rebuild that failed did ("session 7: ..."); empty if none has.
  const std::string& last_rebuild_failure() const noexcept { return last_rebuild_failure_; }

 private:
  static constexpr std::size_t kPollBatch = 32;
  // The most one gap between duty cycles adds to a session's held time.
  static constexpr std::uint64_t kMaxStallStepNs = 10'000'000;

  // A device sessions are opened on, with what each session's QP needs of it.
  struct ServiceDevice {
    verbs::Device* device = nullptr;
    verbs::Gid gid;
    std::uint8_t gid_index = 0;
    std::optional<verbs::SourceGid> alt_gid;  // the device's alternate address (choose_alternate_gid)
    verbs::Mtu port_mtu = verbs::Mtu::MTU_4096;
  };

  explicit OrderService(ServiceConfig config);
  verbs::Status add_device(verbs::Device& device);

  ResendStore* find_store(std::uint32_t session) const noexcept;
  // The store a Welcome resends [from, to] from: this connection's, else a
  // new one, rebuilt from the journal if there is anything to resend.
  // Asks the rebuild worker for what `s` missed in [from, to]; what it is
  // sent meanwhile waits in s.held (and goes into a new store).
  void ask_rebuild(RcSession& s, std::uint64_t from, std::uint64_t to, std::uint64_t durable);
  // Queues the resends of the rebuilds that are done; returns how many were.
  int finish_rebuilds();
  void finish_rebuild(RebuildResult& result);
  // Queues s's messages [from, to] from `store` behind its Welcome, counting what is missing as resend gaps.
  void queue_resends(RcSession& s, const ResendStore& store, std::uint64_t from, std::uint64_t to, std::uint64_t durable);
  // Routes what the handler put in out_ for one input from `from` (0 = none).
  void absorb(std::uint32_t from, std::uint64_t recv_ns, std::uint64_t now_ns);
  void queue_welcome(RcSession& s, std::span<const std::uint8_t> bytes, std::uint64_t durable, std::uint64_t recv_ns);
  void lose(RcSession& s, std::uint64_t now_ns, std::string_view why);
  int poll_session(RcSession& s, std::uint64_t now_ns);
  int post_ready();
  // Per-session back-pressure and the queue cap; returns the receives re-posted.
  int pace_sessions(std::uint64_t now_ns);
  // Adds this cycle to the time `s` held a queue over the cap (over_limit), or resets it; true past stall_timeout_ms.
  bool held_too_long(RcSession& s, bool over_limit, std::uint64_t now_ns) const;
  void on_journal_failure(std::uint64_t now_ns);
  std::size_t pending() const noexcept;
  // An idle duty cycle's housekeeping: the pages the next messages will
  // write made resident first (ahead_pages.h), the duplicate table's and one
  // session's resend ring per cycle, in turn.
  void populate_ahead() noexcept;

  ServiceConfig config_;
  std::vector<ServiceDevice> devices_;  // [kPrimaryDevice], and [kAlternateDevice] if given
  std::unique_ptr<OrderHandler> handler_;
  std::vector<std::unique_ptr<RcSession>> sessions_;
  std::unordered_map<std::uint32_t, std::unique_ptr<ResendStore>> stores_;
  OutBuffer out_;
  MarketData market_data_;
  MarketDataSink sink_;
  OrderEventSink event_sink_;
  OrderEventQueue events_;
  ServiceCounters counters_;
  metrics::LatencyHistogram ack_latency_;
  std::string last_rebuild_failure_;
  std::uint64_t last_rebuild_job_ = 0;
  std::size_t populate_turn_ = 0;  // the session whose resend ring populate_ahead() tops up next
  // Last: its worker reads the journal file, so it stops before the handler goes.
  std::unique_ptr<ResendRebuilder> rebuilder_;
};

}  // namespace qpgate::orders
