#include "orders/order_service.h"

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "common/clock.h"
#include "verbs/source_gid.h"

namespace qpgate::orders {

// The largest message a session may send (config_limits.def) is what the codec can hold.
#define QPGATE_X(js, member, lo, hi, def, help) \
  static_assert(std::string_view{#js} != "maxMessageBytes" || hi == kMaxMessageBytes);
QPGATE_ORDERS_SESSION_LIMITS(QPGATE_X)
#undef QPGATE_X

namespace {

// What ended a session whose QP left RTS with no completion of its own: the
// periodic state check's words, also for a flush seen first (a responder's
// remote access error ends in ERR either way).
std::string ended_by_state(verbs::QpState state) { return "QP state " + std::string(verbs::qp_state_name(state)); }

std::string out_of_range(const char* name, std::uint32_t v, std::uint32_t lo, std::uint32_t hi) {
  if (v >= lo && v <= hi) return "";
  return std::string{name} + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(v);
}

// The limits of config_limits.def, then the one rule between them.
std::string limits_error(const ServiceConfig& c) {
  std::string e;
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (e.empty()) e = out_of_range(#js, c.member, lo, hi);
  QPGATE_ORDERS_SESSION_LIMITS(QPGATE_X)
#undef QPGATE_X
#define QPGATE_X(js, member, lo, hi, def, help) \
  if (e.empty()) e = out_of_range(#js, c.handler.member, lo, hi);
  QPGATE_ORDERS_HANDLER_LIMITS(QPGATE_X)
#undef QPGATE_X
  if (e.empty()) {
    e = out_of_range("maxQueuedMessages", c.max_queued_messages, c.back_pressure_messages, c.resend_capacity);
  }
  return e;
}

}  // namespace

std::string validate(const ServiceConfig& c) {
  if (std::string e = limits_error(c); !e.empty()) return e;
  if (c.handler.journal.path.empty()) return "journal.path must be a non-empty path";
  if (c.handler.instruments.empty()) return "instruments must list at least one instrument";
  for (std::size_t i = 0; i < c.handler.instruments.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (c.handler.instruments[j].book.instrument_id == c.handler.instruments[i].book.instrument_id) {
        return "instruments[" + std::to_string(i) + "].id " + std::to_string(c.handler.instruments[i].book.instrument_id) +
               " is listed twice";
      }
    }
  }
  for (std::size_t i = 0; i < c.handler.accounts.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (c.handler.accounts[j].account == c.handler.accounts[i].account) {
        return "accounts[" + std::to_string(i) + "].account " + std::to_string(c.handler.accounts[i].account) +
               " is listed twice";
      }
    }
  }
  return "";
}

OrderService::OrderService(ServiceConfig config) : config_(std::move(config)), market_data_(config_.feeds) {}

verbs::Status OrderService::add_device(verbs::Device& device) {
  // The configured GID index is the primary device's; the alternate's is found as ibv_devinfo would list it.
  auto gid = verbs::choose_source_gid(device, devices_.empty() ? config_.gid_index : -1);
  if (!gid.ok()) return gid.error();
  ServiceDevice d{&device, gid->gid, gid->index, verbs::choose_alternate_gid(device, *gid)};
  if (auto port = device.query_port(1); port.ok()) d.port_mtu = port->active_mtu;
  devices_.push_back(d);
  return {};
}

verbs::Result<std::unique_ptr<OrderService>> OrderService::open(verbs::Device& device, ServiceConfig config,
                                                                 verbs::Device* alternate) {
  if (std::string e = validate(config); !e.empty()) return verbs::Error{EINVAL, e};
  if (alternate == &device) return verbs::Error{EINVAL, "the alternate device is the primary device: give a second device"};
  std::unique_ptr<OrderService> s{new OrderService(std::move(config))};
  if (auto st = s->add_device(device); !st.ok()) return st.error();
  if (alternate != nullptr) {
    if (auto st = s->add_device(*alternate); !st.ok()) {
      return verbs::Error{st.error().code, "alternate device " + std::string(alternate->name()) + ": " + st.error().message};
    }
  }

  HandlerConfig hc = s->config_.handler;
  hc.sessions.clear();
  // The engine thread never waits on the disk: fdatasync (interval/every) runs on the journal's own thread.
  hc.journal.sync_thread = true;
  // No resend store is built at start: every session is closed until it reconnects (queue_welcome).
  hc.on_replayed = {};
  s->config_.handler = hc;
  std::string error;
  s->handler_ = OrderHandler::open(hc, error);
  if (!s->handler_) return verbs::Error{EINVAL, "journal " + s->config_.handler.journal.path + ": " + error};
  s->rebuilder_ = std::make_unique<ResendRebuilder>(hc, s->config_.resend_capacity);
  return s;
}

OrderService::~OrderService() { close(qpgate::monotonic_ns()); }

ResendStore* OrderService::find_store(std::uint32_t session) const noexcept {
  const auto it = stores_.find(session);
  return it == stores_.end() ? nullptr : it->second.get();
}

void OrderService::ask_rebuild(RcSession& s, std::uint64_t from, std::uint64_t to, std::uint64_t durable) {
  stores_[s.id()] = std::make_unique<ResendStore>(config_.resend_capacity);
  s.rebuild_job = ++last_rebuild_job_;
  s.resend_from = from;
  s.resend_to = to;
  s.resend_durable = durable;
  s.held.clear();
  counters_.resend_rebuilds.add();
  // The file must hold every record the live handler appended: the replay reads it, not the buffer.
  if (!handler_->write_out()) return;  // the journal failed: on_journal_failure ends the session
  rebuilder_->ask(RebuildJob{s.rebuild_job, s.id(), from, handler_->journal().written_position()});
}

int OrderService::finish_rebuilds() {
  std::vector<RebuildResult> done = rebuilder_->take_done();
  for (RebuildResult& r : done) finish_rebuild(r);
  return static_cast<int>(done.size());
}

void OrderService::finish_rebuild(RebuildResult& r) {
  if (r.ran_replay) {
    counters_.resend_rebuild_replays.add();
    counters_.resend_rebuild_ns.add(r.took_ns);
  }
  if (!r.ok && !r.cancelled) {
    // What could not be rebuilt is counted again by queue_resends, as resend gaps.
    counters_.resend_rebuild_failures.add();
    last_rebuild_failure_ = "session " + std::to_string(r.job.session) + ": " + r.error;
  }
  RcSession* s = session(r.job.session);
  if (s == nullptr || s->disconnected || s->rebuild_job != r.job.id) return;  // gone, or a later Hello's
  s->rebuild_job = 0;
  std::unique_ptr<ResendStore>& kept = stores_[s->id()];
  if (r.store != nullptr) {
    // What was made while the worker read: after the replay's last message, or a copy of it (put ignores those).
    for (std::uint64_t seq = kept->first(); seq != 0 && seq <= kept->last(); ++seq) {
      if (const auto b = kept->get(seq); !b.empty()) r.store->put(seq, b);
    }
    kept = std::move(r.store);
  }
  queue_resends(*s, *kept, s->resend_from, s->resend_to, s->resend_durable);
  for (; !s->held.empty(); s->held.pop()) {
    const PendingMessage& m = s->held.front();
    s->out().push(m.app_seq, m.durable, m.recv_ns, m.view());
  }
  s->greeted = true;
}

void OrderService::queue_resends(RcSession& s, const ResendStore& st, std::uint64_t from, std::uint64_t to,
                                 std::uint64_t durable) {
  if (from <= to && (st.first() == 0 || from < st.first())) {
    const std::uint64_t kept_from = st.first() == 0 ? to + 1 : st.first();
    counters_.resend_gaps.add(std::min(kept_from, to + 1) - from);
    from = kept_from;
  }
  for (std::uint64_t seq = from; seq <= to; ++seq) {
    const auto b = st.get(seq);
    if (b.empty()) {
      counters_.resend_gaps.add();
      continue;
    }
    s.out().push(seq, durable, 0, b);
  }
}

std::size_t OrderService::resend_bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& [id, store] : stores_) n += store->bytes_reserved();
  return n;
}

RcSession* OrderService::session(std::uint32_t id) const noexcept {
  for (const auto& s : sessions_) {
    if (s->id() == id) return s.get();
  }
  return nullptr;
}

verbs::Result<SessionAnswer> OrderService::open_session(const SessionRequest& req, std::uint64_t now_ns) {
  const std::string who = "session " + std::to_string(req.session);
  if (req.session == 0) return verbs::Error{EINVAL, "session must be a non-zero id"};
  if (req.remote.qpn == 0 || req.remote.qpn > 0xFFFFFFu) return verbs::Error{EINVAL, who + ": remote.qpn must be in 1..16777215"};
  if (req.remote.psn > 0xFFFFFFu) return verbs::Error{EINVAL, who + ": remote.psn must be a 24-bit number"};
  for (const std::uint64_t a : req.accounts) {
    if (handler_->risk().find(a) == nullptr) return verbs::Error{EINVAL, who + ": account " + std::to_string(a) + " is not configured"};
  }
  if (req.device >= devices_.size()) {
    return verbs::Error{EINVAL, who + ": no alternate device on this gateway (backend.alternateDevice)"};
  }
  if (handler_->journal().failed()) {
    return verbs::Error{EIO, who + ": the journal failed (" + handler_->journal().failure() +
                                 "): no session is served until a restart"};
  }
  if (RcSession* old = session(req.session)) {
    if (!old->disconnected) return verbs::Error{EEXIST, who + " is already connected"};
    close_session(req.session, now_ns);
  }
  RcSessionConfig rc{req.session,        req.role,          req.accounts,
                     req.remote,         config_.recv_depth, config_.send_depth,
                     config_.max_message_bytes, config_.rc};
  rc.params.psn = verbs::random_psn();
  rc.params.timeout = static_cast<std::uint8_t>(config_.ack_timeout);
  rc.params.retry_cnt = static_cast<std::uint8_t>(config_.retry_cnt);
  const ServiceDevice& d = devices_[req.device];
  rc.params.mtu = static_cast<verbs::Mtu>(
      std::min(static_cast<std::uint8_t>(req.remote.mtu), static_cast<std::uint8_t>(d.port_mtu)));
  rc.params.sgid_index = d.gid_index;
  if (d.alt_gid) rc.params.alt_sgid_index = d.alt_gid->index;
  auto opened = RcSession::open(*d.device, handler_->risk(), rc);
  if (!opened.ok()) return opened.error();
  std::unique_ptr<RcSession> s = std::move(*opened);
  s->device = req.device;
  if (req.role == SessionRole::kTrading) {
    handler_->configure_session(SessionConfig{req.session, req.accounts, req.throttle, req.cancel_on_disconnect});
  }
  s->next_state_check_ns = now_ns + verbs::kRcCheckIntervalNs;
  SessionAnswer a{s->qpn(), s->psn(), d.gid, s->mtu(), s->regions(), std::nullopt};
  if (s->channel().path().has_alternate) a.alt_gid = d.alt_gid->gid;
  a.ack_hold_ns = d.device->ack_hold_ns();
  sessions_.push_back(std::move(s));
  return a;
}

bool OrderService::close_session(std::uint32_t id, std::uint64_t now_ns) {
  const auto it = std::find_if(sessions_.begin(), sessions_.end(), [&](const auto& s) { return s->id() == id; });
  if (it == sessions_.end()) return false;
  if (!(*it)->disconnected) lose(**it, now_ns, "closed");
  sessions_.erase(it);
  return true;
}

std::vector<SessionInfo> OrderService::sessions() const {
  std::vector<SessionInfo> out;
  for (const auto& s : sessions_) {
    out.push_back(SessionInfo{s->id(), s->device, s->role(), s->qpn(), s->state(), handler_->last_app_seq(s->id()),
                              s->received_count, s->sent_count, s->channel().held_receives(), s->out().size(),
                              s->back_pressured, s->disconnected, s->ended_by, s->channel().path()});
  }
  return out;
}

void OrderService::close(std::uint64_t now_ns) {
  if (!handler_) return;
  while (!sessions_.empty()) close_session(sessions_.back()->id(), now_ns);
  handler_->flush();
}

void OrderService::lose(RcSession& s, std::uint64_t now_ns, std::string_view why) {
  s.disconnected = true;
  s.ended_by = why;
  s.greeted = false;
  if (s.rebuild_job != 0) rebuilder_->cancel(s.rebuild_job);
  s.rebuild_job = 0;
  s.held.clear();
  s.back_pressured = false;
  s.out().clear();
  s.channel().to_error();
  counters_.disconnects.add();
  out_.clear();
  handler_->on_disconnect(s.id(), now_ns, out_);
  absorb(0, 0, now_ns);
  out_.clear();
  // A closed session costs no memory: its next Hello rebuilds what it missed from the journal.
  stores_.erase(s.id());
}

void OrderService::set_order_event_sink(OrderEventSink sink) {
  event_sink_ = std::move(sink);
  if (!event_sink_) events_.clear();
  counters_.order_events_waiting.set(events_.size());
}

std::size_t OrderService::pending() const noexcept {
  // A rebuild's resends are pending too (a drain before close waits for them).
  std::size_t n = events_.size() + rebuilder_->outstanding();
  for (const auto& s : sessions_) n += s->out().size() + s->held.size();
  return n;
}

void OrderService::queue_welcome(RcSession& s, std::span<const std::uint8_t> bytes, std::uint64_t durable,
                                 std::uint64_t recv_ns) {
  OrderMessage m;
  const Welcome* w = decode(bytes, m).ok() ? std::get_if<Welcome>(&m) : nullptr;
  if (w == nullptr) {  // SEQUENCE_AHEAD: nothing else follows
    s.out().push(0, durable, recv_ns, bytes);
    return;
  }
  // What is queued already is in the resend range: the Welcome goes first.
  s.out().drop_sequenced();
  s.out().push(0, durable, 0, bytes);
  // A second Hello while a rebuild runs: this one's range counts, read anew.
  const bool rebuilding = s.rebuild_job != 0;
  if (rebuilding) rebuilder_->cancel(s.rebuild_job);
  s.rebuild_job = 0;
  const std::uint64_t from = std::max<std::uint64_t>(w->resend_from, 1);
  if ((rebuilding || find_store(s.id()) == nullptr) && from <= w->app_seq) {
    s.greeted = false;
    ask_rebuild(s, from, w->app_seq, durable);
    return;
  }
  std::unique_ptr<ResendStore>& st = stores_[s.id()];
  if (!st) st = std::make_unique<ResendStore>(config_.resend_capacity);
  queue_resends(s, *st, from, w->app_seq, durable);
  s.greeted = true;
}

void OrderService::absorb(std::uint32_t from, std::uint64_t recv_ns, std::uint64_t now_ns) {
  const std::uint64_t durable = out_.durable_position();
  bool answered = false;
  for (const OutMessage& m : out_.messages()) {
    const auto bytes = out_.bytes_of(m);
    // Only a welcomed session has a store; the others' messages are in the journal for their next Hello.
    if (ResendStore* st = m.app_seq != 0 ? find_store(m.session) : nullptr) st->put(m.app_seq, bytes);
    RcSession* s = session(m.session);
    if (s == nullptr || s->disconnected) continue;
    // The first message to the sender is the answer to its request.
    const std::uint64_t latency_from = !answered && m.session == from ? recv_ns : 0;
    if (m.session == from) answered = true;
    if (m.app_seq == 0) {
      queue_welcome(*s, bytes, durable, 0);
    } else if (s->rebuild_job != 0) {
      s->held.push(m.app_seq, durable, latency_from, bytes);
    } else if (s->greeted) {
      s->out().push(m.app_seq, durable, latency_from, bytes);
    }
  }
  if (event_sink_) {
    for (const OrderEvent& e : out_.order_events()) events_.push(e, durable);
  }
  if (config_.feed_publisher_id != 0 && (!out_.trades().empty() || !out_.level_changes().empty())) {
    market_data_.absorb(out_, durable, now_ns, qpgate::realtime_ns(), *handler_);
  }
}

int OrderService::poll_session(RcSession& s, std::uint64_t now_ns) {
  verbs::Wc wcs[kPollBatch];
  auto polled = s.channel().poll(wcs);
  if (!polled.ok()) {
    counters_.cq_overflows.add();
    lose(s, now_ns, "CQ overflow");
    return 1;
  }
  const std::size_t n = *polled;
  if (n == 0) return 0;
  const std::uint64_t seen = qpgate::monotonic_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const verbs::Wc& wc = wcs[i];
    if (wc.status != verbs::WcStatus::IBV_WC_SUCCESS) {
      // The QP is in ERR: the rest of the batch are flushes. A flush first
      // says only that the QP went to ERR with no completion of its own (a
      // responder's remote access error): named as the state check names it,
      // so which of the two saw it first (rxe flushes asynchronously) does not
      // change what an operator reads.
      const bool flushed = wc.status == verbs::WcStatus::IBV_WC_WR_FLUSH_ERR;
      lose(s, now_ns, flushed ? ended_by_state(verbs::QpState::ERR) : std::string(verbs::wc_status_enum_name(wc.status)));
      break;
    }
    if (verbs::RcChannel::is_send(wc)) continue;  // its slot is free again
    ++s.received_count;
    counters_.received.add();
    out_.clear();
    handler_->on_message(s.id(), s.channel().received(wc), now_ns, out_);
    s.channel().release_receive(verbs::RcChannel::slot_of(wc));
    absorb(s.id(), seen, now_ns);
  }
  out_.clear();
  return static_cast<int>(n);
}

int OrderService::post_ready() {
  const std::uint64_t durable = handler_->durable_position();
  int work = 0;
  for (const auto& sp : sessions_) {
    RcSession& s = *sp;
    if (s.disconnected) continue;
    OutQueue& q = s.out();
    if (q.empty() || q.front().durable > durable || s.channel().free_send_slots() == 0) continue;
    const std::uint64_t now = qpgate::monotonic_ns();
    while (!q.empty() && s.channel().free_send_slots() > 0 && q.front().durable <= durable) {
      const PendingMessage& m = q.front();
      s.stage_send(m.view());
      if (m.recv_ns != 0 && now >= m.recv_ns) ack_latency_.record(now - m.recv_ns);
      q.pop();
      s.held_ns = 0;
      ++s.sent_count;
      counters_.sent.add();
      ++work;
    }
    if (!s.channel().flush_sends().ok()) counters_.send_errors.add();  // the QP is leaving RTS: its completions say so
  }
  return work;
}

bool OrderService::on_async_event(const verbs::AsyncEvent& e, std::uint64_t now_ns, std::uint8_t device) {
  if (e.element != verbs::EventElement::QP) return false;
  if (e.event_type != verbs::EventType::QP_FATAL && e.event_type != verbs::EventType::QP_REQ_ERR &&
      e.event_type != verbs::EventType::QP_ACCESS_ERR) {
    return false;
  }
  const std::string_view name = verbs::event_type_enum_name(e.event_type);
  for (const auto& s : sessions_) {
    if (s->qpn() != e.element_id || s->device != device) continue;
    if (!s->disconnected) {
      lose(*s, now_ns, name);
      return true;
    }
    // Its flushed receives or the state check came first: the event says why the QP went to ERR.
    if (s->ended_by == ended_by_state(verbs::QpState::ERR)) s->ended_by = name;
    return false;
  }
  return false;
}

int OrderService::do_work(std::uint64_t now_ns) {
  int work = 0;
  // Before the receives: a risk session's atomic since the last cycle is
  // journaled even if no order for the account ever comes (a restart must not
  // un-kill it). Its record is made durable by this cycle's handler poll.
  work += static_cast<int>(handler_->journal_risk_words(now_ns));
  for (std::size_t i = 0; i < sessions_.size(); ++i) {
    RcSession& s = *sessions_[i];
    if (!s.disconnected) work += poll_session(s, now_ns);
  }
  if (handler_->poll(now_ns)) ++work;
  work += finish_rebuilds();
  work += post_ready();
  if (config_.feed_publisher_id != 0) {
    work += static_cast<int>(market_data_.publish_ready(handler_->durable_position(), &sink_));
  }
  if (event_sink_ && events_.size() != 0) {
    const std::size_t n = events_.release(handler_->durable_position(), event_sink_);
    counters_.order_events.add(n);
    work += static_cast<int>(n);
  }
  counters_.order_events_waiting.set(events_.size());
  counters_.pending_messages.set(pending());
  if (handler_->journal().failed() && counters_.journal_failed.get() == 0) on_journal_failure(now_ns);
  work += pace_sessions(now_ns);
  if (work == 0) populate_ahead();
  return work;
}

void OrderService::populate_ahead() noexcept {
  handler_->populate_ahead();
  if (sessions_.empty()) return;
  populate_turn_ = (populate_turn_ + 1) % sessions_.size();
  if (ResendStore* st = find_store(sessions_[populate_turn_]->id())) st->populate_ahead();
}

bool OrderService::held_too_long(RcSession& s, bool over_limit, std::uint64_t now_ns) const {
  if (!over_limit) {
    s.held_ns = 0;
  } else if (s.held_checked_ns != 0 && now_ns > s.held_checked_ns) {
    s.held_ns += std::min(now_ns - s.held_checked_ns, kMaxStallStepNs);
  }
  s.held_checked_ns = now_ns;
  return s.held_ns > std::uint64_t{config_.stall_timeout_ms} * 1'000'000;
}

int OrderService::pace_sessions(std::uint64_t now_ns) {
  const std::uint64_t durable = handler_->durable_position();
  // The gateway's own JS handler being behind holds everyone: its events are the gateway's work.
  const bool events_behind = events_.size() > config_.back_pressure_messages;
  int reposted = 0;
  for (const auto& sp : sessions_) {
    RcSession& s = *sp;
    if (s.disconnected) continue;
    const OutQueue& q = s.out();
    // After post_ready, a durable message at the front means every send slot
    // is taken: the client is the holdup (a queue that waits for the journal is not its doing).
    const bool client_holds = !q.empty() && q.front().durable <= durable;
    if (held_too_long(s, client_holds && q.size() > config_.max_queued_messages, now_ns)) {
      counters_.slow_disconnects.add();
      lose(s, now_ns, "slow consumer: more than max_queued_messages held past stall_ns");
      continue;
    }
    const bool pressed = (client_holds && q.size() > config_.back_pressure_messages) || events_behind;
    if (pressed && !s.back_pressured) counters_.back_pressure_events.add();
    s.back_pressured = pressed;
    if (!pressed) reposted += static_cast<int>(s.channel().repost_receives());
    if (now_ns >= s.next_state_check_ns) {
      s.next_state_check_ns = now_ns + verbs::kRcCheckIntervalNs;
      // Its completions first: an error among them says why better than the state does.
      if (s.state() != verbs::QpState::RTS) {
        poll_session(s, now_ns);
        if (!s.disconnected) lose(s, now_ns, ended_by_state(s.state()));
      } else if (const verbs::Result<bool> r = s.channel().rearm(); r.ok() && *r) {
        counters_.path_rearms.add();
      }
    }
  }
  return reposted;
}

void OrderService::on_journal_failure(std::uint64_t now_ns) {
  counters_.journal_failed.set(1);
  for (const auto& s : sessions_) {
    if (!s->disconnected) lose(*s, now_ns, "journal failed");
  }
}

}  // namespace qpgate::orders
