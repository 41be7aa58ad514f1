// What a feed reserves, and the budgets that bound it. The native publisher
// allocates (and touches) all of it up front, off the engine thread, when the
// feed starts (native/src/feed/publisher.h, reserve()); these functions are
// the same arithmetic, so a config is checked before anything is allocated
// and the figures match the native `reservedBytes` the feed reports.
//
//   per channel: ring.bytes + 16 B × ring.frames          (retransmission ring: frames + index)
//              + 64 B + 256 B × snapshotSlots + 256 B      (snapshot store: header, slots, staging slot,
//              + 16 B × 2 × snapshotSlots rounded up to a power of two    and its index)
//   per feed:    the channels + sendSlots × the largest frameSize rounded up to 64 B (registered send slots)
//
// Budgets (the `feeds` config section): feeds.feedMemoryBudgetBytes bounds
// one feed, feeds.memoryBudgetBytes all of the gateway's feeds together (the
// embedded default and those POSTed to /v1/feeds).
import type { FeedChannelConfig, FeedsConfig } from './config.js';

const RING_ENTRY_BYTES = 16;
const SNAPSHOT_HEADER_BYTES = 64;
const SNAPSHOT_SLOT_BYTES = 256;
const INDEX_ENTRY_BYTES = 16;

/** The retransmission ring of a channel: its frames and its index. */
export function ringReservedBytes(c: Pick<FeedChannelConfig, 'ring'>): number {
  return c.ring.bytes + RING_ENTRY_BYTES * c.ring.frames;
}

/** The snapshot store of a channel: header, slots, one staging slot and the key index. */
export function snapshotReservedBytes(c: Pick<FeedChannelConfig, 'snapshotSlots'>): number {
  const indexEntries = 2 ** Math.ceil(Math.log2(Math.max(2 * c.snapshotSlots, 2)));
  return SNAPSHOT_HEADER_BYTES + SNAPSHOT_SLOT_BYTES * c.snapshotSlots + SNAPSHOT_SLOT_BYTES + INDEX_ENTRY_BYTES * indexEntries;
}

export function channelReservedBytes(c: Pick<FeedChannelConfig, 'ring' | 'snapshotSlots'>): number {
  return ringReservedBytes(c) + snapshotReservedBytes(c);
}

/** The registered send slots of a feed. */
export function sendSlotBytes(cfg: Pick<FeedsConfig, 'channels' | 'sendSlots'>): number {
  const frame = Math.max(...cfg.channels.map((c) => c.frameSize));
  return cfg.sendSlots * (Math.ceil(frame / 64) * 64);
}

/** Everything one feed reserves: its channels and its send slots. */
export function feedReservedBytes(cfg: Pick<FeedsConfig, 'channels' | 'sendSlots'>): number {
  return cfg.channels.reduce((sum, c) => sum + channelReservedBytes(c), sendSlotBytes(cfg));
}

/** "64.0 MiB", "512 B" (as the native messages write them). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let unit = 0;
  while (v >= 1024 && unit + 1 < units.length) {
    v /= 1024;
    unit++;
  }
  return `${v.toFixed(1)} ${units[unit]}`;
}

/** How keys are named in messages: the config's (`feeds.channels[3]`) or a request body's (`body/channels/3`). */
export interface KeyNames {
  readonly feed: string;
  readonly channel: (index: number) => string;
}

export const CONFIG_KEYS: KeyNames = { feed: 'feeds', channel: (i) => `feeds.channels[${i}]` };
export const bodyKeys = (path: string): KeyNames => ({ feed: path, channel: (i) => `${path}/channels/${i}` });

/**
 * What is wrong with one feed's reservation against the per-feed budget
 * (`feedBudget`, feeds.feedMemoryBudgetBytes): a channel over it alone, else
 * the feed over it in all. Empty when it fits.
 */
export function feedBudgetProblems(cfg: Pick<FeedsConfig, 'channels' | 'sendSlots'>, feedBudget: number, keys: KeyNames = CONFIG_KEYS): string[] {
  const budget = `the per-feed budget of ${formatBytes(feedBudget)} (feeds.feedMemoryBudgetBytes)`;
  const problems = cfg.channels.flatMap((c, i) =>
    channelReservedBytes(c) <= feedBudget
      ? []
      : [`${keys.channel(i)}: ring ${formatBytes(ringReservedBytes(c))} + snapshots ${formatBytes(snapshotReservedBytes(c))} exceeds ${budget}`],
  );
  if (problems.length > 0) return problems;
  const total = feedReservedBytes(cfg);
  if (total <= feedBudget) return [];
  const channels = total - sendSlotBytes(cfg);
  return [
    `${keys.feed}.channels: ${cfg.channels.length} channels reserve ${formatBytes(channels)} + send slots ${formatBytes(sendSlotBytes(cfg))} = ${formatBytes(total)}, which exceeds ${budget}`,
  ];
}

/** The gateway's budgets, from its `feeds` config section. */
export interface FeedBudgets {
  /** feeds.feedMemoryBudgetBytes: one feed. */
  readonly feedBytes: number;
  /** feeds.memoryBudgetBytes: every feed of the gateway together. */
  readonly gatewayBytes: number;
}

export function budgetsOf(cfg: Pick<FeedsConfig, 'feedMemoryBudgetBytes' | 'memoryBudgetBytes'>): FeedBudgets {
  return { feedBytes: cfg.feedMemoryBudgetBytes, gatewayBytes: cfg.memoryBudgetBytes };
}

/** The config's own feed (the embedded default) against both budgets; `origin` names where a key was set. */
export function configBudgetProblems(cfg: FeedsConfig, origin: (key: string) => string = () => ''): string[] {
  if (!cfg.enabled) return [];
  const { feedBytes, gatewayBytes } = budgetsOf(cfg);
  if (feedBytes > gatewayBytes) {
    return [
      `feeds.feedMemoryBudgetBytes${origin('feeds.feedMemoryBudgetBytes')}: expected at most feeds.memoryBudgetBytes (${formatBytes(gatewayBytes)}), got ${formatBytes(feedBytes)}`,
    ];
  }
  return feedBudgetProblems(cfg, feedBytes).map((p) => {
    const key = p.slice(0, p.indexOf(':'));
    return `${key}${origin(key.replace(/\[\d+\]$/, ''))}${p.slice(key.length)}`;
  });
}
