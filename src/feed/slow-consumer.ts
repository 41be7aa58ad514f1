// What the subscriber does when the application reads slower than the feed
// arrives (issue 4, slow consumers): messages wait in a bounded queue between
// the engine's records and the async iterator, and a declared policy applies
// when it is full — never unbounded memory:
//
//   'drop-oldest'  the oldest queued message goes (counted in `dropped`)
//   'conflate'     a message replaces the queued one with the same
//                  (channel, type, instrument, key) in place — the latest
//                  state per instrument, in the order first queued (counted
//                  in `conflated`); when the queue is full of distinct keys
//                  the oldest goes (counted in `dropped`)
//   'disconnect'   the subscription ends: the iterator throws
//                  SlowConsumerError and the subscriber closes
export type SlowConsumerPolicy = 'drop-oldest' | 'conflate' | 'disconnect';

export interface SlowConsumerOptions {
  readonly policy?: SlowConsumerPolicy;
  /** Messages queued for the iterator at most (default 1,000,000). */
  readonly maxQueued?: number;
}

export class SlowConsumerError extends Error {
  constructor(readonly maxQueued: number) {
    super(`slow consumer: more than ${maxQueued} messages queued; disconnected (policy 'disconnect')`);
    this.name = 'SlowConsumerError';
  }
}

export interface QueueStats {
  policy: SlowConsumerPolicy;
  maxQueued: number;
  /** Messages waiting now (the consumer's lag) and the most ever. */
  queued: number;
  highWater: number;
  dropped: number;
  conflated: number;
}

export interface Conflatable {
  readonly channel: number;
  readonly type: number;
  readonly instrumentId: number;
  readonly key: number;
}

/** The bounded queue; push() returns false once the 'disconnect' policy tripped. */
export class SlowConsumerQueue<T extends Conflatable> {
  readonly #policy: SlowConsumerPolicy;
  readonly #max: number;
  #items: Array<T | undefined> = [];
  #head = 0;
  #base = 0; // absolute index of #items[0]
  readonly #byKey = new Map<string, number>(); // conflation key → absolute index
  #count = 0;
  #highWater = 0;
  #dropped = 0;
  #conflated = 0;
  #tripped = false;

  constructor(options: SlowConsumerOptions = {}) {
    this.#policy = options.policy ?? 'drop-oldest';
    this.#max = options.maxQueued ?? 1_000_000;
    if (!Number.isInteger(this.#max) || this.#max < 1) throw new RangeError(`slowConsumer.maxQueued must be a positive integer, got ${String(options.maxQueued)}`);
  }

  get tripped(): boolean {
    return this.#tripped;
  }

  push(m: T): boolean {
    if (this.#tripped) return false;
    if (this.#policy === 'conflate') {
      const k = keyOf(m);
      const at = this.#byKey.get(k);
      if (at !== undefined) {
        this.#items[at - this.#base] = m;
        this.#conflated++;
        return true;
      }
      if (this.#count >= this.#max) this.#dropOldest();
      this.#byKey.set(k, this.#base + this.#items.length);
    } else if (this.#count >= this.#max) {
      if (this.#policy === 'disconnect') {
        this.#tripped = true;
        return false;
      }
      this.#dropOldest();
    }
    this.#items.push(m);
    this.#count++;
    if (this.#count > this.#highWater) this.#highWater = this.#count;
    return true;
  }

  shift(): T | undefined {
    while (this.#head < this.#items.length) {
      const at = this.#head++;
      const m = this.#items[at];
      this.#items[at] = undefined;
      if (m === undefined) continue;
      this.#count--;
      if (this.#policy === 'conflate') {
        const k = keyOf(m);
        if (this.#byKey.get(k) === this.#base + at) this.#byKey.delete(k);
      }
      this.#compact();
      return m;
    }
    return undefined;
  }

  stats(): QueueStats {
    return { policy: this.#policy, maxQueued: this.#max, queued: this.#count, highWater: this.#highWater, dropped: this.#dropped, conflated: this.#conflated };
  }

  #dropOldest(): void {
    if (this.shift() !== undefined) this.#dropped++;
  }

  // Reclaims the consumed head once it is most of the array (amortised O(1)).
  #compact(): void {
    if (this.#head > 4096 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#base += this.#head;
      this.#head = 0;
    }
  }
}

function keyOf(m: Conflatable): string {
  return `${m.channel}:${m.type}:${m.instrumentId}:${m.key}`;
}
