// Per-feed metric families, read from the publishers' native counters on
// scrape (never per message). Series carry `feed` (and `channel`) labels only
// while the feed exists: every family is reset and refilled on each scrape.
import { Counter, Gauge, type Registry } from 'prom-client';
import { FEED_CHANNEL_METRICS, FEED_PUBLISHER_METRICS } from '../../declared/feed-counters.js';
import { registerDeclaredFamilies } from '../../common/declared-metrics.js';
import type { FeedRegistry } from '../feed-registry.js';
import type { FeedServiceStats } from '../../feed/service.js';

type Snapshot = Array<{ feed: string; stats: FeedServiceStats }>;
type Kind = 'counter' | 'gauge';
type Emit = (labels: Record<string, string>, value: number) => void;

// A family whose series are all set from native totals on each scrape.
function family(registry: Registry, kind: Kind, name: string, help: string, labelNames: string[], fill: (emit: Emit) => void): void {
  const config = { name, help, labelNames, registers: [registry] };
  if (kind === 'counter') {
    new Counter({ ...config, collect() { this.reset(); fill((l, v) => this.inc(l, v)); } });
  } else {
    new Gauge({ ...config, collect() { this.reset(); fill((l, v) => this.set(l, v)); } });
  }
}

export function exportFeedMetrics(registry: Registry, feeds: FeedRegistry): void {
  // One stats() per feed per scrape, shared by the families below: qpgate_feeds
  // is registered (so collected) first and takes the snapshot the rest read.
  let snapshot: Snapshot = [];
  new Gauge({
    name: 'qpgate_feeds',
    help: 'Feeds this gateway publishes.',
    registers: [registry],
    collect() {
      snapshot = feeds.list().map((e) => ({ feed: e.name, stats: e.service.stats() }));
      this.set(snapshot.length);
    },
  });

  type Publisher = NonNullable<FeedServiceStats['publisher']>;
  registerDeclaredFamilies(registry, FEED_CHANNEL_METRICS, ['feed', 'channel'], function* () {
    for (const { feed, stats } of snapshot) for (const c of stats.publisher?.channels ?? []) yield [{ feed, channel: String(c.id) }, c] as const;
  });
  registerDeclaredFamilies(registry, FEED_PUBLISHER_METRICS, ['feed'], function* () {
    for (const { feed, stats } of snapshot) if (stats.publisher) yield [{ feed }, stats.publisher] as const;
  });
  const perFeed = (kind: Kind, name: string, help: string, read: (p: Publisher) => number): void =>
    family(registry, kind, name, help, ['feed'], (emit) => {
      for (const { feed, stats } of snapshot) if (stats.publisher) emit({ feed }, read(stats.publisher));
    });
  perFeed('gauge', 'qpgate_feed_send_slot_bytes', "Memory the feed's registered send slots reserved (with its channels' qpgate_feed_reserved_bytes: what the feed holds).", (p) => p.reservedBytes - p.channels.reduce((sum, c) => sum + c.reservedBytes, 0));
  new Gauge({
    name: 'qpgate_feeds_memory_budget_bytes',
    help: 'What all feeds together may reserve (feeds.memoryBudgetBytes); compare with the sum of the reserved bytes.',
    registers: [registry],
    collect() {
      this.set(feeds.budgets.gatewayBytes);
    },
  });
  perFeed('gauge', 'qpgate_feed_queued_messages', 'Messages accepted by publish() and waiting for room in the engine ring.', (p) => p.queued);
}
