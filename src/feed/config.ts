// The feed's configuration (the `feeds` section the gateway embeds): one
// TypeBox schema for validation and the static type. Defaults describe the
// embedded default: one channel on 239.77.0.1 (A) and 239.77.0.2 (B) on the
// loopback device, 100 instruments, a 10,000 msgs/s synthetic source.
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { FEED_LIMITS } from '../declared/feed-config.js';

const strict = { additionalProperties: false } as const;
// Dotted-quad IPv4 (a pattern, so the schema needs no format registry).
const IPV4 = '^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$';

export const FeedChannelConfig = Type.Object(
  {
    id: Type.Integer({ minimum: 0, maximum: 65535 }),
    groupA: Type.String({ pattern: IPV4, description: "line A's IPv4 multicast group" }),
    groupB: Type.Optional(Type.String({ pattern: IPV4, description: "line B's group (each frame is sent on both)" })),
    frameSize: Type.Integer({ ...FEED_LIMITS.frameSize }),
    heartbeatMs: Type.Integer({ ...FEED_LIMITS.heartbeatMs }),
    ring: Type.Object(
      {
        frames: Type.Integer({ ...FEED_LIMITS.ringFrames }),
        bytes: Type.Integer({ ...FEED_LIMITS.ringBytes }),
      },
      { ...strict, default: {} },
    ),
    snapshotSlots: Type.Integer({ ...FEED_LIMITS.snapshotSlots }),
  },
  strict,
);

export const InstrumentRange = Type.Object(
  {
    from: Type.Integer({ minimum: 0 }),
    to: Type.Integer({ minimum: 0, description: 'inclusive' }),
    channel: Type.Integer({ minimum: 0, maximum: 65535 }),
  },
  strict,
);

export const FeedsConfig = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    channels: Type.Array(FeedChannelConfig, {
      minItems: 1,
      default: [{ id: 1, groupA: '239.77.0.1', groupB: '239.77.0.2' }],
    }),
    instruments: Type.Object(
      {
        count: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 100 }),
        firstId: Type.Integer({ minimum: 1, default: 1 }),
        /** Instrument id ranges → channel; instruments in no range are spread round-robin over the channels. */
        map: Type.Array(InstrumentRange, { default: [] }),
      },
      { ...strict, default: {} },
    ),
    synthetic: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        ratePerSec: Type.Number({ exclusiveMinimum: 0, maximum: 10_000_000, default: 10_000 }),
        burstProbability: Type.Number({ minimum: 0, maximum: 1, default: 0.02 }),
        burstMax: Type.Integer({ minimum: 2, maximum: 1000, default: 20 }),
        bookDepth: Type.Integer({ minimum: 1, maximum: 256, default: 5 }),
        seed: Type.Optional(Type.Integer({ minimum: 0 })),
      },
      { ...strict, default: {} },
    ),
    /** What feeds the publisher: the synthetic source, or a tick file made by `qpgate record`. */
    source: Type.Union([Type.Literal('synthetic'), Type.Literal('replay')], { default: 'synthetic' }),
    replay: Type.Object(
      {
        /**
         * The only directory replay files are read from (under state.dir unless
         * absolute): `file` is resolved in it, and a path or symbolic link out of it
         * is refused. The gateway's config sets it; a POST /v1/feeds body cannot.
         */
        dir: Type.String({ minLength: 1, default: 'replay', description: 'the directory replay files are read from (under state.dir unless absolute)' }),
        file: Type.Optional(Type.String({ minLength: 1, description: 'a tick file made by `qpgate record`, in feeds.replay.dir' })),
        /** 1 = the recorded pacing, 2 = twice as fast, 0 = as fast as the publisher takes them. */
        speed: Type.Number({ minimum: 0, maximum: 1_000_000, default: 1 }),
        loop: Type.Boolean({ default: true }),
      },
      { ...strict, default: {} },
    ),
    sendSlots: Type.Integer({ ...FEED_LIMITS.sendSlots }),
    hopLimit: Type.Integer({ minimum: 1, maximum: 255, default: 8 }),
    /** What one feed may reserve: its channels' rings and snapshot stores and its send slots (src/feed/memory.ts). */
    feedMemoryBudgetBytes: Type.Integer({ minimum: 1 << 20, maximum: 2 ** 48, default: 512 * 2 ** 20 }),
    /** What all of the gateway's feeds may reserve together (the config's and those made by POST /v1/feeds). */
    memoryBudgetBytes: Type.Integer({ minimum: 1 << 20, maximum: 2 ** 48, default: 2 ** 30 }),
  },
  { ...strict, default: {} },
);

export type FeedsConfig = Static<typeof FeedsConfig>;
export type FeedChannelConfig = Static<typeof FeedChannelConfig>;

/** The config with every default filled in (input is not modified); throws on an invalid config. */
export function resolveFeedsConfig(input: unknown = {}): FeedsConfig {
  const v = Value.Default(FeedsConfig, structuredClone(input ?? {}));
  const errors = [...Value.Errors(FeedsConfig, v)];
  if (errors.length > 0) {
    throw new TypeError(`feeds config: ${errors.map((e) => `${e.path || '/'}: ${e.message}`).join('; ')}`);
  }
  const cfg = v as FeedsConfig;
  const ids = new Set<number>();
  for (const c of cfg.channels) {
    if (ids.has(c.id)) throw new TypeError(`feeds config: channel ${c.id} is configured twice`);
    ids.add(c.id);
  }
  for (const r of cfg.instruments.map) {
    if (!ids.has(r.channel)) throw new TypeError(`feeds config: instruments ${r.from}..${r.to} map to unknown channel ${r.channel}`);
  }
  if (cfg.source === 'replay' && cfg.replay.file === undefined) {
    throw new TypeError('feeds config: /replay/file: source is replay, so a tick file (`qpgate record --out FILE`) is required');
  }
  return cfg;
}

/** instrument id → channel id, per the config. */
export function instrumentChannel(cfg: FeedsConfig): (instrumentId: number) => number {
  const channels = cfg.channels.map((c) => c.id);
  return (id) => {
    for (const r of cfg.instruments.map) if (id >= r.from && id <= r.to) return r.channel;
    return channels[(id - cfg.instruments.firstId) % channels.length]!;
  };
}
