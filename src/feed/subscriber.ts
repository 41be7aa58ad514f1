// The subscriber client library for trading apps: join a feed's channels on
// the native engine (A/B arbitration, gap detection and in-order delivery
// happen there, native/src/feed/subscriber.h) and receive messages in order,
// by callback or async iterator, decoding protobuf bodies only on demand.
//
//   const sub = await subscribe({
//     engineOptions: {},                      // or engine: a started Engine
//     device: { address: '127.0.0.3' },       // or a Device from openFeedDevice
//     channels: [{ id: 1, groupA: '239.77.0.1', groupB: '239.77.0.2' }],
//   });
//   sub.on('gap', (g) => console.warn('lost', g));
//   for await (const m of sub) console.log(m.seq, m.decode());
//
// Gaps: a range lost on every line is reported ('gap' event, stats.gaps and
// stats.unrecoverable). Recovery over RC is not built yet, so every gap is
// unrecoverable for now and stats.recovered stays 0.
import { Engine, RecordType, type EngineOptions } from '../native/engine.js';
import type { OpenDeviceOptions } from '../native/verbs.js';
import { parseFrame, type MessageView } from './frame.js';
import { summarize, type LatencySummary } from './latency.js';
import { decodeMessage, type MarketDataMessage } from './messages.js';
import {
  nativeDeviceOf,
  nativeFeed,
  openFeedDevice,
  type FeedDevice,
  type NativeFeedSubscriber,
  type NativeSubscriberChannelStats,
} from './native.js';
import { readFrameRecord, readGapRecord, readSessionRecord } from './records.js';

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
  /** A device on that engine (openFeedDevice), or options to open one ({address: '127.0.0.3'}). */
  readonly device: FeedDevice | OpenDeviceOptions;
  readonly channels: readonly SubscriberChannelConfig[];
  /** Largest frame expected (receive buffer size; default 4096). */
  readonly maxFrameSize?: number;
  /** Receive buffers posted (default 512). */
  readonly recvSlots?: number;
  /** Messages the async iterator buffers before it drops the oldest (counted; default 1,000,000). */
  readonly iteratorBuffer?: number;
  readonly onMessage?: (m: FeedMessage) => void;
  readonly onGap?: (g: FeedGap) => void;
  readonly onSession?: (s: FeedSessionChange) => void;
}

export interface FeedMessage {
  readonly channel: number;
  readonly session: number;
  readonly seq: bigint;
  readonly type: number;
  readonly instrumentId: number;
  readonly key: number;
  readonly action: number;
  /** The protobuf body (a copy; stays valid). */
  readonly body: Uint8Array;
  /** When the publisher packed the frame (CLOCK_REALTIME ns) and when the engine received it. */
  readonly sendTimeNs: bigint;
  readonly receiveTimeNs: bigint;
  readonly line: 'A' | 'B';
  /** Decodes the body (protobuf) on demand; undefined for an unknown type; throws BodyDecodeError for garbage. */
  decode(): MarketDataMessage | undefined;
}

export interface FeedGap {
  readonly channel: number;
  readonly fromSeq: bigint;
  readonly count: bigint;
  /** Always false until recovery over RC lands. */
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

export interface SubscriberChannelStats {
  id: number;
  /** Messages delivered. */
  received: number;
  frames: number;
  /** Frame copies dropped because the other line (or a repeat) was first. */
  duplicates: number;
  gaps: number;
  recovered: number;
  /** Messages in gaps that will not be recovered. */
  unrecoverable: number;
  sessionChanges: number;
  session: number;
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
  /** Records the engine could not hand over (fromEngine full). */
  ringFullDrops: number;
  /** Messages the async iterator dropped (its buffer was full). */
  iteratorDrops: number;
  decodeErrors: number;
}

type Listener<T> = (v: T) => void;

class FeedMessageImpl implements FeedMessage {
  constructor(
    readonly channel: number,
    readonly session: number,
    readonly line: 'A' | 'B',
    readonly sendTimeNs: bigint,
    readonly receiveTimeNs: bigint,
    readonly seq: bigint,
    readonly type: number,
    readonly instrumentId: number,
    readonly key: number,
    readonly action: number,
    readonly body: Uint8Array,
  ) {}
  decode(): MarketDataMessage | undefined {
    return decodeMessage(this);
  }
}

export class FeedSubscriber implements AsyncIterable<FeedMessage> {
  readonly #engine: Engine;
  readonly #ownEngine: boolean;
  readonly #native: NativeFeedSubscriber;
  readonly #unsubscribe: Array<() => void> = [];
  readonly #listeners = { message: new Set<Listener<FeedMessage>>(), gap: new Set<Listener<FeedGap>>(), session: new Set<Listener<FeedSessionChange>>() };
  readonly #buffer: FeedMessage[] = [];
  #bufferHead = 0;
  readonly #bufferLimit: number;
  #iterating = false;
  #wake: (() => void) | undefined;
  #iteratorDrops = 0;
  #closed = false;

  /** @internal */
  constructor(engine: Engine, ownEngine: boolean, native: NativeFeedSubscriber, options: SubscribeOptions) {
    this.#engine = engine;
    this.#ownEngine = ownEngine;
    this.#native = native;
    this.#bufferLimit = options.iteratorBuffer ?? 1_000_000;
    if (options.onMessage) this.#listeners.message.add(options.onMessage);
    if (options.onGap) this.#listeners.gap.add(options.onGap);
    if (options.onSession) this.#listeners.session.add(options.onSession);
    const id = native.id;
    const idOf = (p: Uint8Array): number => p[0]! | (p[1]! << 8) | (p[2]! << 16) | (p[3]! * 2 ** 24);
    this.#unsubscribe.push(
      engine.onRecord(RecordType.feedFrame, (p) => {
        if (idOf(p) === id) this.#onFrame(p);
      }),
      engine.onRecord(RecordType.feedGap, (p) => {
        if (idOf(p) !== id) return;
        const g = readGapRecord(p);
        this.#emit('gap', { channel: g.channel, fromSeq: g.fromSeq, count: g.count, recoverable: false });
      }),
      engine.onRecord(RecordType.feedSession, (p) => {
        if (idOf(p) !== id) return;
        const s = readSessionRecord(p);
        this.#emit('session', { channel: s.channel, oldSession: s.oldSession, newSession: s.newSession, nextSeq: s.nextSeq });
      }),
    );
  }

  get id(): number {
    return this.#native.id;
  }

  on(event: 'message', listener: Listener<FeedMessage>): this;
  on(event: 'gap', listener: Listener<FeedGap>): this;
  on(event: 'session', listener: Listener<FeedSessionChange>): this;
  on(event: 'message' | 'gap' | 'session', listener: Listener<never>): this {
    (this.#listeners[event] as Set<Listener<never>>).add(listener);
    return this;
  }
  off(event: 'message' | 'gap' | 'session', listener: Listener<never>): this {
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
        recovered: 0,
        unrecoverable: c.unrecoverable,
        sessionChanges: c.sessionChanges,
        session: c.session,
        heartbeats: c.heartbeats,
        lineAFrames: c.lineAFrames,
        lineBFrames: c.lineBFrames,
        rejectedFrames: c.rejectedFrames,
        frameCounters: c.frameCounters,
        latency: summarize(this.#native.latencyCounts(i)),
      })),
      ringFullDrops: s.ringFullDrops,
      iteratorDrops: this.#iteratorDrops,
      decodeErrors: 0,
    };
  }

  /** Raw e2e latency histogram counters of one channel (by index in the config). */
  latencyCounts(channelIndex = 0): Float64Array {
    return this.#native.latencyCounts(channelIndex);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const u of this.#unsubscribe) u();
    this.#native.close();
    this.#wake?.();
    if (this.#ownEngine) await this.#engine.stop();
  }

  [Symbol.asyncIterator](): AsyncIterator<FeedMessage> {
    this.#iterating = true;
    return {
      next: async (): Promise<IteratorResult<FeedMessage>> => {
        for (;;) {
          if (this.#bufferHead < this.#buffer.length) {
            const v = this.#buffer[this.#bufferHead++]!;
            if (this.#bufferHead > 4096 && this.#bufferHead * 2 > this.#buffer.length) {
              this.#buffer.splice(0, this.#bufferHead);
              this.#bufferHead = 0;
            }
            return { value: v, done: false };
          }
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
    const r = readFrameRecord(p);
    const hasListeners = this.#listeners.message.size > 0;
    if (!hasListeners && !this.#iterating) return;
    // One copy per frame: message bodies are views into it and stay valid.
    const frame = parseFrame(r.frame.slice());
    const messages: MessageView[] = frame.messages;
    for (let i = r.skip; i < messages.length; i++) {
      const m = messages[i]!;
      const msg = new FeedMessageImpl(r.channel, r.session, r.line, r.sendTimeNs, r.receiveTimeNs, m.seq, m.type, m.instrumentId, m.key, m.action, m.body);
      if (hasListeners) for (const l of this.#listeners.message) l(msg);
      if (this.#iterating) {
        if (this.#buffer.length - this.#bufferHead >= this.#bufferLimit) {
          this.#bufferHead++;
          this.#iteratorDrops++;
        }
        this.#buffer.push(msg);
      }
    }
    this.#wake?.();
  }

  #emit(event: 'gap', v: FeedGap): void;
  #emit(event: 'session', v: FeedSessionChange): void;
  #emit(event: 'gap' | 'session', v: FeedGap | FeedSessionChange): void {
    for (const l of this.#listeners[event] as Set<Listener<FeedGap | FeedSessionChange>>) l(v);
  }
}

function isDeviceOptions(d: SubscribeOptions['device']): d is OpenDeviceOptions {
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
    const native = nativeFeed().createSubscriber(engine.native, nativeDeviceOf(device), {
      channels: options.channels.map((c) => ({ ...c })),
      maxFrameSize: options.maxFrameSize,
      recvSlots: options.recvSlots,
    });
    return new FeedSubscriber(engine, own, native, options);
  } catch (e) {
    if (own) await engine.stop();
    throw e;
  }
}
