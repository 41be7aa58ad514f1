// Prometheus families for the feed's recovery sessions, one series per
// session labelled with its id and name, so a slow or lossy subscriber is
// named on /metrics: its lag and drops come from the SubscriberReports it
// sends over its recovery connection, its requests from the gateway's own
// per-session counters. Refilled from the native counters on every scrape.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { NativeRecoverySession } from './native.js';
import type { RecoverySessionProvider } from './recovery-provider.js';

type Labels = { session: string; name: string };
type Read = (n: NativeRecoverySession) => number;

const GAUGES: Array<[string, string, Read]> = [
  ['qpgate_feed_subscriber_lag_messages', 'Messages a recovery-session subscriber has received but its application has not consumed yet (its last report).', (n) => n.subscriber.queued],
];

const COUNTERS: Array<[string, string, Read]> = [
  ['qpgate_feed_subscriber_dropped_messages_total', "Messages a subscriber's slow-consumer policy dropped (its last report).", (n) => n.subscriber.dropped],
  ['qpgate_feed_subscriber_conflated_messages_total', 'Messages a subscriber conflated into a newer one (its last report).', (n) => n.subscriber.conflated],
  ['qpgate_feed_subscriber_gaps_total', 'Holes a subscriber lost on every line (its last report).', (n) => n.subscriber.gaps],
  ['qpgate_feed_subscriber_unrecoverable_messages_total', 'Messages a subscriber lost for good (its last report).', (n) => n.subscriber.unrecoverable],
  ['qpgate_feed_subscriber_other_session_frames_total', 'Frames a subscriber dropped as of a feed session it does not follow: if they keep coming, a second gateway publishes on its groups (its last report).', (n) => n.subscriber.otherSessionFrames],
  ['qpgate_feed_recovery_frames_sent_total', 'Frames sent to a recovery session (retransmissions and snapshots).', (n) => n.framesSent],
  ['qpgate_feed_recovery_bytes_sent_total', 'Reply bytes sent to a recovery session.', (n) => n.bytesSent],
];

export function recoveryMetrics(provider: RecoverySessionProvider): (registry: Registry) => void {
  return (registry) => {
    const each = (fill: (labels: Labels, n: NativeRecoverySession) => void) => {
      for (const s of provider.counters()) if (s.native) fill({ session: String(s.id), name: s.name }, s.native);
    };
    // Every scrape starts from zero: sessions that closed disappear.
    const refill = (m: { reset(): void }, read: Read, put: (labels: Labels, v: number) => void) => {
      m.reset();
      each((labels, n) => put(labels, read(n)));
    };
    for (const [name, help, read] of GAUGES) {
      const g: Gauge<string> = new Gauge({ name, help, labelNames: ['session', 'name'], registers: [registry], collect: () => refill(g, read, (l, v) => g.set(l, v)) });
    }
    for (const [name, help, read] of COUNTERS) {
      const c: Counter<string> = new Counter({ name, help, labelNames: ['session', 'name'], registers: [registry], collect: () => refill(c, read, (l, v) => c.inc(l, v)) });
    }
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
