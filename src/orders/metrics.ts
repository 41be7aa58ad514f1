// Order-entry metrics for /metrics, read from the native service's counters
// when Prometheus scrapes (never per order): requests, acks, rejects by
// reason, fills, decode errors, journal records and syncs, back-pressure
// episodes, the sessions by role and state, and the order events handed to
// the TS order handlers (per handler: events, errors). The order → ack latency
// histogram (qpgate_order_ack_latency_seconds) is the `order_ack` latency
// source, exported by the LatencyRegistry like tick_publish.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { OrderService } from './service.js';
import type { NativeOrderStats } from './native.js';
import type { AttachedOrderHandler } from './handler.js';

type Numeric = (s: NativeOrderStats) => number;
const field = (name: string): Numeric => (s) => Number(s[name] ?? 0);

const COUNTERS: ReadonlyArray<[name: string, help: string, read: Numeric]> = [
  ['qpgate_order_messages_received_total', 'Messages received on trading sessions (Hello, NewOrder, Cancel, Replace, and garbage).', field('received')],
  ['qpgate_order_acks_total', 'NewOrders acknowledged (Ack sent after the journal had them).', field('acks')],
  ['qpgate_order_fills_total', 'Fills sent (one per side of each trade).', field('fills')],
  ['qpgate_order_cancel_acks_total', 'CancelAcks sent for Cancel requests.', field('cancelAcks')],
  ['qpgate_order_replace_acks_total', 'ReplaceAcks sent.', field('replaceAcks')],
  ['qpgate_order_unsolicited_cancels_total', 'Orders cancelled by the gateway (IOC remainder, self-match, cancel-on-disconnect).', field('unsolicitedCancels')],
  ['qpgate_order_trades_total', 'Trades matched by the built-in books.', field('trades')],
  ['qpgate_order_resent_messages_total', 'Sequenced messages resent after a Hello or a resent request.', field('resends')],
  ['qpgate_order_resend_gaps_total', 'Messages a Hello asked for that the gateway no longer keeps (older than orders.sessions.resendCapacity of its session).', field('resendGaps')],
  ['qpgate_order_resend_rebuilds_total', "Hellos of a closed (or restarted) session whose missed messages were rebuilt from the journal (a replay on the rebuild worker thread).", field('resendRebuilds')],
  ['qpgate_order_resend_rebuild_failures_total', 'Rebuilds that could not read the journal back (what they missed counts as resend gaps).', field('resendRebuildFailures')],
  ['qpgate_order_resend_rebuild_replays_total', 'Journal replays the rebuilds took: one serves every rebuild queued when it starts (after a restart, the sessions that reconnect together).', field('resendRebuildReplays')],
  ['qpgate_order_resend_rebuild_seconds_total', 'Time the journal replays of the rebuilds took on the rebuild worker thread.', (s) => Number(s['resendRebuildNs'] ?? 0) / 1e9],
  ['qpgate_order_decode_errors_total', 'Messages that were not a valid OrderMessage (answered by a MALFORMED Reject or the session closed).', field('decodeErrors')],
  ['qpgate_order_journal_records_total', 'Records appended to the order journal.', field('journalRecords')],
  ['qpgate_order_journal_syncs_total', 'fdatasync calls of the order journal.', field('journalSyncs')],
  ['qpgate_order_risk_word_records_total', "Journal records of an account's remote-owned risk words (credit limit, kill switch) changed by a risk session's atomics.", field('riskWordRecords')],
  ['qpgate_order_back_pressure_events_total', 'Times receives were held back (clients got RNR NAKs) because answers were waiting.', field('backPressureEvents')],
  ['qpgate_order_session_disconnects_total', "Trading and risk sessions whose QP left RTS.", field('disconnects')],
  ['qpgate_order_events_total', 'Order events (accepted, replaced, filled, cancelled) handed from the engine to the TS order handlers.', field('orderEvents')],
];

const GAUGES: ReadonlyArray<[name: string, help: string, read: Numeric]> = [
  ['qpgate_order_journal_durable_bytes', 'Journal bytes known to be written (and fdatasync-ed under fsync interval/every): answers are released up to here.', field('durablePosition')],
  ['qpgate_order_events_waiting', 'Order events held in the engine for the journal or for the TS handlers to catch up (they count towards back-pressure).', field('orderEventsWaiting')],
  ['qpgate_order_pending_messages', 'Answers waiting for the journal or a send slot (above orders.sessions.backPressureMessages, receives are held).', field('pendingMessages')],
  ['qpgate_order_resend_bytes', "Memory of the connected sessions' resend stores (a closed session holds none).", field('resendBytes')],
];

/** Adds the order-entry families to `registry`; `service` may be closed later (the families then read 0). */
export function orderMetrics(service: OrderService, handlers: () => readonly AttachedOrderHandler[] = () => []): (registry: Registry) => void {
  return (registry) => {
    const stats = (): NativeOrderStats | undefined => (service.running ? service.stats() : undefined);
    // One family per native counter, refilled from stats() on every scrape.
    const family = (name: string, help: string, labelNames: string[], fill: (s: NativeOrderStats, inc: (labels: Record<string, string>, v: number) => void) => void) =>
      new Counter({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          this.reset();
          const s = stats();
          if (s) fill(s, (labels, v) => this.inc(labels, v));
        },
      });
    for (const [name, help, read] of COUNTERS) family(name, help, [], (s, inc) => inc({}, read(s)));
    family(
      'qpgate_order_rejects_total',
      'Requests rejected, by reason (the proto RejectReason without its prefix: THROTTLED, PRICE_COLLAR, KILL_SWITCH...).',
      ['reason'],
      (s, inc) => {
        for (const [reason, n] of Object.entries(s.rejectsByReason ?? {})) inc({ reason }, Number(n));
      },
    );
    new Gauge({
      name: 'qpgate_order_sessions',
      help: 'Order-entry sessions by role (trading, risk) and QP state.',
      labelNames: ['role', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        const n = new Map<string, number>();
        for (const s of service.running ? service.sessions() : []) {
          const k = `${s.role}\u0000${s.disconnected ? 'ERR' : s.state}`;
          n.set(k, (n.get(k) ?? 0) + 1);
        }
        for (const [k, v] of n) {
          const [role, state] = k.split('\u0000') as [string, string];
          this.set({ role, state }, v);
        }
      },
    });
    family('qpgate_order_handler_events_total', 'Order events each TS order handler was given.', ['handler'], (_s, inc) => {
      for (const h of handlers()) inc({ handler: h.name }, h.events);
    });
    family('qpgate_order_handler_errors_total', "Order events a TS order handler's onEvent threw on (logged; the gateway goes on).", ['handler'], (_s, inc) => {
      for (const h of handlers()) inc({ handler: h.name }, h.errors);
    });
    for (const [name, help, read] of GAUGES) {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          const s = stats();
          this.set(s ? read(s) : 0);
        },
      });
    }
  };
}
