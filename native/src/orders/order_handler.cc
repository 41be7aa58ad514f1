// The OrderHandler's ack path (order_handler.h): construction, the risk
// words, lookups and the checks that answer each request; the checks shared
// by NewOrder and Replace are in order_checks.cc, applying what was accepted
// in order_apply.cc, the journal's replay in order_replay.cc.
#include "orders/order_handler.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace qpgate::orders {

// ---- construction -------------------------------------------------

OrderHandler::OrderHandler(const HandlerConfig& config, const SipKey& dedupe_key)
    : pool_(config.order_capacity),
      dedupe_(config.client_order_id_capacity, dedupe_key),
      max_ids_per_session_(config.max_client_order_ids) {
  for (const InstrumentConfig& ic : config.instruments) {
    instruments_.push_back(std::make_unique<Instrument>(ic, pool_));
    by_id_[ic.book.instrument_id] = instruments_.back().get();
  }
  for (const AccountConfig& a : config.accounts) {
    // The configured values are where the journal's kRiskWords records start from.
    RiskRegion& region = risk_.add(a.account, a.credit_limit);
    journaled_risk_[a.account] = JournaledRisk{&region, RiskWords{region.credit_limit(), region.kill_switch()}};
  }
  for (const SessionConfig& s : config.sessions) configure_session(s);
}

OrderHandler::~OrderHandler() = default;

bool OrderHandler::dedupe_key_of(const HandlerConfig& config, SipKey& key, std::string& error) {
  if (config.dedupe_key) {
    key = *config.dedupe_key;
    return true;
  }
  if (random_sip_key(key)) return true;
  error = "no random key for the duplicate table: getrandom failed";
  return false;
}

std::unique_ptr<OrderHandler> OrderHandler::open(const HandlerConfig& config, std::string& error) {
  for (const InstrumentConfig& ic : config.instruments) {
    const BookConfig& b = ic.book;
    if (b.tick_size <= 0 || b.min_price <= 0 || b.max_price < b.min_price || (b.max_price - b.min_price) % b.tick_size != 0 ||
        b.min_price % b.tick_size != 0) {
      error = "instrument " + std::to_string(b.instrument_id) +
              ": the price band must be positive tick multiples with min_price <= max_price";
      return nullptr;
    }
  }
  SipKey key;
  if (!dedupe_key_of(config, key, error)) return nullptr;
  std::unique_ptr<OrderHandler> h{new OrderHandler(config, key)};
  OrderHandler* raw = h.get();
  h->journal_ = Journal::open(
      config.journal,
      [raw, &config](std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t, std::string& why) {
        if (!raw->replay(type, payload, why)) return false;
        if (config.on_replayed) config.on_replayed(raw->replay_out_);
        return true;
      },
      error);
  if (!h->journal_) return nullptr;
  return h;
}

// ---- risk words ----------------------------------------------------------------

std::optional<OrderHandler::RiskWords> OrderHandler::settle_risk_words(JournaledRisk& account, std::uint64_t now_ns) {
  const RiskWords seen{account.region->credit_limit(), account.region->kill_switch()};
  if (seen == account.words) return seen;
  const RiskWordsRecord r{account.region->account(), seen.credit_limit, seen.kill_switch};
  const std::uint64_t end = journal(RecordType::kRiskWords, r, now_ns);
  if (end == 0) return std::nullopt;
  counters_.risk_word_records.add();
  account.words = seen;
  if (account.durable_at == 0) ++risk_not_durable_;
  account.durable_at = end;
  publish_durable_risk_words();  // under fsync every, it may be durable already
  return seen;
}

void OrderHandler::publish_durable_risk_words() noexcept {
  if (risk_not_durable_ == 0) return;
  const std::uint64_t durable = journal_->durable_position();
  for (auto& [id, account] : journaled_risk_) {
    if (account.durable_at == 0 || account.durable_at > durable) continue;
    account.region->set_durable(account.words.credit_limit, account.words.kill_switch);
    account.durable_at = 0;
    --risk_not_durable_;
  }
}

std::size_t OrderHandler::journal_risk_words(std::uint64_t now_ns) {
  if (journal_->failed()) return 0;
  const std::uint64_t before = counters_.risk_word_records.get();
  for (auto& [id, account] : journaled_risk_) {
    if (!settle_risk_words(account, now_ns)) break;
  }
  return counters_.risk_word_records.get() - before;
}


const OrderHandler::RiskWords* OrderHandler::journaled_risk_words(std::uint64_t account) const noexcept {
  const auto it = journaled_risk_.find(account);
  return it == journaled_risk_.end() ? nullptr : &it->second.words;
}

// ---- lookups -----------------------------------------------------------------

void OrderHandler::configure_session(const SessionConfig& config) {
  Session& s = session(config.session);
  s.configured = true;
  s.accounts = config.accounts;
  s.throttle = TokenBucket{config.throttle};
  s.cancel_on_disconnect = config.cancel_on_disconnect;
}

OrderHandler::Session& OrderHandler::session(std::uint32_t id) {
  auto [it, inserted] = sessions_.try_emplace(id);
  if (inserted) it->second.id = id;
  return it->second;
}

OrderHandler::Instrument* OrderHandler::instrument(std::uint32_t id) noexcept {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

OrderHandler::Instrument* OrderHandler::entry_instrument(const Session& s, std::uint32_t instrument_id,
                                                         RejectReason& refused) {
  if (!s.configured) {
    say("session %u is not configured for order entry", s.id);
    refused = RejectReason::kNotEntitled;
    return nullptr;
  }
  Instrument* ins = instrument(instrument_id);
  if (ins == nullptr) {
    say("instrument %u is not traded on this gateway", instrument_id);
    refused = RejectReason::kUnknownInstrument;
  }
  return ins;
}

CheckedInstrument OrderHandler::checked(const Instrument& ins) noexcept {
  return CheckedInstrument{ins.book, ins.collar, ins.config.max_quantity};
}

const OrderBook* OrderHandler::book(std::uint32_t instrument_id) const noexcept {
  const auto it = by_id_.find(instrument_id);
  return it == by_id_.end() ? nullptr : &it->second->book;
}

std::uint64_t OrderHandler::last_app_seq(std::uint32_t session) const noexcept {
  const auto it = sessions_.find(session);
  return it == sessions_.end() ? 0 : it->second.last_app_seq;
}

bool OrderHandler::entitled(const Session& s, std::uint64_t account) const noexcept {
  return std::find(s.accounts.begin(), s.accounts.end(), account) != s.accounts.end();
}

void OrderHandler::say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(text_.bytes, sizeof text_.bytes, format, args);
  va_end(args);
}

std::uint32_t OrderHandler::open_order(std::uint32_t session, std::uint64_t client_order_id,
                                       std::uint32_t instrument_id) {
  const DedupeEntry* e = dedupe_.find(session, client_order_id);
  if (e == nullptr || e->kind != ResponseKind::kAck) {
    say("session %u has no order with client_order_id %llu", session, static_cast<unsigned long long>(client_order_id));
    return kNoSlot;
  }
  const OrderNode& n = pool_[e->slot];
  if (n.order_id != e->order_id || !n.resting) {
    say("order %llu (client_order_id %llu) is no longer open: filled or cancelled",
        static_cast<unsigned long long>(e->order_id), static_cast<unsigned long long>(client_order_id));
    return kNoSlot;
  }
  if (n.instrument_id != instrument_id) {
    say("order %llu (client_order_id %llu) is for instrument %u, not %u", static_cast<unsigned long long>(e->order_id),
        static_cast<unsigned long long>(client_order_id), n.instrument_id, instrument_id);
    return kNoSlot;
  }
  return e->slot;
}

template <typename Record>
std::uint64_t OrderHandler::journal(RecordType type, const Record& record, std::uint64_t now_ns) {
  return journal_->append(static_cast<std::uint16_t>(type),
                          std::span<const std::uint8_t>{reinterpret_cast<const std::uint8_t*>(&record), sizeof record},
                          now_ns);
}

// ---- the ack path --------------------------------------------------------------

void OrderHandler::on_message(std::uint32_t session_id, std::span<const std::uint8_t> bytes, std::uint64_t now_ns,
                              OutBuffer& out) {
  counters_.messages_in.add();
  Session& s = session(session_id);
  OrderMessage message;
  const DecodeResult decoded = decode(bytes, message);
  if (!decoded.ok()) {
    counters_.decode_errors[static_cast<std::size_t>(decoded.error)].add();
    std::memcpy(text_.bytes, decoded.message, std::min(sizeof text_.bytes, sizeof decoded.message));
    text_.bytes[sizeof text_.bytes - 1] = '\0';
    reject(s, decoded.client_order_id, RejectReason::kMalformed, now_ns, out, Charge::kTakeToken);
    return;
  }
  if (journal_->failed()) {
    // Nothing can be recorded, so nothing is done: an answer now, not one held for ever.
    return refuse_journal_failure(s, client_order_id_of(message), out);
  }
  if (const auto* m = std::get_if<NewOrder>(&message)) {
    on_new_order(s, *m, now_ns, out);
  } else if (const auto* c = std::get_if<Cancel>(&message)) {
    on_cancel(s, *c, now_ns, out);
  } else if (const auto* r = std::get_if<Replace>(&message)) {
    on_replace(s, *r, now_ns, out);
  } else if (const auto* h = std::get_if<Hello>(&message)) {
    on_hello(s, *h, out);
  } else {
    say("%.*s is a gateway message; a client sends hello, new_order, cancel or replace",
        static_cast<int>(body_name(message).size()), body_name(message).data());
    reject(s, 0, RejectReason::kMalformed, now_ns, out, Charge::kTakeToken);
  }
}

void OrderHandler::on_hello(Session& s, const Hello& hello, OutBuffer& out) {
  counters_.hellos.add();
  out.require_durable(journal_->appended_position());
  if (hello.last_app_seq > s.last_app_seq) {
    // Not sequenced (app_seq 0 is never a message's), not journaled: the
    // client is wrong about the session, nothing happened.
    say("Hello.last_app_seq %llu is ahead of session %u's last app_seq %llu",
        static_cast<unsigned long long>(hello.last_app_seq), s.id, static_cast<unsigned long long>(s.last_app_seq));
    return refuse(s, 0, RejectReason::kSequenceAhead, out);
  }
  out.add(s.id, 0, Welcome{s.last_app_seq, hello.last_app_seq + 1});
}

void OrderHandler::reject(Session& s, std::uint64_t client_order_id, RejectReason reason, std::uint64_t now_ns,
                          OutBuffer& out, Charge charge) {
  if (charge == Charge::kTakeToken && !s.throttle.try_take(now_ns)) {
    say("session %u is over its order rate (rejects count towards it)", s.id);
    return refuse(s, client_order_id, RejectReason::kThrottled, out);
  }
  // An id seen before keeps its first answer; this reject is not recorded
  // for it, nor for a new id when there is no room to remember one.
  const bool record_id = client_order_id != 0 && dedupe_.find(s.id, client_order_id) == nullptr;
  if (record_id && !room_for_id(s)) return refuse(s, client_order_id, RejectReason::kIdLimit, out);
  RejectRecord r{};
  r.app_seq = s.last_app_seq + 1;
  r.client_order_id = record_id ? client_order_id : 0;
  r.session = s.id;
  r.reason = static_cast<std::uint8_t>(reason);
  const std::uint64_t at = journal(RecordType::kReject, r, now_ns);
  if (at == 0) return refuse_journal_failure(s, client_order_id, out);
  counters_.rejects[static_cast<std::size_t>(reason)].add();
  out.require_durable(at);
  apply_reject(r, text_.c_str(), out);
}

void OrderHandler::refuse(Session& s, std::uint64_t client_order_id, RejectReason reason, OutBuffer& out) {
  counters_.rejects[static_cast<std::size_t>(reason)].add();
  out.add(s.id, 0, Reject{0, client_order_id, reason, text_.c_str(), false});
}

void OrderHandler::refuse_journal_failure(Session& s, std::uint64_t client_order_id, OutBuffer& out) {
  say("the journal failed: %s", journal_->failure().c_str());
  refuse(s, client_order_id, RejectReason::kJournalFailure, out);
}

bool OrderHandler::admit(Session& s, std::uint64_t client_order_id, std::uint64_t now_ns, OutBuffer& out) {
  if (!s.throttle.try_take(now_ns)) {
    say("session %u is over its order rate", s.id);
    refuse(s, client_order_id, RejectReason::kThrottled, out);
    return false;
  }
  if (!room_for_id(s)) {
    refuse(s, client_order_id, RejectReason::kIdLimit, out);
    return false;
  }
  return true;
}

bool OrderHandler::room_for_id(const Session& s) {
  if (s.ids_held >= max_ids_per_session_) {
    say("session %u holds %zu client order ids, its limit (orders.sessions.maxClientOrderIds)", s.id, s.ids_held);
    return false;
  }
  if (dedupe_.full()) {
    say("the gateway holds %zu client order ids, its limit (orders.clientOrderIdCapacity)", dedupe_.size());
    return false;
  }
  return true;
}

DedupeEntry& OrderHandler::remember(Session& s, std::uint64_t client_order_id) {
  DedupeEntry* e = dedupe_.insert(s.id, client_order_id);
  ++s.ids_held;
  return *e;  // not null: the caller (room_for_id, or replay's room) made sure
}

void OrderHandler::apply_reject(const RejectRecord& r, std::string_view text, OutBuffer& out) {
  Session& s = session(r.session);
  const std::uint64_t seq = ++s.last_app_seq;
  const auto reason = static_cast<RejectReason>(r.reason);
  if (r.client_order_id != 0) {
    DedupeEntry& e = remember(s, r.client_order_id);
    e.kind = ResponseKind::kReject;
    e.reason = reason;
    e.app_seq = seq;
  }
  out.add(s.id, seq, Reject{seq, r.client_order_id, reason, text, false});
}

void OrderHandler::resend(Session& s, const DedupeEntry& e, OutBuffer& out) {
  counters_.resends.add();
  out.require_durable(journal_->appended_position());  // the original may still be in the group commit
  switch (e.kind) {
    case ResponseKind::kAck:
      out.add(s.id, e.app_seq, Ack{e.app_seq, e.client_order_id, e.order_id, true});
      break;
    case ResponseKind::kReject:
      say("resent: the first answer to client_order_id %llu was %.*s",
          static_cast<unsigned long long>(e.client_order_id), static_cast<int>(name_of(e.reason).size()),
          name_of(e.reason).data());
      out.add(s.id, e.app_seq, Reject{e.app_seq, e.client_order_id, e.reason, text_.c_str(), true});
      break;
    case ResponseKind::kCancelAck:
      out.add(s.id, e.app_seq,
              CancelAck{e.app_seq, e.client_order_id, e.orig_client_order_id, e.order_id, CancelReason::kRequested,
                        e.quantity, true});
      break;
    case ResponseKind::kReplaceAck:
      out.add(s.id, e.app_seq,
              ReplaceAck{e.app_seq, e.client_order_id, e.orig_client_order_id, e.order_id, e.price, e.quantity,
                         e.priority_kept, true});
      break;
    case ResponseKind::kEmpty:
      break;
  }
}

void OrderHandler::on_new_order(Session& s, const NewOrder& o, std::uint64_t now_ns, OutBuffer& out) {
  if (const DedupeEntry* e = dedupe_.find(s.id, o.client_order_id)) return resend(s, *e, out);
  if (!admit(s, o.client_order_id, now_ns, out)) return;
  auto no = [&](RejectReason reason) { reject(s, o.client_order_id, reason, now_ns, out); };
  using ull = unsigned long long;
  RejectReason refused = kPasses;
  Instrument* ins = entry_instrument(s, o.instrument_id, refused);
  if (ins == nullptr) return no(refused);
  RiskRegion* account = risk_.find(o.account);
  if (account == nullptr) {
    say("account %llu is not known to this gateway", static_cast<ull>(o.account));
    return no(RejectReason::kUnknownAccount);
  }
  if (!entitled(s, o.account)) {
    say("session %u may not trade account %llu", s.id, static_cast<ull>(o.account));
    return no(RejectReason::kNotEntitled);
  }
  const OrderTerms terms{o.account, o.side, o.price, o.quantity};
  std::int64_t notional = 0;
  if (const RejectReason r = check_shape(checked(*ins), terms, notional, text_); r != kPasses) return no(r);
  // The checks use the journaled snapshot, not the live words (see the header).
  const std::optional<RiskWords> words = settle_risk_words(journaled_risk(o.account), now_ns);
  if (!words) return refuse_journal_failure(s, o.client_order_id, out);
  const RiskView risk{words->kill_switch, words->credit_limit, account->open_notional()};
  if (const RejectReason r = check_risk(terms, risk, notional, text_); r != kPasses) return no(r);
  if (const RejectReason r = check_book(checked(*ins), terms, true, text_); r != kPasses) return no(r);
  if (pool_.in_use() == pool_.capacity()) {
    say("no room for another open order (%u open)", pool_.capacity());
    return no(RejectReason::kBookFull);
  }
  NewOrderRecord r{};
  r.app_seq = s.last_app_seq + 1;
  r.order_id = next_order_id_ + 1;
  r.client_order_id = o.client_order_id;
  r.account = o.account;
  r.price = o.price;
  r.quantity = o.quantity;
  r.session = s.id;
  r.instrument_id = o.instrument_id;
  r.side = static_cast<std::uint8_t>(o.side);
  r.time_in_force = static_cast<std::uint8_t>(o.time_in_force);
  const std::uint64_t at = journal(RecordType::kNewOrder, r, now_ns);
  if (at == 0) return refuse_journal_failure(s, o.client_order_id, out);
  out.require_durable(at);
  apply_new_order(r, out);
}

void OrderHandler::on_cancel(Session& s, const Cancel& c, std::uint64_t now_ns, OutBuffer& out) {
  if (const DedupeEntry* e = dedupe_.find(s.id, c.client_order_id)) return resend(s, *e, out);
  if (!room_for_id(s)) return refuse(s, c.client_order_id, RejectReason::kIdLimit, out);
  // A valid Cancel is not throttled nor stopped by the kill switch (pulling
  // orders is always allowed); a rejected one takes a token.
  auto no = [&](RejectReason reason) { reject(s, c.client_order_id, reason, now_ns, out, Charge::kTakeToken); };
  RejectReason refused = kPasses;
  if (entry_instrument(s, c.instrument_id, refused) == nullptr) return no(refused);
  if (open_order(s.id, c.orig_client_order_id, c.instrument_id) == kNoSlot) return no(RejectReason::kUnknownOrder);
  CancelRecord r{};
  r.app_seq = s.last_app_seq + 1;
  r.client_order_id = c.client_order_id;
  r.orig_client_order_id = c.orig_client_order_id;
  r.session = s.id;
  r.instrument_id = c.instrument_id;
  const std::uint64_t at = journal(RecordType::kCancel, r, now_ns);
  if (at == 0) return refuse_journal_failure(s, c.client_order_id, out);
  out.require_durable(at);
  apply_cancel(r, out);
}

void OrderHandler::on_replace(Session& s, const Replace& rp, std::uint64_t now_ns, OutBuffer& out) {
  if (const DedupeEntry* e = dedupe_.find(s.id, rp.client_order_id)) return resend(s, *e, out);
  if (!admit(s, rp.client_order_id, now_ns, out)) return;
  auto no = [&](RejectReason reason) { reject(s, rp.client_order_id, reason, now_ns, out); };
  RejectReason refused = kPasses;
  Instrument* ins = entry_instrument(s, rp.instrument_id, refused);
  if (ins == nullptr) return no(refused);
  const std::uint32_t slot = open_order(s.id, rp.orig_client_order_id, rp.instrument_id);
  if (slot == kNoSlot) return no(RejectReason::kUnknownOrder);
  const OrderNode& n = pool_[slot];
  RiskRegion* account = risk_.find(n.account);
  const OrderTerms terms{n.account, n.side, rp.price, rp.quantity};
  std::int64_t notional = 0;
  if (const RejectReason r = check_shape(checked(*ins), terms, notional, text_); r != kPasses) return no(r);
  const std::optional<RiskWords> words = settle_risk_words(journaled_risk(n.account), now_ns);
  if (!words) return refuse_journal_failure(s, rp.client_order_id, out);
  const RiskView risk{words->kill_switch, words->credit_limit, account->open_notional()};
  if (const RejectReason r = check_risk(terms, risk, notional - n.price * n.leaves, text_); r != kPasses) return no(r);
  if (const RejectReason r = check_book(checked(*ins), terms, rp.price != n.price, text_); r != kPasses) return no(r);
  ReplaceRecord r{};
  r.app_seq = s.last_app_seq + 1;
  r.client_order_id = rp.client_order_id;
  r.orig_client_order_id = rp.orig_client_order_id;
  r.price = rp.price;
  r.quantity = rp.quantity;
  r.session = s.id;
  r.instrument_id = rp.instrument_id;
  const std::uint64_t at = journal(RecordType::kReplace, r, now_ns);
  if (at == 0) return refuse_journal_failure(s, rp.client_order_id, out);
  out.require_durable(at);
  apply_replace(r, out);
}

void OrderHandler::on_disconnect(std::uint32_t session_id, std::uint64_t now_ns, OutBuffer& out) {
  const auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return;
  Session& s = it->second;
  if (!s.cancel_on_disconnect || s.open_head == kNoSlot) return;
  CancelSessionRecord r{};
  r.next_app_seq = s.last_app_seq + 1;
  r.session = s.id;
  const std::uint64_t at = journal(RecordType::kCancelSession, r, now_ns);
  // A failed journal: the cancels could not be recorded, so they are not
  // made (a restart would bring the orders back); the service stops trading.
  if (at == 0) return;
  out.require_durable(at);
  apply_cancel_session(r, out);
}

}  // namespace qpgate::orders
