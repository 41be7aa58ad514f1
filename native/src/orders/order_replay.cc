// The journal's side of the OrderHandler (order_handler.h): replay, which
// rebuilds books, app_seqs, the duplicate table and the risk words from the
// journal's records at open, and replay_messages, the messages those records
// made, rebuilt by a second, private handler. Apart from order_handler.cc,
// which holds the live path.
#include <cstring>
#include <new>
#include <string>

#include "orders/order_handler.h"

namespace qpgate::orders {

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

// long because: one case per journal record type (records.h), each checking
// what its record must find before applying it; clearer whole.
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
        error = std::string{"cancel of an order that is not open: "} + text_.c_str();
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
        error = std::string{"replace of an order that is not open or to a price outside the band: "} + text_.c_str();
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


bool OrderHandler::replay_messages(const HandlerConfig& config, std::uint64_t end,
                                   const std::function<bool(const OutBuffer&, std::uint64_t)>& visit,
                                   std::string& error) {
  // The key decides where an id is kept, never what is answered; a random
  // one, as open() takes, so that ids picked to collide cannot slow this replay.
  SipKey key;
  if (!dedupe_key_of(config, key, error)) return false;
  // Its books, pool and duplicate table are allocated here, on the caller's
  // thread (the rebuild worker's): running out of memory fails this rebuild, not the engine.
  try {
    OrderHandler h(config, key);
    return Journal::replay_written(
        config.journal.path, end,
        [&h, &visit](std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t at, std::string& why) {
          if (!h.replay(type, payload, why)) return false;
          if (visit(h.replay_out_, at)) return true;
          why = "stopped by its reader";
          return false;
        },
        error);
  } catch (const std::bad_alloc&) {
    error = "out of memory for the replay's handler";
    return false;
  }
}

}  // namespace qpgate::orders
