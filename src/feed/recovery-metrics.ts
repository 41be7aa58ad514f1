// Prometheus families for the feed's recovery sessions, one series per
// session labelled with its id and name, so a slow or lossy subscriber is
// named on /metrics: its lag and drops come from the SubscriberReports it
// sends over its recovery connection, its requests from the gateway's own
// per-session counters (both declared in native/src/feed/feed_counters.def).
// Refilled from the native counters on every scrape.
import { Counter, type Registry } from 'prom-client';
import { FEED_RECOVERY_REPORT_METRICS, FEED_RECOVERY_SESSION_METRICS } from '../declared/feed-counters.js';
import { registerDeclaredFamilies } from '../common/declared-metrics.js';
import type { NativeRecoverySession } from './native.js';
import type { RecoverySessionProvider } from './recovery-provider.js';

type Labels = { session: string; name: string };

export function recoveryMetrics(provider: RecoverySessionProvider): (registry: Registry) => void {
  return (registry) => {
    const each = (fill: (labels: Labels, n: NativeRecoverySession) => void) => {
      for (const s of provider.counters()) if (s.native) fill({ session: String(s.id), name: s.name }, s.native);
    };
    // Every scrape starts from zero (registerDeclaredFamilies resets): sessions that closed disappear.
    const instances = <T extends object>(values: (n: NativeRecoverySession) => T) => {
      const out: Array<readonly [Labels, T]> = [];
      each((labels, n) => out.push([labels, values(n)]));
      return out;
    };
    registerDeclaredFamilies(registry, FEED_RECOVERY_SESSION_METRICS, ['session', 'name'], () => instances((n) => n));
    registerDeclaredFamilies(registry, FEED_RECOVERY_REPORT_METRICS, ['session', 'name'], () => instances((n) => n.subscriber));
    new Counter({
      name: 'qpgate_feed_recovery_replies_total',
      help: 'Replies to a recovery session by status (ok, range_gone, throttled, not_entitled, unknown_session, invalid_range, malformed, unknown_channel).',
      labelNames: ['session', 'name', 'status'],
      registers: [registry],
      collect() {
        this.reset();
        each((labels, n) => {
          for (const [status, v] of Object.entries(n.byStatus)) this.inc({ ...labels, status }, v);
        });
      },
    });
  };
}
