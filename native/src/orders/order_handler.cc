#include "orders/order_handler.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace qpgate::orders {

namespace {

// price x quantity, or false on overflow / negative.
bool notional_of(std::int64_t price, std::int64_t quantity, std::int64_t& out) {
  return !__builtin_mul_overflow(price, quantity, &out) && out >= 0;
}

// An order's event with the node's fields; callers adjust what differs.
OrderEvent event_of(OrderEventKind kind, const OrderNode& n, std::int64_t quantity, std::uint64_t app_seq) {
  OrderEvent e;
  e.kind = kind;
  e.side = n.side;
  e.time_in_force = n.time_in_force;
  e.session = n.session;
  e.instrument_id = n.instrument_id;
  e.order_id = n.order_id;
  e.client_order_id = n.client_order_id;
  e.orig_client_order_id = n.client_order_id;
  e.account = n.account;
  e.price = n.price;
  e.quantity = quantity;
  e.leaves = n.leaves;
  e.app_seq = app_seq;
  return e;
}

}  // namespace

// ---- construction and replay -------------------------------------------------

OrderHandler::OrderHandler(const HandlerConfig& config, const SipKey& dedupe_key)
    : pool_(config.order_capacity),
      dedupe_(config.client_order_id_capacity, dedupe_key),
      max_ids_per_session_(config.max_client_order_ids_per_session) {
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

namespace {
template <typename Record>
bool read_record(std::span<const std::uint8_t> payload, Record& r, std::string& error) {
  if (payload.size() != sizeof(Record)) {
    error = "payload of " + std::to_string(payload.size()) + " bytes, expected " + std::to_string(sizeof(Record));
    return false;
  }
  std::memcpy(&r, payload.data(), sizeof r);
  return true;
}
}  // namespace

bool OrderHandler::replay(std::uint16_t type, std::span<const std::uint8_t> payload, std::string& error) {
  replay_out_.clear();
  // Replay remembers every id the journal has (the per-session share is a
  // limit on new requests, not on history), but only as many as fit.
  auto room = [&] {
    if (!dedupe_.full()) return true;
    error = "the journal holds more client order ids than orders.clientOrderIdCapacity (" +
            std::to_string(dedupe_.capacity()) + ")";
    return false;
  };
  auto expect_seq = [&](std::uint32_t sid, std::uint64_t app_seq) {
    const std::uint64_t next = session(sid).last_app_seq + 1;
    if (app_seq == next) return true;
    error = "session " + std::to_string(sid) + ": app_seq " + std::to_string(app_seq) +
            " in the journal, replay reached " + std::to_string(next) +
            " (the instruments or self-match policy changed since it was written, or the journal belongs to "
            "another gateway)";
    return false;
  };
  switch (static_cast<RecordType>(type)) {
    case RecordType::kNewOrder: {
      NewOrderRecord r{};
      if (!read_record(payload, r, error) || !expect_seq(r.session, r.app_seq) || !room()) return false;
      if (r.order_id != next_order_id_ + 1) {
        error = "order id " + std::to_string(r.order_id) + " in the journal, replay reached " +
                std::to_string(next_order_id_ + 1);
        return false;
      }
      if (instrument(r.instrument_id) == nullptr || risk_.find(r.account) == nullptr) {
        error = "instrument " + std::to_string(r.instrument_id) + " or account " + std::to_string(r.account) +
                " is not configured";
        return false;
      }
      if (pool_.in_use() == pool_.capacity()) {
        error = "order_capacity is too small for the orders open in the journal";
        return false;
      }
      apply_new_order(r, replay_out_);
      return true;
    }
    case RecordType::kCancel: {
      CancelRecord r{};
      if (!read_record(payload, r, error) || !expect_seq(r.session, r.app_seq) || !room()) return false;
      if (open_order(r.session, r.orig_client_order_id, r.instrument_id) == kNoSlot) {
        error = std::string{"cancel of an order that is not open: "} + text_;
        return false;
      }
      apply_cancel(r, replay_out_);
      return true;
    }
    case RecordType::kReplace: {
      ReplaceRecord r{};
      if (!read_record(payload, r, error) || !expect_seq(r.session, r.app_seq) || !room()) return false;
      Instrument* ins = instrument(r.instrument_id);
      if (open_order(r.session, r.orig_client_order_id, r.instrument_id) == kNoSlot || ins == nullptr ||
          !ins->book.price_in_band(r.price)) {
        error = std::string{"replace of an order that is not open or to a price outside the band: "} + text_;
        return false;
      }
      apply_replace(r, replay_out_);
      return true;
    }
    case RecordType::kReject: {
      RejectRecord r{};
      if (!read_record(payload, r, error) || !expect_seq(r.session, r.app_seq)) return false;
      if (r.client_order_id != 0 && !room()) return false;
      if (r.client_order_id != 0 && dedupe_.find(r.session, r.client_order_id) != nullptr) {
        error = "reject of client_order_id " + std::to_string(r.client_order_id) + " that was already answered";
        return false;
      }
      apply_reject(r, "", replay_out_);
      return true;
    }
    case RecordType::kCancelSession: {
      CancelSessionRecord r{};
      if (!read_record(payload, r, error) || !expect_seq(r.session, r.next_app_seq)) return false;
      apply_cancel_session(r, replay_out_);
      return true;
    }
    case RecordType::kRiskWords: {
      RiskWordsRecord r{};
      if (!read_record(payload, r, error)) return false;
      replay_risk_words(r);
      return true;
    }
  }
  error = "unknown record type " + std::to_string(type);
  return false;
}

void OrderHandler::replay_risk_words(const RiskWordsRecord& r) {
  const auto it = journaled_risk_.find(r.account);
  // An account no longer configured cannot trade: its words have nowhere to
  // go. (Its records stay in the journal and apply again if it comes back.)
  if (it == journaled_risk_.end()) return;
  it->second.region->restore_remote_words(r.credit_limit, r.kill_switch);
  it->second.region->set_durable(r.credit_limit, r.kill_switch);
  it->second.words = RiskWords{r.credit_limit, r.kill_switch};
  counters_.risk_words_restored.add();
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
  std::vsnprintf(text_, sizeof text_, format, args);
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
  counters_.journal_records.add();
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
    std::memcpy(text_, decoded.message, std::min(sizeof text_, sizeof decoded.message));
    text_[sizeof text_ - 1] = '\0';
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
  apply_reject(r, text_, out);
}

void OrderHandler::refuse(Session& s, std::uint64_t client_order_id, RejectReason reason, OutBuffer& out) {
  counters_.rejects[static_cast<std::size_t>(reason)].add();
  out.add(s.id, 0, Reject{0, client_order_id, reason, text_, false});
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
      out.add(s.id, e.app_seq, Reject{e.app_seq, e.client_order_id, e.reason, text_, true});
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
  using ll = long long;
  if (!s.configured) {
    say("session %u is not configured for order entry", s.id);
    return no(RejectReason::kNotEntitled);
  }
  Instrument* ins = instrument(o.instrument_id);
  if (ins == nullptr) {
    say("instrument %u is not traded on this gateway", o.instrument_id);
    return no(RejectReason::kUnknownInstrument);
  }
  RiskRegion* account = risk_.find(o.account);
  if (account == nullptr) {
    say("account %llu is not known to this gateway", static_cast<ull>(o.account));
    return no(RejectReason::kUnknownAccount);
  }
  if (!entitled(s, o.account)) {
    say("session %u may not trade account %llu", s.id, static_cast<ull>(o.account));
    return no(RejectReason::kNotEntitled);
  }
  const BookConfig& bc = ins->book.config();
  if (!ins->book.price_in_band(o.price)) {
    say("price %lld is not a multiple of tick %lld within [%lld, %lld]", static_cast<ll>(o.price),
        static_cast<ll>(bc.tick_size), static_cast<ll>(bc.min_price), static_cast<ll>(bc.max_price));
    return no(RejectReason::kInvalidPrice);
  }
  std::int64_t notional = 0;
  if (o.quantity <= 0 || o.quantity > ins->config.max_quantity || !notional_of(o.price, o.quantity, notional)) {
    say("quantity %lld is not in 1..%lld", static_cast<ll>(o.quantity), static_cast<ll>(ins->config.max_quantity));
    return no(RejectReason::kInvalidQuantity);
  }
  // The checks use the journaled snapshot, not the live words (see the header).
  const std::optional<RiskWords> words = settle_risk_words(journaled_risk(o.account), now_ns);
  if (!words) return refuse_journal_failure(s, o.client_order_id, out);
  if (words->kill_switch != 0) {
    say("account %llu: kill switch is set", static_cast<ull>(o.account));
    return no(RejectReason::kKillSwitch);
  }
  const std::uint64_t open = account->open_notional();
  const std::uint64_t limit = words->credit_limit;
  if (open + static_cast<std::uint64_t>(notional) > limit || open + static_cast<std::uint64_t>(notional) < open) {
    say("account %llu: open notional %llu + order notional %lld exceeds credit limit %llu", static_cast<ull>(o.account),
        static_cast<ull>(open), static_cast<ll>(notional), static_cast<ull>(limit));
    return no(RejectReason::kCreditLimit);
  }
  const bool buy = o.side == Side::kBuy;
  if (!ins->collar.allows(buy, o.price)) {
    const CollarBounds b = ins->collar.bounds();
    say("%s price %lld is %s the collar bound %lld (reference %lld)", buy ? "buy" : "sell", static_cast<ll>(o.price),
        buy ? "above" : "below", static_cast<ll>(buy ? b.upper : b.lower), static_cast<ll>(ins->collar.reference()));
    return no(RejectReason::kPriceCollar);
  }
  if (bc.self_match == SelfMatchPolicy::kCancelNewest && ins->book.would_self_match_first(o.side, o.price, o.account)) {
    say("would trade first against account %llu's own resting order", static_cast<ull>(o.account));
    return no(RejectReason::kSelfMatch);
  }
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
  if (!s.configured) {
    say("session %u is not configured for order entry", s.id);
    return no(RejectReason::kNotEntitled);
  }
  if (instrument(c.instrument_id) == nullptr) {
    say("instrument %u is not traded on this gateway", c.instrument_id);
    return no(RejectReason::kUnknownInstrument);
  }
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
  using ull = unsigned long long;
  using ll = long long;
  if (!s.configured) {
    say("session %u is not configured for order entry", s.id);
    return no(RejectReason::kNotEntitled);
  }
  Instrument* ins = instrument(rp.instrument_id);
  if (ins == nullptr) {
    say("instrument %u is not traded on this gateway", rp.instrument_id);
    return no(RejectReason::kUnknownInstrument);
  }
  const std::uint32_t slot = open_order(s.id, rp.orig_client_order_id, rp.instrument_id);
  if (slot == kNoSlot) return no(RejectReason::kUnknownOrder);
  const OrderNode& n = pool_[slot];
  RiskRegion* account = risk_.find(n.account);
  const BookConfig& bc = ins->book.config();
  if (!ins->book.price_in_band(rp.price)) {
    say("price %lld is not a multiple of tick %lld within [%lld, %lld]", static_cast<ll>(rp.price),
        static_cast<ll>(bc.tick_size), static_cast<ll>(bc.min_price), static_cast<ll>(bc.max_price));
    return no(RejectReason::kInvalidPrice);
  }
  std::int64_t notional = 0;
  if (rp.quantity <= 0 || rp.quantity > ins->config.max_quantity || !notional_of(rp.price, rp.quantity, notional)) {
    say("quantity %lld is not in 1..%lld", static_cast<ll>(rp.quantity), static_cast<ll>(ins->config.max_quantity));
    return no(RejectReason::kInvalidQuantity);
  }
  const std::optional<RiskWords> words = settle_risk_words(journaled_risk(n.account), now_ns);
  if (!words) return refuse_journal_failure(s, rp.client_order_id, out);
  if (words->kill_switch != 0) {
    say("account %llu: kill switch is set", static_cast<ull>(n.account));
    return no(RejectReason::kKillSwitch);
  }
  const std::int64_t delta = notional - n.price * n.leaves;
  const std::uint64_t open = account->open_notional();
  if (delta > 0 && open + static_cast<std::uint64_t>(delta) > words->credit_limit) {
    say("account %llu: open notional %llu + %lld more exceeds credit limit %llu", static_cast<ull>(n.account),
        static_cast<ull>(open), static_cast<ll>(delta), static_cast<ull>(words->credit_limit));
    return no(RejectReason::kCreditLimit);
  }
  const bool buy = n.side == Side::kBuy;
  if (rp.price != n.price && !ins->collar.allows(buy, rp.price)) {
    const CollarBounds b = ins->collar.bounds();
    say("%s price %lld is %s the collar bound %lld (reference %lld)", buy ? "buy" : "sell", static_cast<ll>(rp.price),
        buy ? "above" : "below", static_cast<ll>(buy ? b.upper : b.lower), static_cast<ll>(ins->collar.reference()));
    return no(RejectReason::kPriceCollar);
  }
  if (rp.price != n.price && bc.self_match == SelfMatchPolicy::kCancelNewest &&
      ins->book.would_self_match_first(n.side, rp.price, n.account)) {
    say("would trade first against account %llu's own resting order", static_cast<ull>(n.account));
    return no(RejectReason::kSelfMatch);
  }
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

// ---- applying accepted inputs (live and replay) --------------------------------

void OrderHandler::apply_new_order(const NewOrderRecord& r, OutBuffer& out) {
  out_ = &out;
  Session& s = session(r.session);
  current_ = instrument(r.instrument_id);
  const std::uint64_t seq = ++s.last_app_seq;
  const std::uint64_t order_id = ++next_order_id_;
  const std::uint32_t slot = pool_.allocate();
  OrderNode& n = pool_[slot];
  n.order_id = order_id;
  n.client_order_id = r.client_order_id;
  n.account = r.account;
  n.price = r.price;
  n.leaves = r.quantity;
  n.session = r.session;
  n.instrument_id = r.instrument_id;
  n.side = static_cast<Side>(r.side);
  n.time_in_force = static_cast<TimeInForce>(r.time_in_force);

  DedupeEntry& e = remember(s, r.client_order_id);
  e.kind = ResponseKind::kAck;
  e.app_seq = seq;
  e.order_id = order_id;
  e.slot = slot;
  out.add(s.id, seq, Ack{seq, r.client_order_id, order_id, false});
  out.add_order_event(event_of(OrderEventKind::kAccepted, n, r.quantity, seq));
  counters_.acks.add();
  risk_.find(r.account)->local_update(0, r.price * r.quantity, 1, 0);

  const MatchOutcome m = current_->book.add(slot, *this);
  if (m.rested) {
    link_open(slot);
  } else {
    finish(slot, m, false);
  }
  out_ = nullptr;
}

void OrderHandler::apply_cancel(const CancelRecord& r, OutBuffer& out) {
  out_ = &out;
  Session& s = session(r.session);
  current_ = instrument(r.instrument_id);
  const std::uint32_t slot = open_order(r.session, r.orig_client_order_id, r.instrument_id);
  const std::uint64_t seq = ++s.last_app_seq;
  const std::int64_t cancelled = current_->book.cancel(slot, *this);
  const OrderNode& n = pool_[slot];
  DedupeEntry& e = remember(s, r.client_order_id);
  e.kind = ResponseKind::kCancelAck;
  e.app_seq = seq;
  e.order_id = n.order_id;
  e.orig_client_order_id = r.orig_client_order_id;
  e.quantity = cancelled;
  out.add(s.id, seq,
          CancelAck{seq, r.client_order_id, r.orig_client_order_id, n.order_id, CancelReason::kRequested, cancelled, false});
  OrderEvent cancel_event = event_of(OrderEventKind::kCancelled, n, cancelled, seq);
  cancel_event.client_order_id = r.client_order_id;
  cancel_event.cancel_reason = CancelReason::kRequested;
  cancel_event.leaves = 0;
  out.add_order_event(cancel_event);
  counters_.cancel_acks.add();
  risk_.find(n.account)->local_update(0, -(n.price * cancelled), -1, 0);
  unlink_open(slot);
  pool_.release(slot);
  out_ = nullptr;
}

void OrderHandler::apply_replace(const ReplaceRecord& r, OutBuffer& out) {
  out_ = &out;
  Session& s = session(r.session);
  current_ = instrument(r.instrument_id);
  const std::uint32_t slot = open_order(r.session, r.orig_client_order_id, r.instrument_id);
  OrderNode& n = pool_[slot];
  const std::uint64_t seq = ++s.last_app_seq;
  const bool keeps = r.price == n.price && r.quantity <= n.leaves;
  DedupeEntry& e = remember(s, r.client_order_id);
  e.kind = ResponseKind::kReplaceAck;
  e.app_seq = seq;
  e.order_id = n.order_id;
  e.orig_client_order_id = r.orig_client_order_id;
  e.price = r.price;
  e.quantity = r.quantity;
  e.priority_kept = keeps;
  out.add(s.id, seq,
          ReplaceAck{seq, r.client_order_id, r.orig_client_order_id, n.order_id, r.price, r.quantity, keeps, false});
  OrderEvent replace_event = event_of(OrderEventKind::kReplaced, n, r.quantity, seq);
  replace_event.client_order_id = r.client_order_id;
  replace_event.price = r.price;
  replace_event.leaves = r.quantity;
  out.add_order_event(replace_event);
  counters_.replace_acks.add();
  risk_.find(n.account)->local_update(0, r.price * r.quantity - n.price * n.leaves, 0, 0);
  bool priority_kept = false;
  const MatchOutcome m = current_->book.replace(slot, r.price, r.quantity, priority_kept, *this);
  if (!m.rested) finish(slot, m, true);
  out_ = nullptr;
}

void OrderHandler::apply_cancel_session(const CancelSessionRecord& r, OutBuffer& out) {
  out_ = &out;
  Session& s = session(r.session);
  while (s.open_head != kNoSlot) {
    const std::uint32_t slot = s.open_head;
    const OrderNode& n = pool_[slot];
    current_ = instrument(n.instrument_id);
    const std::int64_t cancelled = current_->book.cancel(slot, *this);
    cancel_unsolicited(n, cancelled, CancelReason::kDisconnect);
    risk_.find(n.account)->local_update(0, -(n.price * cancelled), -1, 0);
    unlink_open(slot);
    pool_.release(slot);
  }
  out_ = nullptr;
}

void OrderHandler::cancel_unsolicited(const OrderNode& n, std::int64_t quantity, CancelReason reason) {
  Session& s = session(n.session);
  const std::uint64_t seq = ++s.last_app_seq;
  out_->add(s.id, seq, CancelAck{seq, n.client_order_id, n.client_order_id, n.order_id, reason, quantity, false});
  OrderEvent e = event_of(OrderEventKind::kCancelled, n, quantity, seq);
  e.cancel_reason = reason;
  e.leaves = 0;
  out_->add_order_event(e);
  counters_.unsolicited_cancels.add();
}

void OrderHandler::finish(std::uint32_t slot, const MatchOutcome& m, bool linked) {
  const OrderNode& n = pool_[slot];
  RiskRegion* account = risk_.find(n.account);
  if (m.unmatched > 0) {
    cancel_unsolicited(n, m.unmatched,
                       m.self_match_cancelled ? CancelReason::kSelfMatch : CancelReason::kIocRemainder);
    account->local_update(0, -(n.price * m.unmatched), -1, 0);
  } else {
    account->local_update(0, 0, -1, 0);
  }
  if (linked) unlink_open(slot);
  pool_.release(slot);
}

void OrderHandler::link_open(std::uint32_t slot) {
  OrderNode& n = pool_[slot];
  Session& s = session(n.session);
  n.session_prev = s.open_tail;
  n.session_next = kNoSlot;
  if (s.open_tail != kNoSlot) {
    pool_[s.open_tail].session_next = slot;
  } else {
    s.open_head = slot;
  }
  s.open_tail = slot;
}

void OrderHandler::unlink_open(std::uint32_t slot) {
  OrderNode& n = pool_[slot];
  Session& s = session(n.session);
  if (n.session_prev != kNoSlot) {
    pool_[n.session_prev].session_next = n.session_next;
  } else {
    s.open_head = n.session_next;
  }
  if (n.session_next != kNoSlot) {
    pool_[n.session_next].session_prev = n.session_prev;
  } else {
    s.open_tail = n.session_prev;
  }
  n.session_prev = n.session_next = kNoSlot;
}

// ---- BookListener ----------------------------------------------------------------

void OrderHandler::on_trade(const OrderNode& aggressor, const OrderNode& resting, std::int64_t price,
                            std::int64_t quantity) {
  const std::uint64_t trade_id = ++next_trade_id_;
  counters_.trades.add();
  for (const OrderNode* n : {&aggressor, &resting}) {
    Session& s = session(n->session);
    const std::uint64_t seq = ++s.last_app_seq;
    const Liquidity liquidity = n == &aggressor ? Liquidity::kTaker : Liquidity::kMaker;
    out_->add(s.id, seq,
              Fill{seq, n->client_order_id, n->order_id, n->instrument_id, n->side, price, quantity, n->leaves, trade_id,
                   liquidity});
    OrderEvent e = event_of(OrderEventKind::kFilled, *n, quantity, seq);
    e.price = price;
    e.trade_id = trade_id;
    out_->add_order_event(e);
    counters_.fills.add();
    const std::int64_t signed_qty = n->side == Side::kBuy ? quantity : -quantity;
    risk_.find(n->account)->local_update(signed_qty, -(n->price * quantity), 0,
                                         static_cast<std::uint64_t>(price * quantity));
  }
  out_->add_trade(TradeEvent{aggressor.instrument_id, trade_id, price, quantity, aggressor.side});
  current_->collar.on_trade(price);
}

void OrderHandler::on_self_match_cancel(const OrderNode& resting, std::int64_t cancelled) {
  cancel_unsolicited(resting, cancelled, CancelReason::kSelfMatch);
  risk_.find(resting.account)->local_update(0, -(resting.price * cancelled), -1, 0);
  unlink_open(static_cast<std::uint32_t>(&resting - &pool_[0]));
}

void OrderHandler::on_resting_done(const OrderNode& resting) {
  risk_.find(resting.account)->local_update(0, 0, -1, 0);
  unlink_open(static_cast<std::uint32_t>(&resting - &pool_[0]));
}

void OrderHandler::on_level(const LevelChange& change) { out_->add_level(change); }

}  // namespace qpgate::orders
