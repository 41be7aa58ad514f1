// The feed publisher from TypeScript: channels are multicast groups (A line,
// optional B line); messages are encoded here (protobuf through the static
// generated code, header fields from the body) and written into the engine's
// toEngine ring as FEED_PUBLISH records — as many per batch as fit, then one
// tail store and at most one doorbell. The native engine packs them into
// frames, sequences, sends on both lines, keeps the retransmission ring and
// the snapshot, and sends heartbeats (native/src/feed/publisher.h).
//
//   const device = openFeedDevice(engine, { address: '127.0.0.1' });
//   const pub = createPublisher(engine, device, {
//     channels: [{ id: 1, groupA: '239.77.0.1', groupB: '239.77.0.2' }],
//     instruments: { 1: 1, 2: 1 },
//   });
//   pub.publish(1, [{ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1, bidPrice: 100 } }]);
import type { SessionDevice } from '../common/session-provider.js';
import type { FeedChannelCounterValues, FeedPublisherCounterValues } from '../declared/feed-counters.js';
import { RecordType, type Engine } from '../native/engine.js';
import { DEFAULT_FRAME_BYTES, FRAME_HEADER_BYTES, MESSAGE_HEADER_BYTES, MAX_FRAME_BYTES, type MessageInput } from './frame.js';
import { summarize, type LatencySummary } from './latency.js';
import { encodeMessage, type MarketDataMessage } from './messages.js';
import {
  nativeDeviceOf,
  nativeFeed,
  type FeedDevice,
  type NativeFeedPublisher,
  type NativePublisherStats,
  type NativeRecoverySession,
  type PublisherQpReport,
  type RcEndpointInfo,
  type RecoveryLimits,
} from './native.js';
import type { MessageBatch } from './message-batch.js';
import { PUBLISH_HEADER_BYTES, writePublish, writePublishHeader } from './records.js';

export interface PublisherChannelConfig {
  readonly id: number;
  /** Line A's IPv4 multicast group. */
  readonly groupA: string;
  /** Line B's group: every frame is sent to both. */
  readonly groupB?: string;
  /** Frame size in bytes, 128..4096 (default 1024). */
  readonly frameSize?: number;
  /** Heartbeat after this long idle (default 1000 ms). */
  readonly heartbeatMs?: number;
  /** Retransmission ring depth (default 65536 frames, 64 MiB); reserved when the publisher is made. */
  readonly ring?: { readonly frames?: number; readonly bytes?: number };
  /** Snapshot slots (instrument × type × level keys; default 16384). */
  readonly snapshotSlots?: number;
}

/** Instrument id → channel id: a map, a plain object, or a function. */
export type InstrumentMap = ReadonlyMap<number, number> | Readonly<Record<number, number>> | ((instrumentId: number) => number | undefined);

export interface PublisherOptions {
  readonly channels: readonly PublisherChannelConfig[];
  readonly instruments?: InstrumentMap;
  /** Frames in flight (registered send slots; default 256). */
  readonly sendSlots?: number;
  /** Multicast TTL (default 8). */
  readonly hopLimit?: number;
  /**
   * A second device on another link (an ibv gateway's backend.alternateDevice): line B leaves from it, and recovery
   * sessions may open on it, so a subscriber with a device on each link keeps a line and its recovery session when
   * either link fails (docs/protocol.md §1.11). A channel without groupB is then on the first link only.
   */
  readonly alternateDevice?: FeedDevice;
}

/** Either an encoded message (header fields + protobuf body) or a message to encode. */
export type PublishInput = MessageInput | MarketDataMessage;

/** A channel's declared counters (native/src/feed/feed_counters.def); reservedBytes is its ring and snapshot store (src/feed/memory.ts). */
export type PublisherChannelStats = FeedChannelCounterValues & { readonly id: number };

/** The publisher's declared counters (native/src/feed/feed_counters.def) and what JS adds to them. */
export interface PublisherStats extends FeedPublisherCounterValues {
  /** Messages accepted by publish() and not yet in the ring (the ring was full). */
  queued: number;
  channels: PublisherChannelStats[];
  /** PUBLISH record written (CLOCK_MONOTONIC, by JS) → posted to the wire by the engine. */
  publishLatency: LatencySummary;
}

// Records stay well below what the engine can take in send slots at once.
const MAX_RECORD_PAYLOAD = 32 * 1024;

function toInput(m: PublishInput): MessageInput {
  return 'body' in m ? m : encodeMessage(m);
}

export class FeedPublisher {
  readonly #engine: Engine;
  readonly #native: NativeFeedPublisher;
  readonly #channels: Map<number, PublisherChannelConfig>;
  readonly #channelOf: (instrumentId: number) => number | undefined;
  readonly #maxBody: Map<number, number>;
  readonly #queue: Array<{ channel: number; messages: MessageInput[]; from: number }> = [];
  #queued = 0;
  #retryScheduled = false;
  #closed = false;

  /** @internal */
  constructor(engine: Engine, native: NativeFeedPublisher, options: PublisherOptions) {
    this.#engine = engine;
    this.#native = native;
    this.#channels = new Map(options.channels.map((c) => [c.id, c]));
    this.#maxBody = new Map(options.channels.map((c) => [c.id, (c.frameSize ?? DEFAULT_FRAME_BYTES) - FRAME_HEADER_BYTES - MESSAGE_HEADER_BYTES]));
    const map = options.instruments;
    if (map === undefined) this.#channelOf = () => undefined;
    else if (typeof map === 'function') this.#channelOf = map;
    else if (map instanceof Map) this.#channelOf = (id) => map.get(id);
    else this.#channelOf = (id) => (map as Record<number, number>)[id];
  }

  get id(): number {
    return this.#native.id;
  }
  /** This publisher's session (random, never 0, new on every start). */
  get session(): number {
    return this.#native.session;
  }
  get channels(): number[] {
    return [...this.#channels.keys()];
  }

  /** The channel an instrument is published on (the instruments map), if any. */
  channelOf(instrumentId: number): number | undefined {
    return this.#channelOf(instrumentId);
  }

  /**
   * Publishes `messages` on `channel`, in order. Writes them into toEngine
   * now (one doorbell for the call); what does not fit is queued and written
   * as the engine drains the ring. Returns true when everything is in the
   * ring already. Throws RangeError for an unknown channel or a message too
   * large for the channel's frame size.
   */
  publish(channel: number, messages: readonly PublishInput[]): boolean {
    if (this.#closed) throw new Error('qpgate feed: publish() on a closed publisher');
    const maxBody = this.#maxBody.get(channel);
    if (maxBody === undefined) throw new RangeError(`qpgate feed: channel ${channel} is not one of this publisher's`);
    const inputs = messages.map(toInput);
    for (const m of inputs) {
      if (m.body.byteLength > maxBody) {
        throw new RangeError(`qpgate feed: a ${m.body.byteLength}-byte body does not fit a frame of channel ${channel} (max ${maxBody})`);
      }
      if (m.type === 0) throw new RangeError('qpgate feed: message type 0 is never sent');
    }
    if (this.#queue.length > 0) {
      this.#enqueue(channel, inputs, 0);
      return false;
    }
    const done = this.#write(channel, inputs, 0);
    this.#engine.flush();
    if (done < inputs.length) {
      this.#enqueue(channel, inputs, done);
      return false;
    }
    return true;
  }

  /**
   * Publishes a MessageBatch on `channel`, in order, as one toEngine record:
   * one copy of its bytes and at most one doorbell. Returns false when it
   * cannot be written now (the ring is full, or messages of earlier
   * publish() calls still wait for room) and nothing was taken: the batch is
   * the caller's to publish again (after drained(), or on its next turn).
   * Throws RangeError for an unknown channel or a body too large for the
   * channel's frame size.
   */
  publishBatch(channel: number, batch: MessageBatch): boolean {
    if (this.#closed) throw new Error('qpgate feed: publishBatch() on a closed publisher');
    const maxBody = this.#maxBody.get(channel);
    if (maxBody === undefined) throw new RangeError(`qpgate feed: channel ${channel} is not one of this publisher's`);
    if (batch.largestBody > maxBody) {
      throw new RangeError(`qpgate feed: a ${batch.largestBody}-byte body does not fit a frame of channel ${channel} (max ${maxBody})`);
    }
    if (batch.count === 0) return true;
    const bytes = batch.bytes;
    const length = PUBLISH_HEADER_BYTES + bytes.byteLength;
    if (length > this.#engine.maxRecordPayload) {
      throw new RangeError(`qpgate feed: a ${bytes.byteLength}-byte batch is larger than the engine's records (${this.#engine.maxRecordPayload - PUBLISH_HEADER_BYTES})`);
    }
    if (this.#queue.length > 0) return false;
    const id = this.#native.id;
    const count = batch.count;
    const enqueueNs = process.hrtime.bigint();
    const ok = this.#engine.tryWrite(RecordType.feedPublish, length, (buf, offset) => {
      writePublishHeader(buf, offset, id, channel, count, enqueueNs);
      buf.set(bytes, offset + PUBLISH_HEADER_BYTES);
    });
    if (ok) this.#engine.flush();
    return ok;
  }

  /** Publishes each message on its instrument's channel (the instruments map). */
  publishByInstrument(messages: readonly PublishInput[]): boolean {
    const byChannel = new Map<number, MessageInput[]>();
    for (const m of messages) {
      const input = toInput(m);
      const ch = this.#channelOf(input.instrumentId);
      if (ch === undefined) throw new RangeError(`qpgate feed: instrument ${input.instrumentId} maps to no channel`);
      let list = byChannel.get(ch);
      if (list === undefined) byChannel.set(ch, (list = []));
      list.push(input);
    }
    let all = true;
    for (const [ch, list] of byChannel) all = this.publish(ch, list) && all;
    return all;
  }

  /** Resolves once every queued message is in the ring. */
  async drained(): Promise<void> {
    while (this.#queue.length > 0) await new Promise<void>((r) => setImmediate(r));
  }

  /** Fault injection: which lines frames go out on (bit 0 = A, bit 1 = B). */
  setLines(lines: { a: boolean; b: boolean }): void {
    this.#native.setLineMask((lines.a ? 1 : 0) | (lines.b ? 2 : 0));
  }

  stats(): PublisherStats {
    const { publishLatencyCount: _count, channels, ...counters }: NativePublisherStats = this.#native.stats();
    return { ...counters, queued: this.#queued, channels, publishLatency: summarize(this.#native.latencyCounts()) };
  }

  /** The UD QP frames leave on: attributes (state, PSNs, Q_Key), qpNum and counters. Throws once closed. */
  qp(): PublisherQpReport {
    return this.#native.qp();
  }

  /** Line B's UD QP on the alternate device (PublisherOptions.alternateDevice); null without one. Throws once closed. */
  alternateQp(): PublisherQpReport | null {
    return this.#native.qp('alternate');
  }

  /** Raw latency histogram counters (HdrHistogram layout, ns). */
  latencyCounts(): Float64Array {
    return this.#native.latencyCounts();
  }

  /**
   * Opens a recovery session (an RC QP of its own, in RTS towards `remote`)
   * answering retransmission and snapshot requests for `channels`; returns
   * the gateway's side for the handshake answer. Throws for a session id
   * already open (EEXIST) or bad limits.
   */
  openRecoverySession(options: {
    session: number;
    channels: readonly number[];
    remote: RcEndpointInfo;
    limits?: RecoveryLimits;
    /** 'alternate': on the alternate device (a subscriber failing over); throws without one. */
    device?: SessionDevice;
  }): RcEndpointInfo {
    const a = this.#native.openRecoverySession({ ...options, channels: [...options.channels] });
    // alternateGid with the rest: without it the subscriber's end is never armed and only the gateway's could migrate.
    return { qpn: a.qpn, psn: a.psn, gid: a.gid, mtu: a.mtu, alternateGid: a.alternateGid ?? null };
  }

  /** Closes a recovery session (its QP to ERR). False if it is not open on this publisher. */
  closeRecoverySession(session: number): boolean {
    return this.#native.closeRecoverySession(session);
  }

  recoverySessions(): NativeRecoverySession[] {
    return this.#native.recoverySessions();
  }

  /** Sends END_OF_SESSION on every channel and releases the publisher. Queued messages are dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#native.close();
  }

  // Writes records from messages[from..]; returns the index of the first not written.
  #write(channel: number, messages: readonly MessageInput[], from: number): number {
    const limit = Math.min(MAX_RECORD_PAYLOAD, this.#engine.maxRecordPayload) - PUBLISH_HEADER_BYTES;
    const enqueueNs = process.hrtime.bigint();
    const id = this.#native.id;
    let i = from;
    while (i < messages.length) {
      let bytes = 0;
      let j = i;
      while (j < messages.length && j - i < 0xffff) {
        const len = MESSAGE_HEADER_BYTES + messages[j]!.body.byteLength;
        if (bytes + len > limit) break;
        bytes += len;
        j++;
      }
      const start = i;
      const ok = this.#engine.tryWrite(RecordType.feedPublish, PUBLISH_HEADER_BYTES + bytes, (buf, offset) =>
        writePublish(buf, offset, id, channel, messages, start, j, enqueueNs),
      );
      if (!ok) break;
      i = j;
    }
    return i;
  }

  #enqueue(channel: number, messages: MessageInput[], from: number): void {
    this.#queue.push({ channel, messages, from });
    this.#queued += messages.length - from;
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    if (this.#retryScheduled) return;
    this.#retryScheduled = true;
    setImmediate(() => {
      this.#retryScheduled = false;
      if (this.#closed || !this.#engine.running) return;
      while (this.#queue.length > 0) {
        const head = this.#queue[0]!;
        const done = this.#write(head.channel, head.messages, head.from);
        this.#queued -= done - head.from;
        head.from = done;
        if (done < head.messages.length) break;
        this.#queue.shift();
      }
      this.#engine.flush();
      if (this.#queue.length > 0) this.#scheduleRetry();
    });
  }
}

/**
 * A publisher on a started engine, sending through `device` (a soft device
 * opened on the same engine; see openFeedDevice). Its rings, snapshot stores
 * and send slots are allocated and touched here, on the calling thread,
 * before the engine takes them. Throws an Error with code ENOMEM, naming
 * what could not be reserved, when the host has not the memory; nothing
 * stays allocated then.
 */
export function createPublisher(engine: Engine, device: FeedDevice, options: PublisherOptions): FeedPublisher {
  for (const c of options.channels) {
    if ((c.frameSize ?? DEFAULT_FRAME_BYTES) > MAX_FRAME_BYTES) throw new RangeError(`qpgate feed: channel ${c.id}: frameSize above ${MAX_FRAME_BYTES}`);
  }
  const native = nativeFeed().createPublisher(
    engine.native,
    nativeDeviceOf(device),
    {
      channels: options.channels.map((c) => ({ ...c, ring: c.ring === undefined ? undefined : { ...c.ring } })),
      sendSlots: options.sendSlots,
      hopLimit: options.hopLimit,
    },
    options.alternateDevice === undefined ? undefined : nativeDeviceOf(options.alternateDevice),
  );
  return new FeedPublisher(engine, native, options);
}
