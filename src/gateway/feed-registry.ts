// The gateway's feeds by name: the embedded default (from the `feeds`
// config section, named "default") and those created over /v1/feeds. Each
// is a FeedService — its own publisher (session, channels, UD QP) on the
// gateway's engine and device. The registry checks what a publisher cannot
// (names, groups shared between channels or feeds), lists each publisher's
// UD QP in the QP registry while the feed lives, and keeps the publish
// latency of deleted feeds so the gateway's tick_publish histogram only grows.
// Memory: a feed is refused (400) when it alone exceeds the per-feed budget,
// or (409) when the gateway's feeds would then reserve more than the
// gateway's budget — before anything is allocated (src/feed/memory.ts).
import { resolveFeedsConfig, type FeedChannelConfig, type FeedsConfig } from '../feed/config.js';
import { bodyKeys, CONFIG_KEYS, feedBudgetProblems, feedReservedBytes, formatBytes, type FeedBudgets } from '../feed/memory.js';
import type { FeedDevice, PublisherQpReport } from '../feed/native.js';
import type { FeedPublisher } from '../feed/publisher.js';
import { FeedService } from '../feed/service.js';
import { readReplayFile, ReplayFileError } from '../feed/replay-file.js';
import type { TickFile } from '../feed/recording.js';
import { COUNTS_LENGTH } from '../native/latency-counts.js';
import type { Engine } from '../native/engine.js';
import type { QpRegistry } from './device/qp-registry.js';

/** Feed names: what a URL path segment and a metric label carry without escaping. */
export const FEED_NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,62}$';
export const DEFAULT_FEED = 'default';
/** Each feed holds rings and send slots: a bound on what a create request can reserve. */
export const MAX_FEEDS = 16;

/** A refusal the control plane answers with `status` and `message` as they are. */
export class FeedError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 503,
    message: string,
  ) {
    super(message);
  }
}

export interface FeedEntry {
  readonly name: string;
  /** 'config': the embedded default; 'api': POST /v1/feeds. */
  readonly origin: 'config' | 'api';
  readonly createdAt: Date;
  readonly service: FeedService;
  /** Stops listing the publisher's QP. */
  readonly untrackQp: () => void;
}

const isMulticast = (ip: string): boolean => {
  const first = Number(ip.split('.')[0]);
  return first >= 224 && first <= 239;
};

export class FeedRegistry {
  readonly #engine: Engine;
  readonly #device: FeedDevice;
  // Where every feed's line B leaves from (an ibv gateway's backend.alternateDevice), if anywhere.
  readonly #alternateDevice: FeedDevice | undefined;
  readonly #qps: QpRegistry;
  readonly #feeds = new Map<string, FeedEntry>();
  // Publish latency counts of deleted feeds (dense HdrHistogram layout).
  readonly #retiredLatency = new Float64Array(COUNTS_LENGTH);
  readonly #onCreated: ((entry: FeedEntry) => void) | undefined;
  readonly #replayDir: string;
  readonly #budgets: FeedBudgets;
  #accepting = true;

  /**
   * `replayDir`: the one directory replay feeds read their files from (feeds.replay.dir, resolved).
   * `budgets`: the gateway config's (feeds.feedMemoryBudgetBytes, feeds.memoryBudgetBytes).
   * `onCreated` runs after each feed starts (the gateway registers tick_publish on the first).
   */
  constructor(
    engine: Engine,
    device: FeedDevice,
    qps: QpRegistry,
    options: { replayDir: string; budgets: FeedBudgets; onCreated?: (entry: FeedEntry) => void; alternateDevice?: FeedDevice },
  ) {
    this.#engine = engine;
    this.#device = device;
    this.#alternateDevice = options.alternateDevice;
    this.#qps = qps;
    this.#onCreated = options.onCreated;
    this.#replayDir = options.replayDir;
    this.#budgets = options.budgets;
  }

  /** Memory the live feeds reserved (rings, snapshot stores, send slots). */
  reservedBytes(): number {
    let sum = 0;
    for (const e of this.#feeds.values()) sum += feedReservedBytes(e.service.config);
    return sum;
  }

  get budgets(): FeedBudgets {
    return this.#budgets;
  }

  /**
   * Starts a feed. `config` is a `feeds` config section (enabled is implied).
   * `path` prefixes messages about fields ('body' for a request body).
   * Throws FeedError: 400 bad config or over the per-feed memory budget, 409 name or group
   * taken or over the gateway's memory budget or the host's memory, 503 shutting down.
   */
  async create(name: string, config: unknown, origin: FeedEntry['origin'], path = 'body'): Promise<FeedEntry> {
    this.#checkNew(name, path);
    let cfg: FeedsConfig;
    try {
      cfg = resolveFeedsConfig({ ...(config as object), enabled: true });
    } catch (err) {
      throw new FeedError(400, (err as Error).message.replace(/^feeds config: /, `${path}: `));
    }
    this.#checkGroups(cfg.channels, path);
    this.#checkBudgets(name, cfg, origin, path);
    const replayFile = cfg.source === 'replay' ? await this.#readReplay(cfg.replay.file!, path) : undefined;
    // Again after the read: another request may have taken the name, a group or the memory meanwhile.
    this.#checkNew(name, path);
    this.#checkGroups(cfg.channels, path);
    this.#checkBudgets(name, cfg, origin, path);
    return this.#start(name, cfg, origin, path, replayFile);
  }

  #checkNew(name: string, path: string): void {
    if (!this.#accepting) throw new FeedError(503, 'the gateway is shutting down: no new feeds');
    if (!new RegExp(FEED_NAME_PATTERN).test(name)) throw new FeedError(400, `${path}/name must match pattern "${FEED_NAME_PATTERN}"`);
    if (this.#feeds.has(name)) throw new FeedError(409, `feed "${name}" already exists`);
    if (this.#feeds.size >= MAX_FEEDS) throw new FeedError(409, `this gateway already runs ${MAX_FEEDS} feeds, the most it takes; delete one first`);
  }

  async #readReplay(file: string, path: string): Promise<TickFile> {
    try {
      return await readReplayFile(this.#replayDir, file);
    } catch (err) {
      if (err instanceof ReplayFileError) throw new FeedError(400, `${path}/replay/file: ${err.message}`);
      throw err;
    }
  }

  #start(name: string, cfg: FeedsConfig, origin: FeedEntry['origin'], path: string, replayFile: TickFile | undefined): FeedEntry {
    const service = new FeedService(this.#engine, this.#device, cfg, {
      ...(replayFile ? { replayFile } : {}),
      ...(this.#alternateDevice ? { alternateDevice: this.#alternateDevice } : {}),
    });
    let untrackQp: () => void;
    try {
      service.start();
      const publisher = service.publisher!;
      untrackQp = this.#trackQps(name, publisher);
    } catch (err) {
      service.stop();
      // The addon names the field it refused (a TypeError or RangeError); anything else is ours.
      if (err instanceof TypeError || err instanceof RangeError) throw new FeedError(400, `${path}: ${err.message}`);
      // The host could not give the memory (the addon checked before allocating, or an allocation failed).
      if ((err as { code?: unknown }).code === 'ENOMEM') throw new FeedError(409, `${path}: ${(err as Error).message}`);
      throw err;
    }
    const entry: FeedEntry = { name, origin, createdAt: new Date(), service, untrackQp };
    this.#feeds.set(name, entry);
    this.#onCreated?.(entry);
    return entry;
  }

  // The publisher's UD QP, and line B's on the alternate device when it has one; returns the untrack of both.
  #trackQps(name: string, publisher: FeedPublisher): () => void {
    const owner = `feed:${name}`;
    const untrack = [this.#qps.track({ qpNum: publisher.qp().qpNum, query: () => publisher.qp(), counters: () => publisher.qp().counters }, { owner, label: 'UD multicast publisher' })];
    const lineB = publisher.alternateQp();
    if (lineB !== null) {
      // Throws once the publisher closed, as qp() does: the registry then drops it.
      const query = (): PublisherQpReport => publisher.alternateQp() ?? lineB;
      untrack.push(this.#qps.track({ qpNum: lineB.qpNum, query, counters: () => query().counters }, { owner, label: 'UD multicast publisher, line B', device: 'alternate' }));
    }
    return () => untrack.forEach((u) => u());
  }

  /** Stops a feed (END_OF_SESSION sent, groups left, its QP destroyed). Throws FeedError 404. */
  delete(name: string): FeedEntry {
    const entry = this.#feeds.get(name);
    if (!entry) throw new FeedError(404, `no feed named "${name}"`);
    this.#retire(entry);
    return entry;
  }

  get(name: string): FeedEntry | undefined {
    return this.#feeds.get(name);
  }

  list(): FeedEntry[] {
    return [...this.#feeds.values()];
  }

  get size(): number {
    return this.#feeds.size;
  }

  /** Publish latency counts (dense, ns) of every feed, live and deleted. */
  publishLatencyCounts(): Float64Array {
    const sum = Float64Array.from(this.#retiredLatency);
    for (const e of this.#feeds.values()) addInto(sum, e.service.publisher?.latencyCounts());
    return sum;
  }

  /** Shutdown: no more feeds; every feed stops. */
  stopAll(): void {
    this.#accepting = false;
    for (const e of [...this.#feeds.values()]) this.#retire(e);
  }

  #retire(entry: FeedEntry): void {
    addInto(this.#retiredLatency, entry.service.publisher?.latencyCounts());
    entry.untrackQp();
    this.#feeds.delete(entry.name);
    entry.service.stop();
  }

  #checkBudgets(name: string, cfg: FeedsConfig, origin: FeedEntry['origin'], path: string): void {
    const problems = feedBudgetProblems(cfg, this.#budgets.feedBytes, origin === 'config' ? CONFIG_KEYS : bodyKeys(path));
    if (problems.length > 0) throw new FeedError(400, problems.join('; '));
    const wanted = feedReservedBytes(cfg);
    const used = this.reservedBytes();
    const budget = this.#budgets.gatewayBytes;
    if (used + wanted > budget) {
      throw new FeedError(
        409,
        `${path}: feed "${name}" would reserve ${formatBytes(wanted)}, but the gateway's feeds already reserve ${formatBytes(used)} ` +
          `of its budget of ${formatBytes(budget)} (feeds.memoryBudgetBytes): ${formatBytes(Math.max(0, budget - used))} left`,
      );
    }
  }

  // A group carries one publisher's frames: never shared by two channels or lines.
  #checkGroups(channels: readonly FeedChannelConfig[], path: string): void {
    const seen = new Map<string, string>();
    channels.forEach((c, i) => {
      for (const line of ['groupA', 'groupB'] as const) {
        const group = c[line];
        if (group === undefined) continue;
        const field = `${path}/channels/${i}/${line}`;
        if (!isMulticast(group)) throw new FeedError(400, `${field} must be an IPv4 multicast address (224.0.0.0/4), got ${group}`);
        const other = seen.get(group);
        if (other !== undefined) throw new FeedError(400, `${field} ${group} is also ${other}`);
        seen.set(group, `${path}/channels/${i}/${line}`);
        for (const f of this.#feeds.values()) {
          const owner = f.service.config.channels.find((o) => o.groupA === group || o.groupB === group);
          if (owner) throw new FeedError(409, `${field} ${group} is already published by feed "${f.name}" (channel ${owner.id})`);
        }
      }
    });
  }
}

function addInto(sum: Float64Array, counts: ArrayLike<number> | undefined): void {
  if (!counts) return;
  const n = Math.min(sum.length, counts.length);
  for (let i = 0; i < n; i++) sum[i]! += counts[i]!;
}
