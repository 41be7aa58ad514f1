// Feed frames in TS: the same format as native/src/feed/frame.h
// (docs/protocol.md Part 2 is normative). Parsing gives views into the
// caller's buffer, never copies; encoding is for tests, replay and tools (the
// engine packs live frames natively). Errors carry the native error names.

export const FRAME_VERSION = 1;
export const FRAME_HEADER_BYTES = 32;
export const MESSAGE_HEADER_BYTES = 12;
export const DEFAULT_FRAME_BYTES = 1024;
export const MIN_FRAME_BYTES = 128;
export const MAX_FRAME_BYTES = 4096;

export const FrameFlags = {
  RETRANSMISSION: 0x01,
  SNAPSHOT: 0x02,
  HEARTBEAT: 0x04,
  END_OF_SESSION: 0x08,
} as const;
const KNOWN_FLAGS = 0x0f;
const CONTROL_FLAGS = FrameFlags.HEARTBEAT | FrameFlags.END_OF_SESSION;

/** Message header action byte: BookLevelUpdate.Action numbers (0 for other types). */
export const BookAction = { NONE: 0, ADD: 1, MODIFY: 2, DELETE: 3 } as const;

/** Conflation key of a BOOK_LEVEL_UPDATE: bit 8 = side (0 bid, 1 ask), bits 0-7 = level. */
export function bookKey(ask: boolean, level: number): number {
  if (!Number.isInteger(level) || level < 0 || level > 255) {
    throw new RangeError(`book level must be an integer 0..255, got ${level}`);
  }
  return (ask ? 0x100 : 0) | level;
}

/** The native FrameError names, in the same order (frame_error_name()). */
export const FRAME_ERRORS = [
  'truncated_header',
  'bad_version',
  'unknown_flags',
  'reserved_not_zero',
  'bad_frame_length',
  'truncated_frame',
  'trailing_bytes',
  'zero_session',
  'zero_sequence',
  'sequence_overflow',
  'bad_control_frame',
  'empty_frame',
  'truncated_message_header',
  'zero_length_message',
  'message_too_short',
  'message_overrun',
  'count_mismatch',
  'bad_message_type',
] as const;
export type FrameErrorCode = (typeof FRAME_ERRORS)[number];

export class FrameError extends Error {
  readonly code: FrameErrorCode;
  constructor(code: FrameErrorCode, detail: string) {
    super(`invalid feed frame (${code}): ${detail}`);
    this.name = 'FrameError';
    this.code = code;
  }
}

export interface FrameHeader {
  version: number;
  flags: number;
  channel: number;
  session: number;
  firstSeq: bigint;
  sendTimeNs: bigint;
  messageCount: number;
  frameLength: number;
}

export interface MessageView {
  /** firstSeq + index (not a live sequence in snapshot frames). */
  seq: bigint;
  type: number;
  instrumentId: number;
  key: number;
  action: number;
  /** Header + body: a view into the frame buffer. */
  bytes: Uint8Array;
  /** The protobuf body: a view into the frame buffer. */
  body: Uint8Array;
}

export interface ParsedFrame {
  header: FrameHeader;
  /** Exactly frameLength bytes: a view into the input. */
  bytes: Uint8Array;
  messages: MessageView[];
}

const U64_MAX = (1n << 64n) - 1n;

function view(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

export function readFrameHeader(buf: Uint8Array): FrameHeader {
  if (buf.byteLength < FRAME_HEADER_BYTES) {
    throw new FrameError('truncated_header', `${buf.byteLength} bytes, a frame header is ${FRAME_HEADER_BYTES}`);
  }
  const v = view(buf);
  return {
    version: v.getUint8(0),
    flags: v.getUint8(1),
    channel: v.getUint16(2, true),
    session: v.getUint32(4, true),
    firstSeq: v.getBigUint64(8, true),
    sendTimeNs: v.getBigUint64(16, true),
    messageCount: v.getUint16(24, true),
    frameLength: v.getUint16(26, true),
  };
}

/**
 * Validates a whole frame and returns its header and message views.
 * mode 'exact': the buffer is one frame (a UD payload). 'prefix': the buffer
 * starts with a frame; bytes after frameLength belong to the next one.
 * Throws FrameError (never anything else) for any malformed input.
 */
export function parseFrame(buf: Uint8Array, mode: 'exact' | 'prefix' = 'exact'): ParsedFrame {
  const h = readFrameHeader(buf);
  const v = view(buf);
  if (h.version !== FRAME_VERSION) throw new FrameError('bad_version', `version ${h.version}, expected ${FRAME_VERSION}`);
  if ((h.flags & ~KNOWN_FLAGS) !== 0) throw new FrameError('unknown_flags', `flags 0x${h.flags.toString(16)}`);
  const reserved = v.getUint32(28, true);
  if (reserved !== 0) throw new FrameError('reserved_not_zero', `frame header bytes 28-31 are ${reserved}`);
  const length = h.frameLength;
  if (length < FRAME_HEADER_BYTES || length > MAX_FRAME_BYTES) {
    throw new FrameError('bad_frame_length', `frame_length ${length}, expected ${FRAME_HEADER_BYTES}..${MAX_FRAME_BYTES}`);
  }
  if (length > buf.byteLength) throw new FrameError('truncated_frame', `frame_length ${length}, only ${buf.byteLength} bytes`);
  if (mode === 'exact' && buf.byteLength !== length) {
    throw new FrameError('trailing_bytes', `${buf.byteLength} bytes, frame_length ${length}`);
  }
  if (h.session === 0) throw new FrameError('zero_session', 'session 0 is never used');
  if (h.firstSeq === 0n) throw new FrameError('zero_sequence', 'sequences start at 1');
  if (h.firstSeq > U64_MAX - BigInt(h.messageCount)) {
    throw new FrameError('sequence_overflow', `first_seq ${h.firstSeq} + ${h.messageCount} messages`);
  }
  const bytes = buf.subarray(0, length);
  const control = h.flags & CONTROL_FLAGS;
  if (control !== 0) {
    const oneFlag = control === FrameFlags.HEARTBEAT || control === FrameFlags.END_OF_SESSION;
    if (!oneFlag || h.messageCount !== 0 || (h.flags & FrameFlags.SNAPSHOT) !== 0 || length !== FRAME_HEADER_BYTES) {
      throw new FrameError('bad_control_frame', `flags 0x${h.flags.toString(16)}, ${h.messageCount} messages, ${length} bytes`);
    }
    return { header: h, bytes, messages: [] };
  }
  if (h.messageCount === 0) throw new FrameError('empty_frame', 'no messages and not a heartbeat or end-of-session');

  const messages: MessageView[] = [];
  let off = FRAME_HEADER_BYTES;
  for (let i = 0; i < h.messageCount; i++) {
    const left = length - off;
    if (left === 0) throw new FrameError('count_mismatch', `message_count ${h.messageCount}, found ${i}`);
    if (left < MESSAGE_HEADER_BYTES) {
      throw new FrameError('truncated_message_header', `${left} bytes left for message ${i}'s ${MESSAGE_HEADER_BYTES}-byte header`);
    }
    const mlen = v.getUint16(off, true);
    if (mlen === 0) throw new FrameError('zero_length_message', `message ${i} at offset ${off}`);
    if (mlen < MESSAGE_HEADER_BYTES) throw new FrameError('message_too_short', `message ${i} length ${mlen}`);
    if (mlen > left) throw new FrameError('message_overrun', `message ${i} length ${mlen}, ${left} bytes left`);
    const type = v.getUint16(off + 2, true);
    if (type === 0) throw new FrameError('bad_message_type', `message ${i} has type 0`);
    if (v.getUint8(off + 11) !== 0) throw new FrameError('reserved_not_zero', `message ${i} byte 11`);
    messages.push({
      seq: h.firstSeq + BigInt(i),
      type,
      instrumentId: v.getUint32(off + 4, true),
      key: v.getUint16(off + 8, true),
      action: v.getUint8(off + 10),
      bytes: buf.subarray(off, off + mlen),
      body: buf.subarray(off + MESSAGE_HEADER_BYTES, off + mlen),
    });
    off += mlen;
  }
  if (off !== length) {
    throw new FrameError('count_mismatch', `${length - off} bytes after message_count ${h.messageCount} messages`);
  }
  return { header: h, bytes, messages };
}

export type ParseResult = { ok: true; frame: ParsedFrame } | { ok: false; error: FrameError };

/** parseFrame without throwing. */
export function tryParseFrame(buf: Uint8Array, mode: 'exact' | 'prefix' = 'exact'): ParseResult {
  try {
    return { ok: true, frame: parseFrame(buf, mode) };
  } catch (e) {
    if (e instanceof FrameError) return { ok: false, error: e };
    throw e;
  }
}

export interface MessageInput {
  type: number;
  instrumentId: number;
  key?: number;
  action?: number;
  body: Uint8Array;
}

export type AppendStatus = 'ok' | 'frame_full' | 'too_large' | 'bad_type';

/** Builds frames like the native FramePacker: start → append* → finish. */
export class FramePacker {
  readonly frameBytes: number;
  private readonly buf: Uint8Array;
  private readonly dv: DataView;
  private used = FRAME_HEADER_BYTES;
  private count = 0;

  constructor(frameBytes = DEFAULT_FRAME_BYTES) {
    if (!Number.isInteger(frameBytes) || frameBytes < MIN_FRAME_BYTES || frameBytes > MAX_FRAME_BYTES) {
      throw new RangeError(`frame size must be ${MIN_FRAME_BYTES}..${MAX_FRAME_BYTES} bytes, got ${frameBytes}`);
    }
    this.frameBytes = frameBytes;
    this.buf = new Uint8Array(frameBytes);
    this.dv = view(this.buf);
  }

  start(channel: number, session: number, flags = 0): void {
    this.buf.fill(0, 0, FRAME_HEADER_BYTES);
    this.dv.setUint8(0, FRAME_VERSION);
    this.dv.setUint8(1, flags);
    this.dv.setUint16(2, channel, true);
    this.dv.setUint32(4, session, true);
    this.used = FRAME_HEADER_BYTES;
    this.count = 0;
  }

  get messageCount(): number {
    return this.count;
  }

  get maxBodyBytes(): number {
    return this.frameBytes - FRAME_HEADER_BYTES - MESSAGE_HEADER_BYTES;
  }

  append(m: MessageInput): AppendStatus {
    if (m.type === 0) return 'bad_type';
    if (m.body.byteLength > this.maxBodyBytes) return 'too_large';
    const len = MESSAGE_HEADER_BYTES + m.body.byteLength;
    if (len > this.frameBytes - this.used) return 'frame_full';
    const off = this.used;
    this.dv.setUint16(off, len, true);
    this.dv.setUint16(off + 2, m.type, true);
    this.dv.setUint32(off + 4, m.instrumentId, true);
    this.dv.setUint16(off + 8, m.key ?? 0, true);
    this.dv.setUint8(off + 10, m.action ?? 0);
    this.dv.setUint8(off + 11, 0);
    this.buf.set(m.body, off + MESSAGE_HEADER_BYTES);
    this.used += len;
    this.count++;
    return 'ok';
  }

  /** Stamps the header and returns a copy of the frame. */
  finish(firstSeq: bigint, sendTimeNs: bigint): Uint8Array {
    this.dv.setBigUint64(8, firstSeq, true);
    this.dv.setBigUint64(16, sendTimeNs, true);
    this.dv.setUint16(24, this.count, true);
    this.dv.setUint16(26, this.used, true);
    return this.buf.slice(0, this.used);
  }
}

export interface FrameInput {
  flags?: number;
  channel: number;
  session: number;
  firstSeq: bigint;
  sendTimeNs: bigint;
}

/** One frame holding all of `messages`; throws if they do not fit in maxBytes. */
export function encodeFrame(h: FrameInput, messages: MessageInput[], maxBytes = MAX_FRAME_BYTES): Uint8Array {
  const p = new FramePacker(maxBytes);
  p.start(h.channel, h.session, h.flags ?? 0);
  messages.forEach((m, i) => {
    const st = p.append(m);
    if (st !== 'ok') throw new RangeError(`message ${i} (${m.body.byteLength}-byte body): ${st} in a ${maxBytes}-byte frame`);
  });
  return p.finish(h.firstSeq, h.sendTimeNs);
}

/** A heartbeat or end-of-session frame: no messages, firstSeq = the next sequence. */
export function encodeControlFrame(
  flag: typeof FrameFlags.HEARTBEAT | typeof FrameFlags.END_OF_SESSION,
  channel: number,
  session: number,
  nextSeq: bigint,
  sendTimeNs: bigint,
): Uint8Array {
  const buf = new Uint8Array(FRAME_HEADER_BYTES);
  const dv = view(buf);
  dv.setUint8(0, FRAME_VERSION);
  dv.setUint8(1, flag);
  dv.setUint16(2, channel, true);
  dv.setUint32(4, session, true);
  dv.setBigUint64(8, nextSeq, true);
  dv.setBigUint64(16, sendTimeNs, true);
  dv.setUint16(26, FRAME_HEADER_BYTES, true);
  return buf;
}
