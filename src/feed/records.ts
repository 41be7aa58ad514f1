// The feed's engine records (docs/protocol.md 2.11; native/src/feed/
// feed_records.h is the C++ side): FEED_PUBLISH written into toEngine, and
// FEED_FRAME / FEED_GAP / FEED_SESSION read from fromEngine. Little-endian.
import { FRAME_HEADER_BYTES, MESSAGE_HEADER_BYTES, type MessageInput } from './frame.js';

export const PUBLISH_HEADER_BYTES = 16;
export const FRAME_RECORD_HEADER_BYTES = 40;
export const GAP_RECORD_BYTES = 24;
export const SESSION_RECORD_BYTES = 24;

/** Bytes `messages` take in a PUBLISH record (header + body each). */
export function encodedLength(messages: readonly MessageInput[]): number {
  let n = 0;
  for (const m of messages) n += MESSAGE_HEADER_BYTES + m.body.byteLength;
  return n;
}

/** Writes a PUBLISH record's payload at `offset` of `bytes`. */
export function writePublish(
  bytes: Uint8Array,
  offset: number,
  publisher: number,
  channel: number,
  messages: readonly MessageInput[],
  from: number,
  to: number,
  enqueueNs: bigint,
): void {
  writePublishHeader(bytes, offset, publisher, channel, to - from, enqueueNs);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + offset);
  let at = PUBLISH_HEADER_BYTES;
  for (let i = from; i < to; i++) at += writeMessage(bytes, dv, offset + at, at, messages[i]!);
}

/**
 * Writes one message (12-byte message header + body, docs/protocol.md 2.4)
 * at `offset` of `bytes`, whose DataView `dv` starts `offset - dvOffset`
 * bytes earlier. Returns the bytes written.
 */
export function writeMessage(bytes: Uint8Array, dv: DataView, offset: number, dvOffset: number, m: MessageInput): number {
  const len = MESSAGE_HEADER_BYTES + m.body.byteLength;
  dv.setUint16(dvOffset, len, true);
  dv.setUint16(dvOffset + 2, m.type, true);
  dv.setUint32(dvOffset + 4, m.instrumentId, true);
  dv.setUint16(dvOffset + 8, m.key ?? 0, true);
  dv.setUint8(dvOffset + 10, m.action ?? 0);
  dv.setUint8(dvOffset + 11, 0);
  bytes.set(m.body, offset + MESSAGE_HEADER_BYTES);
  return len;
}

/** Writes a PUBLISH record's header at `offset` of `bytes`; the messages (`count`, already encoded) follow it. */
export function writePublishHeader(bytes: Uint8Array, offset: number, publisher: number, channel: number, count: number, enqueueNs: bigint): void {
  const dv = new DataView(bytes.buffer, bytes.byteOffset + offset, PUBLISH_HEADER_BYTES);
  dv.setUint32(0, publisher, true);
  dv.setUint16(4, channel, true);
  dv.setUint16(6, count, true);
  dv.setBigUint64(8, enqueueNs, true);
}

export type FeedLine = 'A' | 'B' | 'RC';
const LINES: readonly FeedLine[] = ['A', 'B', 'RC'];
function lineOf(code: number): FeedLine {
  return LINES[code] ?? 'RC';
}

export interface FrameRecord {
  subscriber: number;
  channel: number;
  /** 'A' or 'B': the line whose copy won; 'RC': it came over the recovery connection (retransmission or snapshot). */
  line: FeedLine;
  flags: number;
  firstSeq: bigint;
  messageCount: number;
  /** Leading messages already delivered (an overlap with an earlier frame). */
  skip: number;
  session: number;
  sendTimeNs: bigint;
  receiveTimeNs: bigint;
  /** The frame bytes: a view of ring memory, valid only during the handler call. */
  frame: Uint8Array;
}

export function readFrameRecord(p: Uint8Array): FrameRecord {
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  return {
    subscriber: dv.getUint32(0, true),
    channel: dv.getUint16(4, true),
    line: lineOf(dv.getUint8(6)),
    flags: dv.getUint8(7),
    firstSeq: dv.getBigUint64(8, true),
    messageCount: dv.getUint16(16, true),
    skip: dv.getUint16(18, true),
    session: dv.getUint32(20, true),
    sendTimeNs: dv.getBigUint64(24, true),
    receiveTimeNs: dv.getBigUint64(32, true),
    frame: p.subarray(FRAME_RECORD_HEADER_BYTES),
  };
}

export interface GapRecord {
  subscriber: number;
  channel: number;
  fromSeq: bigint;
  count: bigint;
}

export function readGapRecord(p: Uint8Array): GapRecord {
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  return { subscriber: dv.getUint32(0, true), channel: dv.getUint16(4, true), fromSeq: dv.getBigUint64(8, true), count: dv.getBigUint64(16, true) };
}

export interface SessionRecord {
  subscriber: number;
  channel: number;
  /** 0 when the channel is seen for the first time. */
  oldSession: number;
  newSession: number;
  nextSeq: bigint;
}

export function readSessionRecord(p: Uint8Array): SessionRecord {
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  return {
    subscriber: dv.getUint32(0, true),
    channel: dv.getUint16(4, true),
    oldSession: dv.getUint32(8, true),
    newSession: dv.getUint32(12, true),
    nextSeq: dv.getBigUint64(16, true),
  };
}

export { FRAME_HEADER_BYTES };
