// What a subscriber delivers: the messages of one FEED_FRAME record
// (docs/protocol.md 2.11), read where the engine wrote them. The engine
// validated the frame (native/src/feed/frame.h) before it wrote the record,
// so nothing here parses it again: the message boundaries are found by
// hopping the message lengths, once per frame, and every field is read on
// demand from the ring's bytes.
//
// Two ways out, one copy at most:
//   - FeedBatch: the frame's messages in place (no copy): valid only during
//     the onBatch call, for high rates (one callback per frame).
//   - FeedMessage: detached objects, one copy per frame (their bodies are
//     views into it), as subscribe()'s onMessage and async iterator give.
import { FrameFlags, MESSAGE_HEADER_BYTES } from './frame.js';
import { decodeMessage, type MarketDataMessage } from './messages.js';
import { FRAME_RECORD_HEADER_BYTES, type FeedLine } from './records.js';

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
  /** The line whose copy won, or 'RC' for a retransmitted or snapshot message. */
  readonly line: FeedLine;
  /** Part of a snapshot (state as of seq, not a live message; between SnapshotBegin and SnapshotEnd). */
  readonly snapshot: boolean;
  /** Delivered from a retransmission (it was lost on every line). */
  readonly recovered: boolean;
  /** Decodes the body (protobuf) on demand; undefined for an unknown type; throws BodyDecodeError for garbage. */
  decode(): MarketDataMessage | undefined;
}

// Offsets in the FEED_FRAME record (native/src/feed/feed_records.h).
const R_CHANNEL = 4;
const R_LINE = 6;
const R_FLAGS = 7;
const R_FIRST_SEQ = 8;
const R_COUNT = 16;
const R_SKIP = 18;
const R_SESSION = 20;
const R_SEND_TIME = 24;
const R_RECEIVE_TIME = 32;
// A 4096-byte frame holds at most this many 12-byte messages.
const MAX_MESSAGES = Math.floor(4096 / MESSAGE_HEADER_BYTES);
const LINES: readonly FeedLine[] = ['A', 'B', 'RC'];

function u16(p: Uint8Array, at: number): number {
  return p[at]! | (p[at + 1]! << 8);
}
function u32(p: Uint8Array, at: number): number {
  return (p[at]! | (p[at + 1]! << 8) | (p[at + 2]! << 16)) + p[at + 3]! * 2 ** 24;
}

/**
 * The messages of one delivered frame, in order, read in place. The batch
 * object and the bytes it views are reused for the next frame: read what you
 * need during the callback, or keep `message(i)` (a copy).
 */
export class FeedBatch {
  #p: Uint8Array = new Uint8Array(0);
  #view: DataView = new DataView(new ArrayBuffer(8));
  // Offset in the record of each delivered message (the frame's skip leading ones left out).
  readonly #at = new Int32Array(MAX_MESSAGES);
  #length = 0;
  #firstIndex = 0;

  /** Messages in the batch (the frame's, minus those an overlapping earlier frame delivered). */
  get length(): number {
    return this.#length;
  }
  get channel(): number {
    return u16(this.#p, R_CHANNEL);
  }
  get session(): number {
    return u32(this.#p, R_SESSION);
  }
  get line(): FeedLine {
    return LINES[this.#p[R_LINE]!] ?? 'RC';
  }
  /** A snapshot frame: its messages are state as of firstSeq - 1, not live messages. */
  get snapshot(): boolean {
    return (this.#p[R_FLAGS]! & FrameFlags.SNAPSHOT) !== 0;
  }
  /** Delivered from a retransmission (lost on every line). */
  get recovered(): boolean {
    return (this.#p[R_FLAGS]! & FrameFlags.RETRANSMISSION) !== 0;
  }
  get sendTimeNs(): bigint {
    return this.#view.getBigUint64(R_SEND_TIME, true);
  }
  get receiveTimeNs(): bigint {
    return this.#view.getBigUint64(R_RECEIVE_TIME, true);
  }
  /** The sequence of message i (for a snapshot frame: the sequence its state is as of). */
  seq(i: number): bigint {
    const first = this.#view.getBigUint64(R_FIRST_SEQ, true);
    return this.snapshot ? first - 1n : first + BigInt(this.#firstIndex + this.#index(i));
  }
  type(i: number): number {
    return u16(this.#p, this.#at[this.#index(i)]! + 2);
  }
  instrumentId(i: number): number {
    return u32(this.#p, this.#at[this.#index(i)]! + 4);
  }
  key(i: number): number {
    return u16(this.#p, this.#at[this.#index(i)]! + 8);
  }
  action(i: number): number {
    return this.#p[this.#at[this.#index(i)]! + 10]!;
  }
  /** The protobuf body of message i: a view of ring memory, valid only during the callback. */
  body(i: number): Uint8Array {
    const at = this.#at[this.#index(i)]!;
    return this.#p.subarray(at + MESSAGE_HEADER_BYTES, at + u16(this.#p, at));
  }
  /** Decodes message i's body (protobuf); undefined for an unknown type; throws BodyDecodeError for garbage. */
  decode(i: number): MarketDataMessage | undefined {
    return decodeMessage({ type: this.type(i), body: this.body(i) });
  }
  /** Message i as a FeedMessage that stays valid (its body copied). */
  message(i: number): FeedMessage {
    return this.#message(this.#frameFields(), i, this.body(i).slice());
  }
  /** Every message as FeedMessages that stay valid: one copy of the frame, their bodies views into it. */
  messages(): FeedMessage[] {
    const n = this.#length;
    if (n === 0) return [];
    const from = this.#at[0]!;
    const last = this.#at[n - 1]!;
    const copy = this.#p.slice(from, last + u16(this.#p, last));
    const frame = this.#frameFields();
    const out = new Array<FeedMessage>(n);
    for (let i = 0; i < n; i++) {
      const at = this.#at[i]! - from;
      out[i] = this.#message(frame, i, copy.subarray(at + MESSAGE_HEADER_BYTES, at + u16(copy, at)));
    }
    return out;
  }

  /** @internal Points the batch at a FEED_FRAME record's payload (ring memory). */
  reset(record: Uint8Array): void {
    this.#p = record;
    this.#view = new DataView(record.buffer, record.byteOffset, record.byteLength);
    const count = Math.min(u16(record, R_COUNT), MAX_MESSAGES);
    const skip = Math.min(u16(record, R_SKIP), count);
    let at = FRAME_RECORD_HEADER_BYTES + 32; // the frame header (docs/protocol.md 2.3)
    for (let i = 0; i < skip; i++) at += u16(record, at);
    for (let i = 0; i < count - skip; i++) {
      this.#at[i] = at;
      at += u16(record, at);
    }
    this.#firstIndex = skip;
    this.#length = count - skip;
  }

  #index(i: number): number {
    if (!(i >= 0 && i < this.#length)) throw new RangeError(`FeedBatch: no message ${i} in a batch of ${this.#length}`);
    return i;
  }

  #frameFields(): FrameFields {
    const first = this.#view.getBigUint64(R_FIRST_SEQ, true);
    const snapshot = this.snapshot;
    return {
      channel: this.channel,
      session: this.session,
      line: this.line,
      snapshot,
      recovered: this.recovered,
      sendTimeNs: this.sendTimeNs,
      receiveTimeNs: this.receiveTimeNs,
      // A snapshot frame's first_seq is last_sequence + 1: its messages are state as of last_sequence.
      seqOfFirst: snapshot ? first - 1n : first + BigInt(this.#firstIndex),
    };
  }

  #message(f: FrameFields, i: number, body: Uint8Array): FeedMessage {
    const at = this.#at[i]!;
    const p = this.#p;
    const seq = f.snapshot ? f.seqOfFirst : f.seqOfFirst + BigInt(i);
    return new FeedMessageImpl(f.channel, f.session, f.line, f.snapshot, f.recovered, f.sendTimeNs, f.receiveTimeNs, seq,
      u16(p, at + 2), u32(p, at + 4), u16(p, at + 8), p[at + 10]!, body);
  }
}

// What every message of a frame shares, read once per frame.
type FrameFields = Pick<FeedMessage, 'channel' | 'session' | 'line' | 'snapshot' | 'recovered' | 'sendTimeNs' | 'receiveTimeNs'> & {
  /** The sequence of the batch's first message (every message's, in a snapshot frame). */
  readonly seqOfFirst: bigint;
};

class FeedMessageImpl implements FeedMessage {
  constructor(
    readonly channel: number,
    readonly session: number,
    readonly line: FeedLine,
    readonly snapshot: boolean,
    readonly recovered: boolean,
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
