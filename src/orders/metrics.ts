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
import { ORDER_METRICS } from '../declared/order-counters.js';
import { registerDeclaredFamilies } from '../common/declared-metrics.js';

type Numeric = (s: NativeOrderStats) => number;

// The declared counters' families come from order_counters.def (ORDER_METRICS);
// these are the figures stats() derives or takes from the journal.
const COUNTERS: ReadonlyArray<[name: string, help: string, read: Numeric]> = [
  ['qpgate_order_resend_rebuild_seconds_total', 'Time the journal replays of the rebuilds took on the rebuild worker thread.', (s) => s.resendRebuildNs / 1e9],
  ['qpgate_order_decode_errors_total', 'Messages that were not a valid OrderMessage (answered by a MALFORMED Reject or the session closed).', (s) => s.decodeErrors],
  ['qpgate_order_journal_records_total', 'Records appended to the order journal.', (s) => s.journalRecords],
  ['qpgate_order_journal_syncs_total', 'fdatasync calls of the order journal.', (s) => s.journalSyncs],
];

const GAUGES: ReadonlyArray<[name: string, help: string, read: Numeric]> = [
  ['qpgate_order_journal_durable_bytes', 'Journal bytes known to be written (and fdatasync-ed under fsync interval/every): answers are released up to here.', (s) => s.durablePosition],
  ['qpgate_order_resend_bytes', "Memory of the connected sessions' resend stores (a closed session holds none).", (s) => s.resendBytes],
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
    registerDeclaredFamilies(registry, ORDER_METRICS, [], () => {
      const s = stats();
      return s ? [[{}, s] as const] : [];
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
