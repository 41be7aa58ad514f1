// The subscriber client library for trading apps: join a feed's channels on
// the native engine (A/B arbitration, gap detection and in-order delivery
// happen there, native/src/feed/subscriber.h) and receive messages in order,
// by callback or async iterator, decoding protobuf bodies only on demand.
//
//   const sub = await subscribe({
//     engineOptions: {},                      // or engine: a started Engine
//     device: { address: '127.0.0.3' },       // or { kind: 'ibv', name: 'rxe0' }, or a Device from openFeedDevice
//     channels: [{ id: 1, groupA: '239.77.0.1', groupB: '239.77.0.2' }],
//   });
//   sub.on('gap', (g) => console.warn('lost', g));
//   for await (const m of sub) console.log(m.seq, m.decode());
//
// Recovery (options.recovery): the native subscriber makes an RC QP, this
// client registers it with the gateway (POST /v1/sessions, role 'recovery',
// with the token) and connects it with the answer. A range lost on every line
// is then asked for natively and delivered in order (stats.recovered); a
// late join, a new session or a range older than the gateway's ring is
// resynced from a snapshot (messages with snapshot: true, between
// SnapshotBegin and SnapshotEnd). What cannot be recovered is reported
// ('gap' event, stats.unrecoverable). Without options.recovery every gap is
// unrecoverable. When the gateway restarts (a new feed session) or the
// recovery QP fails, the session is made again (recovery-link.ts).
import { Engine, type EngineOptions } from '../native/engine.js';
import type { OpenDeviceOptions, OpenIbvDeviceOptions, RcPathInfo } from '../native/verbs.js';
import { FeedBatch, type FeedMessage } from './feed-batch.js';
export { FeedBatch, type FeedMessage } from './feed-batch.js';
import { summarize, type LatencySummary } from './latency.js';
import {
  nativeDeviceOf,
  nativeFeed,
  openFeedDevice,
  type FeedDevice,
  type NativeFeedSubscriber,
  type NativeSubscriberChannelStats,
} from './native.js';
import { SlowConsumerError, SlowConsumerQueue, type QueueStats, type SlowConsumerOptions } from './slow-consumer.js';
import { OtherSessionWatch, type FeedWarning } from './other-session.js';
export type { FeedWarning } from './other-session.js';
import { readGapRecord, readSessionRecord } from './records.js';
import { routeSubscriberRecords } from './subscriber-records.js';
import type { ControlTlsOptions } from '../http/control-fetch.js';
import { httpRecoveryHandshake, type RecoveryHandshake } from './recovery-handshake.js';
import { RecoveryLink, type RecoveryLinkStats } from './recovery-link.js';
export type { RecoveryLinkStats } from './recovery-link.js';

export interface SubscriberChannelConfig {
  readonly id: number;
  readonly groupA: string;
  readonly groupB?: string;
  /** Frames held ahead of a hole for the other line to fill (default 64). */
  readonly holdFrames?: number;
  /** How long a hole waits for the other line before it is a gap (default 1000 µs). */
  readonly maxWaitUs?: number;
}

export interface SubscribeOptions {
  /** A started engine to receive on; or give engineOptions and the subscriber starts (and stops) its own. */
  readonly engine?: Engine;
  readonly engineOptions?: EngineOptions;
  /** A device on that engine (openFeedDevice), or options to open one: soft {address: '127.0.0.3'}, ibv {kind: 'ibv', name: 'rxe0'}. */
  readonly device: FeedDevice | OpenDeviceOptions | OpenIbvDeviceOptions;
  /**
   * A second device on another link (ibv, e.g. {kind: 'ibv', name: 'rxe1'}; docs/protocol.md §1.11): line B is
   * received on it, so a channel with groupB keeps flowing while either link is down, and the recovery session
   * fails over to the gateway's alternate device when its retries run out on the first (stats().recovery.failovers).
   * With recovery, subscribe() fails if the gateway has no alternate device.
   */
  readonly alternateDevice?: FeedDevice | OpenIbvDeviceOptions;
  readonly channels: readonly SubscriberChannelConfig[];
  /** Largest frame expected (receive buffer size; default 4096). At most fromEngineCapacity / 8 − 48 (a frame record and its header must fit the engine's fromEngine ring). */
  readonly maxFrameSize?: number;
  /** Receive buffers posted (default 512). */
  readonly recvSlots?: number;
  /** Messages the async iterator buffers before it drops the oldest (counted; default 1,000,000). Shorthand for slowConsumer.maxQueued. */
  readonly iteratorBuffer?: number;
  /**
   * What happens when the async iterator is read slower than messages arrive
   * (slow-consumer.ts): 'drop-oldest' (default), 'conflate' (latest per
   * instrument and key) or 'disconnect', at maxQueued messages. Callbacks
   * (onMessage) run synchronously in the record handler: a slow callback
   * holds the engine's fromEngine ring: frames that find it full are
   * recovered again over the recovery connection, or, without one,
   * reported to onGap (counted in ringFullDrops; docs/protocol.md 2.11).
   */
  readonly slowConsumer?: SlowConsumerOptions;
  readonly onMessage?: (m: FeedMessage) => void;
  /**
   * The messages of each delivered frame at once, read in place from the
   * engine's ring (no copy, fields decoded on demand): for high rates. The
   * batch is valid only during the call (keep batch.message(i) for longer).
   */
  readonly onBatch?: (b: FeedBatch) => void;
  readonly onGap?: (g: FeedGap) => void;
  readonly onSession?: (s: FeedSessionChange) => void;
  /** Something is wrong that is no gap: frames of another feed session keep coming (other-session.ts). */
  readonly onWarning?: (w: FeedWarning) => void;
  /** Recover gaps and late joins over RC from the gateway's recovery service. */
  readonly recovery?: SubscriberRecoveryOptions;
}

export interface SubscriberRecoveryOptions {
  /** Session name (stable across reconnects). */
  readonly name: string;
  /** The gateway's feed name (default 'default'). */
  readonly feed?: string;
  /** The gateway's control plane URL and a token entitled to role 'recovery' (used unless `handshake` is given). */
  readonly url?: string;
  readonly token?: string;
  /** For an https url: `{ ca }`, the PEM CA the gateway's certificate must chain to (default: Node's root CAs). */
  readonly tls?: ControlTlsOptions;
  /** How the QP is registered with the gateway (default: httpRecoveryHandshake({url, token})). */
  readonly handshake?: RecoveryHandshake;
  /** How long a handshake waits for the control plane's answer (default 5000 ms), as the order clients' timeoutMs. */
  readonly timeoutMs?: number;
  /** Largest reply accepted (default 65536; at least the gateway's replyBytes). */
  readonly replyBytes?: number;
  readonly recvSlots?: number;
  /** Messages asked per request (default 4096). */
  readonly maxRequestMessages?: number;
  /** No answer by then: the request is sent again, requestAttempts times in all (default 2000 ms). */
  readonly requestTimeoutMs?: number;
  /** Times a request is sent before its ranges are reported unrecoverable (default 3, 1 to 100). */
  readonly requestAttempts?: number;
  /** Live frames held per channel while a range is recovered (default 65536). */
  readonly bufferFrames?: number;
  /** How often the subscriber reports its lag and drops to the gateway (default 250 ms). */
  readonly reportIntervalMs?: number;
}

export interface FeedGap {
  readonly channel: number;
  readonly fromSeq: bigint;
  readonly count: bigint;
  /** Always false: only ranges that could not be recovered are reported. */
  readonly recoverable: boolean;
}

export interface FeedSessionChange {
  readonly channel: number;
  /** 0 when the channel is seen for the first time. */
  readonly oldSession: number;
  readonly newSession: number;
  /** The first sequence delivered in the new session (1 unless joined late). */
  readonly nextSeq: bigint;
}

/** Recovery counters, as the native subscriber keeps them (native.ts documents each). */
type RecoveryChannelStats = Pick<
  NativeSubscriberChannelStats,
  'snapshots' | 'snapshotMessages' | 'recoveryRequests' | 'throttled' | 'rangeGone' | 'recoveryFailures' | 'bufferOverflows' | 'held'
>;

export interface SubscriberChannelStats extends RecoveryChannelStats {
  id: number;
  /** Messages delivered. */
  received: number;
  frames: number;
  /** Frame copies dropped because the other line (or a repeat) was first. */
  duplicates: number;
  gaps: number;
  /** Messages delivered from retransmissions. */
  recovered: number;
  /** Messages lost for good (not recovered, or superseded by a snapshot). */
  unrecoverable: number;
  sessionChanges: number;
  session: number;
  /**
   * Frames dropped because they belong to the feed session this channel
   * left: a few after a gateway restart; if they keep coming, a second
   * gateway publishes on the same groups (warnOtherSession).
   */
  otherSessionFrames: number;
  heartbeats: number;
  lineAFrames: number;
  lineBFrames: number;
  /** Frames rejected by validation (by reason in frameCounters). */
  rejectedFrames: number;
  frameCounters: Record<string, number>;
  /** Frame send time (publisher) → received by the engine, ns. */
  latency: LatencySummary;
}

export interface SubscriberStats {
  channels: SubscriberChannelStats[];
  /** Times a record found the engine's fromEngine ring full: its frames were recovered or reported as a gap, never lost silently. */
  ringFullDrops: number;
  /** Messages the async iterator dropped (its buffer was full). */
  iteratorDrops: number;
  /** The iterator's queue: policy, lag (queued), high water, dropped, conflated. */
  consumer: QueueStats;
  decodeErrors: number;
  /** The recovery session's renewals (undefined without recovery). */
  recovery: RecoveryLinkStats | undefined;
}

type Listener<T> = (v: T) => void;
type SubscriberEvent = 'message' | 'batch' | 'gap' | 'session' | 'warning';

export class FeedSubscriber implements AsyncIterable<FeedMessage> {
  readonly #engine: Engine;
  readonly #ownEngine: boolean;
  readonly #native: NativeFeedSubscriber;
  readonly #unsubscribe: Array<() => void> = [];
  readonly #listeners = {
    message: new Set<Listener<FeedMessage>>(),
    batch: new Set<Listener<FeedBatch>>(),
    gap: new Set<Listener<FeedGap>>(),
    session: new Set<Listener<FeedSessionChange>>(),
    warning: new Set<Listener<FeedWarning>>(),
  };
  readonly #queue: SlowConsumerQueue<FeedMessage>;
  readonly #batch = new FeedBatch();
  #iterating = false;
  #wake: (() => void) | undefined;
  #closed = false;
  #recovery: RecoveryLink | undefined;
  #reportTimer: NodeJS.Timeout | undefined;
  readonly #watchTimer: NodeJS.Timeout;

  /** @internal */
  constructor(engine: Engine, ownEngine: boolean, native: NativeFeedSubscriber, options: SubscribeOptions) {
    this.#engine = engine;
    this.#ownEngine = ownEngine;
    this.#native = native;
    this.#queue = new SlowConsumerQueue({ maxQueued: options.iteratorBuffer, ...options.slowConsumer });
    if (options.onMessage) this.#listeners.message.add(options.onMessage);
    if (options.onBatch) this.#listeners.batch.add(options.onBatch);
    if (options.onGap) this.#listeners.gap.add(options.onGap);
    if (options.onSession) this.#listeners.session.add(options.onSession);
    this.#unsubscribe.push(
      routeSubscriberRecords(engine, native.id, {
        frame: (p) => this.#onFrame(p),
        gap: (p) => {
          const g = readGapRecord(p);
          this.#emit('gap', { channel: g.channel, fromSeq: g.fromSeq, count: g.count, recoverable: false });
        },
        session: (p) => {
          const s = readSessionRecord(p);
          // A gateway draws a new session at every start: the recovery session was with the process that is gone.
          if (s.oldSession !== 0) void this.#recovery?.renew(`a new feed session on channel ${s.channel} (the gateway restarted)`);
          this.#emit('session', { channel: s.channel, oldSession: s.oldSession, newSession: s.newSession, nextSeq: s.nextSeq });
        },
      }),
    );
    if (options.onWarning) this.#listeners.warning.add(options.onWarning);
    const watch = new OtherSessionWatch();
    this.#watchTimer = setInterval(() => {
      for (const w of watch.check(this.#native.stats().channels)) this.#emit('warning', w);
    }, 1000);
    this.#watchTimer.unref();
  }

  get id(): number {
    return this.#native.id;
  }

  on(event: 'message', listener: Listener<FeedMessage>): this;
  /** Each delivered frame's messages in place (SubscribeOptions.onBatch). */
  on(event: 'batch', listener: Listener<FeedBatch>): this;
  on(event: 'gap', listener: Listener<FeedGap>): this;
  on(event: 'session', listener: Listener<FeedSessionChange>): this;
  on(event: 'warning', listener: Listener<FeedWarning>): this;
  on(event: SubscriberEvent, listener: Listener<never>): this {
    (this.#listeners[event] as Set<Listener<never>>).add(listener);
    return this;
  }
  off(event: SubscriberEvent, listener: Listener<never>): this {
    (this.#listeners[event] as Set<Listener<never>>).delete(listener);
    return this;
  }

  stats(): SubscriberStats {
    const s = this.#native.stats();
    return {
      channels: s.channels.map((c: NativeSubscriberChannelStats, i) => ({
        id: c.id,
        received: c.messages,
        frames: c.frames,
        duplicates: c.duplicates,
        gaps: c.gaps,
        recovered: c.recovered,
        unrecoverable: c.unrecoverable,
        snapshots: c.snapshots,
        snapshotMessages: c.snapshotMessages,
        recoveryRequests: c.recoveryRequests,
        throttled: c.throttled,
        rangeGone: c.rangeGone,
        recoveryFailures: c.recoveryFailures,
        bufferOverflows: c.bufferOverflows,
        held: c.held,
        sessionChanges: c.sessionChanges,
        session: c.session,
        otherSessionFrames: c.otherSessionFrames,
        heartbeats: c.heartbeats,
        lineAFrames: c.lineAFrames,
        lineBFrames: c.lineBFrames,
        rejectedFrames: c.rejectedFrames,
        frameCounters: c.frameCounters,
        latency: summarize(this.#native.latencyCounts(i)),
      })),
      ringFullDrops: s.ringFullDrops,
      iteratorDrops: this.#queue.stats().dropped,
      consumer: this.#queue.stats(),
      decodeErrors: 0,
      recovery: this.#recovery?.stats(),
    };
  }

  /** The gateway's recovery session id (undefined without recovery, or while it is made again). */
  get recoverySessionId(): number | undefined {
    return this.#recovery?.session;
  }

  /**
   * The path our end of the recovery session runs on (docs/protocol.md §1.10):
   * `activePath` 'primary' or 'alternate' (null without an alternate path),
   * `pathMigState`, `pathMigrations`. Undefined without recovery or while it is
   * made again. A call into the engine: for an operator's view, not a hot path.
   */
  recoveryPath(): RcPathInfo | undefined {
    return this.#native.recoveryPath() ?? undefined;
  }

  /** @internal The connected recovery session, kept up from here on. */
  attachRecovery(link: RecoveryLink, reportIntervalMs = 250): void {
    this.#recovery = link;
    // The engine sends what the application's queue says in its SubscriberReports.
    this.#reportTimer = setInterval(() => {
      const q = this.#queue.stats();
      this.#native.reportConsumer({ queued: q.queued, dropped: q.dropped, conflated: q.conflated });
      link.check();
    }, Math.max(10, Math.min(reportIntervalMs, 1000)));
    this.#reportTimer.unref();
  }

  /** Raw e2e latency histogram counters of one channel (by index in the config). */
  latencyCounts(channelIndex = 0): Float64Array {
    return this.#native.latencyCounts(channelIndex);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const u of this.#unsubscribe) u();
    clearInterval(this.#reportTimer);
    clearInterval(this.#watchTimer);
    this.#native.close();
    this.#wake?.();
    await this.#recovery?.close();
    if (this.#ownEngine) await this.#engine.stop();
  }

  [Symbol.asyncIterator](): AsyncIterator<FeedMessage> {
    this.#iterating = true;
    return {
      next: async (): Promise<IteratorResult<FeedMessage>> => {
        for (;;) {
          const v = this.#queue.shift();
          if (v !== undefined) return { value: v, done: false };
          if (this.#queue.tripped) throw new SlowConsumerError(this.#queue.stats().maxQueued);
          if (this.#closed) return { value: undefined, done: true };
          await new Promise<void>((resolve) => (this.#wake = resolve));
          this.#wake = undefined;
        }
      },
      return: async (): Promise<IteratorResult<FeedMessage>> => {
        this.#iterating = false;
        return { value: undefined, done: true };
      },
    };
  }

  #onFrame(p: Uint8Array): void {
    const { message, batch: batchListeners } = this.#listeners;
    if (message.size === 0 && batchListeners.size === 0 && !this.#iterating) return;
    const batch = this.#batch;
    batch.reset(p);
    for (const l of batchListeners) l(batch);
    if (message.size === 0 && !this.#iterating) return;
    // One copy per frame: message bodies are views into it and stay valid.
    for (const msg of batch.messages()) {
      for (const l of message) l(msg);
      if (this.#iterating && !this.#queue.push(msg)) {
        // Policy 'disconnect': the subscription ends here; the iterator throws once drained.
        void this.close();
        break;
      }
    }
    this.#wake?.();
  }

  #emit(event: 'gap', v: FeedGap): void;
  #emit(event: 'session', v: FeedSessionChange): void;
  #emit(event: 'warning', v: FeedWarning): void;
  #emit(event: 'gap' | 'session' | 'warning', v: FeedGap | FeedSessionChange | FeedWarning): void {
    for (const l of this.#listeners[event] as Set<Listener<FeedGap | FeedSessionChange | FeedWarning>>) l(v);
  }
}

async function connectRecovery(
  sub: FeedSubscriber,
  native: NativeFeedSubscriber,
  local: ReturnType<NativeFeedSubscriber['recoveryLocal']>,
  r: SubscriberRecoveryOptions,
  channels: readonly SubscriberChannelConfig[],
): Promise<void> {
  if (local === null) throw new Error('qpgate feed: the native subscriber made no recovery connection');
  let handshake = r.handshake;
  if (handshake === undefined) {
    if (r.url === undefined || r.token === undefined) throw new TypeError('subscribe: recovery needs url and token (or a handshake function)');
    handshake = httpRecoveryHandshake({ url: r.url, token: r.token, ...(r.tls ? { tls: r.tls } : {}), ...(r.timeoutMs !== undefined ? { timeoutMs: r.timeoutMs } : {}) });
  }
  const link = new RecoveryLink(native, {
    name: r.name,
    feed: r.feed ?? 'default',
    channels: channels.map((c) => c.id),
    handshake,
    alternateDevice: native.hasAlternateDevice,
  });
  await link.connect(local);
  sub.attachRecovery(link, r.reportIntervalMs);
}

function isDeviceOptions(d: SubscribeOptions['device']): d is OpenDeviceOptions | OpenIbvDeviceOptions {
  const o = d as { address?: unknown; name?: unknown; allocPd?: unknown };
  return (typeof o.address === 'string' || typeof o.name === 'string') && typeof o.allocPd !== 'function' && !('native' in o);
}

/**
 * Joins the channels and starts delivering. With `engineOptions` (and no
 * `engine`) the subscriber starts its own engine and stops it on close().
 */
export async function subscribe(options: SubscribeOptions): Promise<FeedSubscriber> {
  let engine = options.engine;
  let own = false;
  if (engine === undefined) {
    engine = new Engine(options.engineOptions ?? {});
    own = true;
  }
  if (!engine.running) await engine.start();
  try {
    const device = isDeviceOptions(options.device) ? openFeedDevice(engine, options.device) : options.device;
    const a = options.alternateDevice;
    const alternate = a === undefined ? undefined : isDeviceOptions(a) ? openFeedDevice(engine, a) : a;
    const r = options.recovery;
    const native = nativeFeed().createSubscriber(engine.native, nativeDeviceOf(device), {
      channels: options.channels.map((c) => ({ ...c })),
      maxFrameSize: options.maxFrameSize,
      recvSlots: options.recvSlots,
      recovery:
        r === undefined
          ? undefined
          : {
              replyBytes: r.replyBytes,
              recvSlots: r.recvSlots,
              maxRequestMessages: r.maxRequestMessages,
              requestTimeoutMs: r.requestTimeoutMs,
              requestAttempts: r.requestAttempts,
              bufferFrames: r.bufferFrames,
              reportIntervalMs: r.reportIntervalMs,
            },
    }, alternate === undefined ? undefined : nativeDeviceOf(alternate));
    const sub = new FeedSubscriber(engine, own, native, options);
    if (r !== undefined) {
      try {
        await connectRecovery(sub, native, native.recoveryLocal(), r, options.channels);
      } catch (e) {
        own = false; // close() stops the engine it owns
        await sub.close();
        throw e;
      }
    }
    return sub;
  } catch (e) {
    if (own) await engine.stop();
    throw e;
  }
}
