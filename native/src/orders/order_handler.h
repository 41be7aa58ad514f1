// The built-in order handler: the whole ack path on the engine's polling
// thread, with no wait on another thread.
//
//   on_message: decode -> duplicate check -> throttle -> validate (session,
//   instrument, account entitlement, price, quantity) -> risk (kill switch,
//   credit limit vs open notional) -> price collar -> self-match check ->
//   journal -> Ack -> book -> fills (both sides), unsolicited cancels,
//   market-data events.
//
// Everything it produces goes into the caller's OutBuffer, to be sent once
// the journal is durable up to OutBuffer::durable_position(): call poll()
// every duty cycle (group commit) and send when durable_position() has
// passed it. Every reject is counted by reason, every decode error by kind.
//
// The duplicate check comes first, before the throttle and risk checks: a
// resent request gets its original answer even when the session is now over
// its rate or the account has been killed since. It costs one keyed-hash
// lookup and records nothing.
//
// Nothing a client sends makes the gateway journal or remember anything
// beyond its order rate: NewOrder and Replace take a throttle token before
// any validation, and a Cancel or an undecodable message takes one before
// its reject is journaled (a valid Cancel takes none: pulling orders is
// always allowed). Without a token the answer is a THROTTLED Reject that is
// not sequenced, not journaled and not remembered (app_seq 0: nothing
// happened, the id may be used again). Each session may hold at most
// `max_client_order_ids` ids in the duplicate table, the gateway
// `client_order_id_capacity`; past either, ID_LIMIT, not sequenced either.
// A journal that has failed is never written again: every request is
// answered JOURNAL_FAILURE, not sequenced, at once (nothing waits for a
// durability that cannot come).
//
// Remote-owned risk words (credit limit, kill switch) change under it, by a
// client's RDMA atomic, with nothing to tell it. So an order's risk check
// first loads the account's words once, journals them (kRiskWords) if they
// differ from the last record, and checks that snapshot, never a newer load:
// the order's own record (Ack or Reject) comes after the risk record in the
// journal, so its answer, held until its record is durable, is never sent on
// a value a restart could forget. journal_risk_words() does the same for
// every account once per duty cycle, so a change is recorded even when no
// order follows it. Replay stores the journaled values back into the words.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "orders/codec.h"
#include "orders/collar.h"
#include "orders/config_limits.def"
#include "orders/dedupe.h"
#include "orders/handler_counters.h"
#include "orders/journal.h"
#include "orders/order_book.h"
#include "orders/order_checks.h"
#include "orders/order_pool.h"
#include "orders/out_buffer.h"
#include "orders/records.h"
#include "orders/risk_region.h"
#include "orders/throttle.h"

namespace qpgate::orders {

struct InstrumentConfig {
  BookConfig book;                      // id, tick, price band, self-match policy
  CollarConfig collar;
  std::int64_t max_quantity = 1'000'000;
};

struct AccountConfig {
  std::uint64_t account = 0;
  std::uint64_t credit_limit = 0;       // initial value of the remote-owned word
};

struct SessionConfig {
  std::uint32_t session = 0;
  std::vector<std::uint64_t> accounts;  // the accounts it may trade
  ThrottleConfig throttle;
  bool cancel_on_disconnect = true;
};

struct HandlerConfig {
  std::vector<InstrumentConfig> instruments;
  std::vector<AccountConfig> accounts;
  std::vector<SessionConfig> sessions;
  JournalConfig journal;
  // order_capacity (pooled order nodes), client_order_id_capacity (ids the
  // duplicate table holds, all sessions), max_client_order_ids (one session's
  // share of them): config_limits.def.
#define QPGATE_X(js, member, lo, hi, def, help) std::uint32_t member = def;
  QPGATE_ORDERS_HANDLER_LIMITS(QPGATE_X)
#undef QPGATE_X
  std::optional<SipKey> dedupe_key;                       // the duplicate table's hash key; unset = random
  // Called at open() after each replayed record with the messages it
  // produced again (Reject texts are empty: they are not journaled), so the
  // session service can rebuild what a reconnecting client may ask to have
  // resent. Feed events of the replay are in it too and must not be published.
  std::function<void(const OutBuffer&)> on_replayed;
};

class OrderHandler final : private BookListener {
 public:
  // Builds the books and replays the journal. nullptr + `error` if the
  // journal is corrupt or does not match the configuration (or no random
  // hash key could be had).
  static std::unique_ptr<OrderHandler> open(const HandlerConfig& config, std::string& error);
  ~OrderHandler() override;

  // Replays the journal's records up to `end` (the live journal's
  // written_position()) through a handler of its own built from `config`,
  // handing each record's messages to `visit` as on_replayed gets them at
  // open (Reject texts empty; feed events must not be published), with the
  // journal offset the record starts at. The
  // session service rebuilds from it what a session whose resend store was
  // freed may ask to have resent (resend_rebuilder.h). False + `error` if the
  // file cannot be read back, or when `visit` returns false (it stops there).
  // Any thread: it shares nothing with the live handler but the file.
  static bool replay_messages(const HandlerConfig& config, std::uint64_t end,
                              const std::function<bool(const OutBuffer&, std::uint64_t record_at)>& visit,
                              std::string& error);

  // One SEND received from `session`.
  void on_message(std::uint32_t session, std::span<const std::uint8_t> bytes, std::uint64_t now_ns, OutBuffer& out);
  // The session's RC connection is gone: cancel its open orders if configured.
  void on_disconnect(std::uint32_t session, std::uint64_t now_ns, OutBuffer& out);
  // Adds or changes a session (control plane, between messages).
  void configure_session(const SessionConfig& config);

  // Group commit; call once per duty cycle. True if it made records durable.
  // Risk words whose record became durable are stored in the accounts'
  // durable_* local words (risk_region.h).
  bool poll(std::uint64_t now_ns) {
    const bool advanced = journal_->poll(now_ns);
    publish_durable_risk_words();
    return advanced;
  }
  bool flush() {
    const bool ok = journal_->sync();
    publish_durable_risk_words();
    return ok;
  }
  // The journal file then holds every record appended (Journal::write_out).
  bool write_out() { return journal_->write_out(); }

  // The remote-owned words of an account as last journaled (or, with no
  // record yet, as configured).
  struct RiskWords {
    std::uint64_t credit_limit = 0;
    std::uint64_t kill_switch = 0;
    bool operator==(const RiskWords&) const = default;
  };
  // Journals every account whose remote-owned words changed since their last
  // record; call once per duty cycle (two loads per account). Returns the
  // records appended (0 once the journal has failed).
  std::size_t journal_risk_words(std::uint64_t now_ns);
  // nullptr for an account that is not configured.
  const RiskWords* journaled_risk_words(std::uint64_t account) const noexcept;
  std::uint64_t durable_position() const noexcept { return journal_->durable_position(); }
  // Housekeeping for an idle duty cycle: the duplicate table's next pages made
  // resident, so the inserts of the orders to come take no page fault (dedupe.h).
  void populate_ahead() noexcept { (void)dedupe_.populate_ahead(); }

  const HandlerCounters& counters() const noexcept { return counters_; }
  RiskRegistry& risk() noexcept { return risk_; }
  const OrderBook* book(std::uint32_t instrument_id) const noexcept;
  std::uint64_t last_app_seq(std::uint32_t session) const noexcept;
  const Journal& journal() const noexcept { return *journal_; }
  const DedupeTable& dedupe() const noexcept { return dedupe_; }
  const OrderPool& pool() const noexcept { return pool_; }

 private:
  struct Instrument {
    Instrument(const InstrumentConfig& c, OrderPool& pool) : config(c), book(c.book, pool), collar(c.collar, c.book.tick_size) {}
    InstrumentConfig config;
    OrderBook book;
    PriceCollar collar;
  };
  struct Session {
    std::uint32_t id = 0;
    std::uint64_t last_app_seq = 0;  // of the last sequenced message sent
    std::size_t ids_held = 0;        // its entries in the duplicate table
    TokenBucket throttle;
    bool configured = false;
    bool cancel_on_disconnect = true;
    std::vector<std::uint64_t> accounts;
    std::uint32_t open_head = kNoSlot;  // its open orders, oldest first
    std::uint32_t open_tail = kNoSlot;
  };

  OrderHandler(const HandlerConfig& config, const SipKey& dedupe_key);
  // The configured key, else a random one (false + `error` if getrandom failed).
  static bool dedupe_key_of(const HandlerConfig& config, SipKey& key, std::string& error);

  Session& session(std::uint32_t id);
  Instrument* instrument(std::uint32_t id) noexcept;
  // The instrument of an order entry request, or nullptr when the session is
  // not configured for order entry or the instrument is not traded here
  // (`refused` says which, text_ why).
  Instrument* entry_instrument(const Session& s, std::uint32_t instrument_id, RejectReason& refused);
  static CheckedInstrument checked(const Instrument& ins) noexcept;
  bool entitled(const Session& s, std::uint64_t account) const noexcept;
  // The pool slot of the session's open order `client_order_id`, or kNoSlot
  // with the reason in text_.
  std::uint32_t open_order(std::uint32_t session, std::uint64_t client_order_id, std::uint32_t instrument_id);

  void on_hello(Session& s, const Hello& hello, OutBuffer& out);
  void on_new_order(Session& s, const NewOrder& order, std::uint64_t now_ns, OutBuffer& out);
  void on_cancel(Session& s, const Cancel& cancel, std::uint64_t now_ns, OutBuffer& out);
  void on_replace(Session& s, const Replace& replace, std::uint64_t now_ns, OutBuffer& out);
  // A sequenced, journaled reject (remembered for its id). `charge`: it
  // takes a throttle token first (the request did not take one yet).
  enum class Charge : std::uint8_t { kAlreadyTaken, kTakeToken };
  void reject(Session& s, std::uint64_t client_order_id, RejectReason reason, std::uint64_t now_ns, OutBuffer& out,
              Charge charge = Charge::kAlreadyTaken);
  // An answer that is not sequenced, journaled or remembered: nothing happened (text_ says why).
  void refuse(Session& s, std::uint64_t client_order_id, RejectReason reason, OutBuffer& out);
  // refuse() with JOURNAL_FAILURE and the journal's own reason.
  void refuse_journal_failure(Session& s, std::uint64_t client_order_id, OutBuffer& out);
  // A NewOrder's or Replace's first step, before any validation: a throttle
  // token and room for its id. False once it has been refused.
  bool admit(Session& s, std::uint64_t client_order_id, std::uint64_t now_ns, OutBuffer& out);
  // True if the session and the gateway may remember one more id (else text_ says which is full).
  bool room_for_id(const Session& s);
  // The duplicate-table entry of a new id (room_for_id was checked, or replay did).
  DedupeEntry& remember(Session& s, std::uint64_t client_order_id);
  void resend(Session& s, const DedupeEntry& entry, OutBuffer& out);
  template <typename Record>
  std::uint64_t journal(RecordType type, const Record& record, std::uint64_t now_ns);

  struct JournaledRisk {
    RiskRegion* region = nullptr;
    RiskWords words;  // what the journal holds (or the configuration, before any record)
    std::uint64_t durable_at = 0;  // the end of its last record while not yet durable, else 0
  };
  // Stores in the accounts' durable_* words the values whose record is now durable.
  void publish_durable_risk_words() noexcept;
  // Loads the account's remote-owned words once, journals them if they
  // changed, and returns that snapshot for the order checks to use. nullopt:
  // the journal failed.
  std::optional<RiskWords> settle_risk_words(JournaledRisk& account, std::uint64_t now_ns);
  JournaledRisk& journaled_risk(std::uint64_t account) { return journaled_risk_.at(account); }

  // After the checks and the journal, live and in replay alike.
  void apply_new_order(const NewOrderRecord& r, OutBuffer& out);
  void apply_cancel(const CancelRecord& r, OutBuffer& out);
  void apply_replace(const ReplaceRecord& r, OutBuffer& out);
  void apply_reject(const RejectRecord& r, std::string_view text, OutBuffer& out);
  void apply_cancel_session(const CancelSessionRecord& r, OutBuffer& out);
  void replay_risk_words(const RiskWordsRecord& r);
  bool replay(std::uint16_t type, std::span<const std::uint8_t> payload, std::string& error);

  // An order that left the book path without resting: cancel its remainder, release it.
  void finish(std::uint32_t slot, const MatchOutcome& outcome, bool linked);
  void cancel_unsolicited(const OrderNode& n, std::int64_t quantity, CancelReason reason);
  void link_open(std::uint32_t slot);
  void unlink_open(std::uint32_t slot);

  // BookListener
  void on_trade(const OrderNode& aggressor, const OrderNode& resting, std::int64_t price, std::int64_t quantity) override;
  void on_self_match_cancel(const OrderNode& resting, std::int64_t cancelled) override;
  void on_resting_done(const OrderNode& resting) override;
  void on_level(const LevelChange& change) override;

  // Formats the text of the next reject into text_.
  __attribute__((format(printf, 2, 3))) void say(const char* format, ...);

  OrderPool pool_;
  std::vector<std::unique_ptr<Instrument>> instruments_;
  std::unordered_map<std::uint32_t, Instrument*> by_id_;
  std::unordered_map<std::uint32_t, Session> sessions_;
  RiskRegistry risk_;
  std::unordered_map<std::uint64_t, JournaledRisk> journaled_risk_;  // by account, one per region
  std::size_t risk_not_durable_ = 0;  // accounts whose durable_at is set
  DedupeTable dedupe_;
  std::size_t max_ids_per_session_;
  std::unique_ptr<Journal> journal_;
  HandlerCounters counters_;
  std::uint64_t next_order_id_ = 0;   // last given
  std::uint64_t next_trade_id_ = 0;
  OutBuffer* out_ = nullptr;          // during one input: where callbacks write
  Instrument* current_ = nullptr;
  OutBuffer replay_out_;
  RejectText text_;
};

}  // namespace qpgate::orders
