// Per-feed metric families, read from the publishers' native counters on
// scrape (never per message). Series carry `feed` (and `channel`) labels only
// while the feed exists: every family is reset and refilled on each scrape.
import { Counter, Gauge, type Registry } from 'prom-client';
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
  type Channel = Publisher['channels'][number];
  const perChannel = (kind: Kind, name: string, help: string, read: (c: Channel) => number): void =>
    family(registry, kind, name, help, ['feed', 'channel'], (emit) => {
      for (const { feed, stats } of snapshot) for (const c of stats.publisher?.channels ?? []) emit({ feed, channel: String(c.id) }, read(c));
    });
  perChannel('counter', 'qpgate_feed_frames_total', 'Data frames published (each sent on every line).', (c) => c.frames);
  perChannel('counter', 'qpgate_feed_messages_total', 'Market-data messages published.', (c) => c.messages);
  perChannel('counter', 'qpgate_feed_bytes_total', 'Frame bytes published (counted once per frame, not per line).', (c) => c.bytes);
  perChannel('counter', 'qpgate_feed_heartbeats_total', 'Heartbeat frames sent while the channel was idle.', (c) => c.heartbeats);
  perChannel('gauge', 'qpgate_feed_next_sequence', 'The sequence number the next message of the channel gets.', (c) => c.nextSeq);
  perChannel('gauge', 'qpgate_feed_retransmit_ring_frames', "Frames held in the channel's retransmission ring (occupancy).", (c) => c.ringFrames);
  perChannel('gauge', 'qpgate_feed_snapshot_slots', 'Snapshot slots in use (instrument × type × level keys).', (c) => c.snapshotSlots);
  perChannel('gauge', 'qpgate_feed_reserved_bytes', "Memory the channel's retransmission ring and snapshot store reserved when the feed started.", (c) => c.reservedBytes);

  const perFeed = (kind: Kind, name: string, help: string, read: (p: Publisher) => number): void =>
    family(registry, kind, name, help, ['feed'], (emit) => {
      for (const { feed, stats } of snapshot) if (stats.publisher) emit({ feed }, read(stats.publisher));
    });
  perFeed('counter', 'qpgate_feed_publish_records_total', 'PUBLISH records the engine accepted (one per publish() batch).', (p) => p.records);
  perFeed('counter', 'qpgate_feed_rejected_records_total', 'PUBLISH records the engine refused (malformed, unknown channel).', (p) => p.rejectedRecords);
  perFeed('counter', 'qpgate_feed_backpressure_retries_total', 'Records put back for lack of send slots (the engine retries them).', (p) => p.retries);
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
  new Counter({
    name: 'qpgate_feed_send_errors_total',
    help: 'Frame sends that failed, by stage (post: post_send refused the WR; completion: the send completed in error).',
    labelNames: ['feed', 'stage'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { feed, stats } of snapshot) {
        if (!stats.publisher) continue;
        this.inc({ feed, stage: 'post' }, stats.publisher.postErrors);
        this.inc({ feed, stage: 'completion' }, stats.publisher.sendErrors);
      }
    },
  });
}
