// Tick files: what `qpgate record` writes from a live subscription and the
// replay source (sources/replay.ts) publishes again.
//
//   file    := header record*
//   header  := "QPGTICK1" (8 bytes) | u32 version (1) | u32 reserved (0)
//   record  := u32 length of what follows | u64 at_ns | u16 channel | u16 type
//              | u32 instrument_id | u32 key | u8 action | u8 flags | u16 reserved
//              | body (protobuf, length - 24 bytes)
//
// Little-endian, like the feed frames. at_ns is the message's receive time
// relative to the first record, so a replay keeps the recording's pacing;
// type, instrument id, key and action are the feed's message header
// (docs/protocol.md §2.6) and the body is kept as received (not decoded).
// flags bit 0: the message came from a snapshot. A recording cut short (the
// recorder was killed mid-write) ends in a partial record: readers stop
// before it and report its size.
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';

import type { MessageInput } from './frame.js';

export const TICK_FILE_MAGIC = 'QPGTICK1';
export const TICK_FILE_VERSION = 1;
const HEADER_BYTES = 16;
const RECORD_FIXED_BYTES = 24;  // after the length field
const MAX_BODY_BYTES = 4096;    // no feed message is larger than the largest frame

export interface TickRecord extends MessageInput {
  readonly channel: number;
  /** Nanoseconds since the first record. */
  readonly atNs: bigint;
  readonly snapshot: boolean;
}

export class TickFileError extends Error {}

/** Appends records; flush() writes what is buffered, close() flushes and syncs. */
export class TickFileWriter {
  readonly #fd: number;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #records = 0;
  #origin: bigint | undefined;

  constructor(path: string) {
    this.#fd = openSync(path, 'w', 0o644);
    const header = Buffer.alloc(HEADER_BYTES);
    header.write(TICK_FILE_MAGIC, 0, 'latin1');
    header.writeUInt32LE(TICK_FILE_VERSION, 8);
    writeSync(this.#fd, header);
  }

  get records(): number {
    return this.#records;
  }

  /** `receivedNs`: any monotonic or realtime clock in ns; the first record is time 0. */
  append(m: Omit<TickRecord, 'atNs'>, receivedNs: bigint): void {
    if (m.body.length > MAX_BODY_BYTES) throw new TickFileError(`a message body of ${m.body.length} bytes exceeds ${MAX_BODY_BYTES}`);
    this.#origin ??= receivedNs;
    const r = Buffer.alloc(4 + RECORD_FIXED_BYTES + m.body.length);
    r.writeUInt32LE(RECORD_FIXED_BYTES + m.body.length, 0);
    r.writeBigUInt64LE(receivedNs > this.#origin ? receivedNs - this.#origin : 0n, 4);
    r.writeUInt16LE(m.channel, 12);
    r.writeUInt16LE(m.type, 14);
    r.writeUInt32LE(m.instrumentId, 16);
    r.writeUInt32LE(m.key ?? 0, 20);
    r.writeUInt8(m.action ?? 0, 24);
    r.writeUInt8(m.snapshot ? 1 : 0, 25);
    r.set(m.body, 28);
    this.#chunks.push(r);
    this.#buffered += r.length;
    ++this.#records;
    if (this.#buffered >= 1 << 20) this.flush();
  }

  flush(): void {
    if (this.#chunks.length === 0) return;
    writeSync(this.#fd, Buffer.concat(this.#chunks, this.#buffered));
    this.#chunks = [];
    this.#buffered = 0;
  }

  close(): void {
    this.flush();
    fsyncSync(this.#fd);
    closeSync(this.#fd);
  }
}

export interface TickFile {
  readonly records: TickRecord[];
  /** Bytes of a partial last record that were left out (0: the file ends cleanly). */
  readonly truncatedBytes: number;
}

/** Reads a whole tick file; throws TickFileError naming what is wrong with a file that is not one. */
export function readTickFile(path: string): TickFile {
  return parseTickFile(readFileSync(path), path);
}

/** A tick file's bytes as records; `path` names it in errors. Throws TickFileError. */
export function parseTickFile(data: Buffer, path: string): TickFile {
  if (data.length < HEADER_BYTES || data.toString('latin1', 0, 8) !== TICK_FILE_MAGIC) {
    throw new TickFileError(`${path}: not a qpgate tick file (no ${TICK_FILE_MAGIC} header)`);
  }
  const version = data.readUInt32LE(8);
  if (version !== TICK_FILE_VERSION) throw new TickFileError(`${path}: tick file version ${version}; this qpgate reads version ${TICK_FILE_VERSION}`);
  const records: TickRecord[] = [];
  let at = HEADER_BYTES;
  while (at + 4 <= data.length) {
    const length = data.readUInt32LE(at);
    if (length < RECORD_FIXED_BYTES || length > RECORD_FIXED_BYTES + MAX_BODY_BYTES) {
      throw new TickFileError(`${path}: record at byte ${at} claims ${length} bytes (expected ${RECORD_FIXED_BYTES}..${RECORD_FIXED_BYTES + MAX_BODY_BYTES})`);
    }
    if (at + 4 + length > data.length) break;  // a partial tail
    const r = at + 4;
    records.push({
      atNs: data.readBigUInt64LE(r),
      channel: data.readUInt16LE(r + 8),
      type: data.readUInt16LE(r + 10),
      instrumentId: data.readUInt32LE(r + 12),
      key: data.readUInt32LE(r + 16),
      action: data.readUInt8(r + 20),
      snapshot: (data.readUInt8(r + 21) & 1) !== 0,
      body: new Uint8Array(data.subarray(r + RECORD_FIXED_BYTES, r + length)),
    });
    at += 4 + length;
  }
  return { records, truncatedBytes: data.length - at };
}
