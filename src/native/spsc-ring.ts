// The engine's SPSC record ring, JS side: the same protocol as
// native/src/engine/spsc_ring.h over the same memory (an external
// ArrayBuffer from the addon, or any ArrayBuffer in tests). The layout
// comment in spsc_ring.h is normative; the constants below must match it
// (a test compares them with the addon's ringLayout).
//
// Positions (tail, head) are int64 in the trailer, read and written with
// Atomics on a BigInt64Array; record headers are int32 pairs read through an
// Int32Array (records are 8-byte aligned). Atomics are sequentially
// consistent, which is at least what the C++ side's acquire/release needs,
// and gives the full fence the wake-up protocol needs.

export const RING_LAYOUT = {
  tailOffset: 0,
  headOffset: 128,
  waitingOffset: 256,
  trailerLength: 384,
  headerLength: 8,
  alignment: 8,
  paddingType: -1,
  minCapacity: 1024,
  maxCapacity: 2 ** 30,
} as const;

const align8 = (n: number): number => (n + 7) & ~7;

export function isValidRingCapacity(capacity: number): boolean {
  return (
    Number.isInteger(capacity) &&
    capacity >= RING_LAYOUT.minCapacity &&
    capacity <= RING_LAYOUT.maxCapacity &&
    (capacity & (capacity - 1)) === 0
  );
}

/** Bytes a ring of `capacity` data bytes occupies, trailer included. */
export function ringByteLength(capacity: number): number {
  return capacity + RING_LAYOUT.trailerLength;
}

/** Typed views over one ring's memory; shared by producer and consumer code. */
class RingMemory {
  readonly capacity: number;
  readonly mask: number;
  readonly bytes: Uint8Array;
  readonly i32: Int32Array;
  readonly i64: BigInt64Array;
  readonly tailIndex: number;
  readonly headIndex: number;
  readonly waitingIndex: number;

  constructor(buffer: ArrayBuffer, capacity: number) {
    if (!isValidRingCapacity(capacity)) {
      throw new RangeError(`ring capacity must be a power of two from 1024 to 2^30, got ${capacity}`);
    }
    if (buffer.byteLength < ringByteLength(capacity)) {
      throw new RangeError(
        `ring buffer of ${buffer.byteLength} bytes is too small for capacity ${capacity} ` +
          `(needs ${ringByteLength(capacity)}; a detached buffer has 0)`,
      );
    }
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.bytes = new Uint8Array(buffer, 0, ringByteLength(capacity));
    this.i32 = new Int32Array(buffer, 0, ringByteLength(capacity) / 4);
    this.i64 = new BigInt64Array(buffer, 0, ringByteLength(capacity) / 8);
    this.tailIndex = (capacity + RING_LAYOUT.tailOffset) / 8;
    this.headIndex = (capacity + RING_LAYOUT.headOffset) / 8;
    this.waitingIndex = (capacity + RING_LAYOUT.waitingOffset) / 4;
  }

  get maxRecordLength(): number {
    return this.capacity / 8;
  }
  loadTail(): number {
    return Number(Atomics.load(this.i64, this.tailIndex));
  }
  loadHead(): number {
    return Number(Atomics.load(this.i64, this.headIndex));
  }
  /** Bytes published and not yet consumed. */
  used(): number {
    return this.loadTail() - this.loadHead();
  }
  /** A detached buffer (engine stopped) has no bytes left. */
  get detached(): boolean {
    return this.bytes.byteLength === 0;
  }
}

export class RingProducer {
  readonly #ring: RingMemory;
  #tail: number;
  #published: number;
  #headCache: number;

  constructor(buffer: ArrayBuffer, capacity: number) {
    this.#ring = new RingMemory(buffer, capacity);
    this.#tail = this.#ring.loadTail();
    this.#published = this.#tail;
    this.#headCache = this.#ring.loadHead();
  }

  get capacity(): number {
    return this.#ring.capacity;
  }
  /** The largest payload a record can carry. */
  get maxPayloadLength(): number {
    return this.#ring.maxRecordLength - RING_LAYOUT.headerLength;
  }
  /** The ring's data bytes, for writing a claimed payload in place. */
  get bytes(): Uint8Array {
    return this.#ring.bytes;
  }

  /**
   * Reserves a record with `length` payload bytes and writes its header.
   * Returns the byte offset of the payload in `bytes`, or -1 when it does not
   * fit now (nothing written). Invisible to the consumer until publish().
   */
  claim(type: number, length: number): number {
    const ring = this.#ring;
    if (!Number.isInteger(length) || length < 0 || length > this.maxPayloadLength || !(type > 0)) {
      throw new RangeError(
        `record type must be > 0 and payload length 0..${this.maxPayloadLength}, got type ${type}, length ${length}`,
      );
    }
    const record = RING_LAYOUT.headerLength + length;
    const aligned = align8(record);
    let index = this.#tail & ring.mask;
    const toEnd = ring.capacity - index;
    const padding = aligned > toEnd ? toEnd : 0;
    const required = padding + aligned;
    if (required > ring.capacity - (this.#tail - this.#headCache)) {
      this.#headCache = ring.loadHead();
      if (required > ring.capacity - (this.#tail - this.#headCache)) return -1;
    }
    if (padding !== 0) {
      ring.i32[index >> 2] = padding;
      ring.i32[(index >> 2) + 1] = RING_LAYOUT.paddingType;
      this.#tail += padding;
      index = 0;
    }
    ring.i32[index >> 2] = record;
    ring.i32[(index >> 2) + 1] = type;
    this.#tail += aligned;
    return index + RING_LAYOUT.headerLength;
  }

  /** Copies one record in; false when it does not fit now. */
  write(type: number, payload: Uint8Array): boolean {
    const at = this.claim(type, payload.byteLength);
    if (at < 0) return false;
    this.#ring.bytes.set(payload, at);
    return true;
  }

  /** One Atomics.store of tail makes every record since the last publish visible. */
  publish(): boolean {
    if (this.#tail === this.#published) return false;
    Atomics.store(this.#ring.i64, this.#ring.tailIndex, BigInt(this.#tail));
    this.#published = this.#tail;
    return true;
  }

  /** After publish(): has the consumer announced that it sleeps? (cheap; no write) */
  consumerWaiting(): boolean {
    return Atomics.load(this.#ring.i32, this.#ring.waitingIndex) === 1;
  }

  /** After publish(): take the duty to wake a waiting consumer (exchange 1 -> 0). */
  takeWakeDuty(): boolean {
    return Atomics.exchange(this.#ring.i32, this.#ring.waitingIndex, 0) === 1;
  }

  unpublished(): number {
    return this.#tail - this.#published;
  }
  used(): number {
    return this.#ring.used();
  }
  get detached(): boolean {
    return this.#ring.detached;
  }
}

/**
 * Called per record with the ring's bytes and the payload's offset and
 * length (no allocation per record). Return false to stop before this
 * record, leaving it in the ring.
 */
export type RecordVisitor = (type: number, bytes: Uint8Array, offset: number, length: number) => boolean | void;

export class RingConsumer {
  readonly #ring: RingMemory;
  #head: number;
  #corrupt = false;

  constructor(buffer: ArrayBuffer, capacity: number) {
    this.#ring = new RingMemory(buffer, capacity);
    this.#head = this.#ring.loadHead();
  }

  get capacity(): number {
    return this.#ring.capacity;
  }
  get corrupt(): boolean {
    return this.#corrupt;
  }
  get detached(): boolean {
    return this.#ring.detached;
  }

  /**
   * Visits up to `limit` records in order, then stores head once. Returns
   * how many. `beforeRelease(count)` runs after the visits and before head
   * moves: while it runs, views into `bytes` still hold the records (the
   * producer cannot reuse that space yet). Head moves even if it throws.
   */
  read(visit: RecordVisitor, limit = Number.MAX_SAFE_INTEGER, beforeRelease?: (count: number) => void): number {
    const ring = this.#ring;
    if (this.#corrupt || ring.detached) return 0;
    const tail = ring.loadTail();
    let head = this.#head;
    let count = 0;
    try {
      while (head < tail && count < limit) {
        const index = head & ring.mask;
        const length = ring.i32[index >> 2]!;
        const type = ring.i32[(index >> 2) + 1]!;
        const aligned = align8(length);
        if (length < RING_LAYOUT.headerLength || aligned > tail - head || index + aligned > ring.capacity) {
          this.#corrupt = true;
          break;
        }
        if (type !== RING_LAYOUT.paddingType) {
          if (visit(type, ring.bytes, index + RING_LAYOUT.headerLength, length - RING_LAYOUT.headerLength) === false) {
            break;
          }
          count++;
        }
        head += aligned;
      }
      beforeRelease?.(count);
    } finally {
      if (head !== this.#head) {
        this.#head = head;
        Atomics.store(ring.i64, ring.headIndex, BigInt(head));
      }
    }
    return count;
  }

  isEmpty(): boolean {
    return this.#ring.detached || this.#ring.loadTail() === this.#head;
  }

  /**
   * Before sleeping: announce, then re-check. True = nothing arrived, the
   * producer will wake us for the next record; false = records are there,
   * consume them instead (the announcement is withdrawn).
   */
  announceWaiting(): boolean {
    const ring = this.#ring;
    if (ring.detached) return true;
    Atomics.store(ring.i32, ring.waitingIndex, 1);
    if (!this.isEmpty()) {
      Atomics.store(ring.i32, ring.waitingIndex, 0);
      return false;
    }
    return true;
  }

  clearWaiting(): void {
    if (!this.#ring.detached) Atomics.store(this.#ring.i32, this.#ring.waitingIndex, 0);
  }

  used(): number {
    return this.#ring.detached ? 0 : this.#ring.used();
  }
}

/** A fresh ring in an ordinary ArrayBuffer (tests, benchmarks, workers). */
export function createRingBuffer(capacity: number): ArrayBuffer {
  if (!isValidRingCapacity(capacity)) {
    throw new RangeError(`ring capacity must be a power of two from 1024 to 2^30, got ${capacity}`);
  }
  return new ArrayBuffer(ringByteLength(capacity));
}
