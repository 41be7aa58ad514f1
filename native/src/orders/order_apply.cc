// The book side of the OrderHandler (order_handler.h): applying accepted
// inputs — journaled records, live and at replay alike, so a restart
// rebuilds exactly what was answered — and what the books report back
// (BookListener: trades, self-match cancels, filled orders, levels). Apart
// from order_handler.cc, which holds the ack path's checks.
#include "orders/order_handler.h"

namespace qpgate::orders {

namespace {

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
