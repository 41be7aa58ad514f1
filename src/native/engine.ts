// The engine from JS: starts and stops the native poll thread, writes
// commands into the toEngine ring in batches (one publish, at most one
// doorbell per batch) and hands fromEngine records to a handler one batch
// per wake-up. Or, started with startDriven(), the engine runs on the JS
// thread itself: the event loop runs its duty cycles when its fds or its
// protocol deadline are ready and then calls the work listeners (onWork);
// doWork() runs one cycle at once (the order clients, src/orders/rc-endpoint.ts).
import {
  loadAddon,
  type EngineStats,
  type NativeEngine,
  type NativeEngineOptions,
  type PlacementReport,
} from './addon.js';
import { RingConsumer, RingProducer } from './spsc-ring.js';

/** Record types (native/src/gateway/engine_agents.h kRecordTypes; a test checks they agree). */
export const RecordType = {
  /** toEngine: bytes to send back; fromEngine: the bytes + uint64 receive time (CLOCK_MONOTONIC ns, LE). */
  echo: 1,
  /** fromEngine: one async event of an ibv device (24 bytes: type, element kind, element id, context; native/src/engine/record_types.h). */
  deviceEvent: 2,
  /** toEngine: messages for one feed channel (docs/protocol.md 2.11). */
  feedPublish: 16,
  /** fromEngine: one live feed frame delivered in order by a subscriber. */
  feedFrame: 17,
  /** fromEngine: a feed range lost on every line. */
  feedGap: 18,
  /** fromEngine: a feed channel's session changed (or was first seen). */
  feedSession: 19,
  /** fromEngine: durable order events of one order service (docs/protocol.md 3.7). */
  orderEvents: 24,
} as const;

/** Handles the fromEngine records of one type; `payload` views ring memory, valid only during the call. */
export type RecordHandler = (payload: Uint8Array) => void;

export type EngineOptions = Omit<NativeEngineOptions, 'onWake'>;

/** A record from the engine. `payload` views ring memory: valid only during the handler call. */
export interface EngineRecord {
  readonly type: number;
  readonly payload: Uint8Array;
}

export type BatchHandler = (records: readonly EngineRecord[]) => void;

/** Told about a record handler that threw (the record is skipped for it; the ring goes on). */
export type RecordHandlerErrorListener = (err: unknown, type: number) => void;

/** An echo reply split into the bytes sent and the engine's receive time. */
export function decodeEcho(record: EngineRecord): { payload: Uint8Array; receivedNs: bigint } {
  const p = record.payload;
  if (record.type !== RecordType.echo || p.byteLength < 8) {
    throw new TypeError(`not an echo reply: type ${record.type}, ${p.byteLength} bytes`);
  }
  const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
  return { payload: p.subarray(0, p.byteLength - 8), receivedNs: view.getBigUint64(p.byteLength - 8, true) };
}

// Records per handler call, and per wake-up before the drain yields to the
// event loop (so a flood from the engine cannot starve timers and I/O).
const MAX_RECORDS_PER_BATCH = 8192;
const MAX_RECORDS_PER_DRAIN = 65536;
// Duty cycles a driven engine runs per flush, at most (until one does nothing;
// the event loop's wake-ups run the rest, as native/src/addon/engine_driver.h bounds its own).
const MAX_CYCLES_PER_FLUSH = 8;

export class Engine {
  readonly #native: NativeEngine;
  #handler: BatchHandler | undefined;
  #producer: RingProducer | undefined;
  #consumer: RingConsumer | undefined;
  #op: Promise<unknown> = Promise.resolve();
  #drainScheduled = false;
  readonly #routes = new Map<number, Set<RecordHandler>>();
  readonly #workListeners = new Set<() => void>();
  #workScheduled = false;
  #recordHandlerErrors = 0;
  #onRecordHandlerError: RecordHandlerErrorListener | undefined;

  /** Throws TypeError naming the option when `options` is invalid. */
  constructor(options: EngineOptions = {}, onBatch?: BatchHandler) {
    this.#native = new (loadAddon().Engine)({ ...options, onWake: () => this.#drain() });
    this.#handler = onBatch;
  }

  /** The addon's engine object (for verbs.openDevice and the feed bindings). */
  get native(): NativeEngine {
    return this.#native;
  }

  /**
   * Subscribes `handler` to the fromEngine records of one type (routing by
   * type); returns the unsubscribe function. Routed records are handed to
   * their handlers in ring order, before the batch handler (onBatch), which
   * still sees every record of the batch.
   */
  onRecord(type: number, handler: RecordHandler): () => void {
    let set = this.#routes.get(type);
    if (set === undefined) {
      set = new Set();
      this.#routes.set(type, set);
    }
    set.add(handler);
    return () => {
      const s = this.#routes.get(type);
      if (s === undefined) return;
      s.delete(handler);
      if (s.size === 0) this.#routes.delete(type);
    };
  }

  /**
   * Where a throwing record handler is reported (the gateway logs it with
   * pino). A throw never leaves the drain: it is counted, reported, and the
   * other handlers and records go on.
   */
  onRecordHandlerError(listener: RecordHandlerErrorListener | undefined): void {
    this.#onRecordHandlerError = listener;
  }

  /** Record handler calls that threw, since this Engine was made. */
  get recordHandlerErrors(): number {
    return this.#recordHandlerErrors;
  }

  /**
   * Writes toEngine records in place: `fill(bytes, offset)` writes `length`
   * payload bytes at `offset` of the ring's byte view. False when the ring
   * has no room now (nothing written). Records become visible at flush().
   */
  tryWrite(type: number, length: number, fill: (bytes: Uint8Array, offset: number) => void): boolean {
    const producer = this.#producer;
    if (producer === undefined || !this.#native.running) throw new Error('qpgate Engine: write on a stopped engine');
    const at = producer.claim(type, length);
    if (at < 0) return false;
    fill(producer.bytes, at);
    return true;
  }

  /** Largest toEngine payload a record may have. */
  get maxRecordPayload(): number {
    const producer = this.#producer;
    if (producer === undefined) throw new Error('qpgate Engine: not started');
    return producer.maxPayloadLength;
  }

  /** Publishes what tryWrite wrote (one tail store) and rings the doorbell only if the engine is parked. */
  flush(): void {
    const producer = this.#producer;
    if (producer !== undefined && this.#native.running) this.#flush(producer);
  }

  /**
   * A driven engine: `listener` runs after the duty cycles of each wake-up of
   * the event loop (a packet, a protocol deadline); returns the unsubscribe
   * function. A throw is counted and reported as a record handler's is (type 0).
   */
  onWork(listener: () => void): () => void {
    this.#workListeners.add(listener);
    return () => this.#workListeners.delete(listener);
  }

  /** Started with startDriven(): runs on the JS thread. */
  get driven(): boolean {
    return this.#native.driven;
  }

  /**
   * One duty cycle of a driven engine, now (after posting work); returns the
   * work done. A cycle that did work may have completed work of any QP on the
   * engine with no fd left readable to say so: the work listeners run once
   * soon after (setImmediate, coalesced).
   */
  doWork(): number {
    const work = this.#native.doWork();
    if (work > 0 && !this.#workScheduled && this.#workListeners.size > 0) {
      this.#workScheduled = true;
      setImmediate(() => this.#work());
    }
    return work;
  }

  /**
   * A driven engine's busy-poll of `cq` (cq.busyPollInto: duty cycles and
   * polls in native code until a completion or `budgetNs`); the cycles may
   * have completed other QPs' work, so the work listeners run soon after.
   */
  busyPoll(cq: { busyPollInto(words: Uint32Array, budgetNs: number): number }, words: Uint32Array, budgetNs: number): number {
    const n = cq.busyPollInto(words, budgetNs);
    if (!this.#workScheduled && this.#workListeners.size > 0) {
      this.#workScheduled = true;
      setImmediate(() => this.#work());
    }
    return n;
  }

  /** Replaces the handler that receives fromEngine records, a batch at a time. */
  onBatch(handler: BatchHandler | undefined): void {
    this.#handler = handler;
  }

  get running(): boolean {
    return this.#native.running;
  }

  /**
   * Starts the engine thread (pinned, buffers allocated) and returns its
   * placement. Calls to start/stop are serialised, so overlapping calls are safe.
   */
  start(): Promise<PlacementReport> {
    return this.#serialise(() => {
      if (!this.#native.running) {
        this.#native.start();
        const rings = this.#native.rings();
        this.#producer = new RingProducer(rings.toEngine, rings.toEngineCapacity);
        this.#consumer = new RingConsumer(rings.fromEngine, rings.fromEngineCapacity);
      }
      return this.#native.placement();
    });
  }

  /**
   * Starts the engine on this thread, driven by the event loop: no engine
   * thread, no pinning (it is Node's thread), verbs calls run inline. For a
   * client of one or a few QPs on a host with few CPUs.
   */
  startDriven(): Promise<PlacementReport> {
    return this.#serialise(() => {
      if (!this.#native.running) {
        this.#native.startDriven(() => this.#work());
        const rings = this.#native.rings();
        this.#producer = new RingProducer(rings.toEngine, rings.toEngineCapacity);
        this.#consumer = new RingConsumer(rings.fromEngine, rings.fromEngineCapacity);
      }
      return this.#native.placement();
    });
  }

  /** Joins the engine thread and frees its rings. Records not yet delivered are dropped. Idempotent. */
  stop(): Promise<void> {
    return this.#serialise(() => {
      this.#native.stop();
      this.#producer = undefined;
      this.#consumer = undefined;
    });
  }

  placement(): PlacementReport {
    return this.#native.placement();
  }

  stats(): EngineStats {
    return this.#native.stats();
  }

  /** Duty-cycle times since start (raw HdrHistogram counts, ns): diff two copies for a window. */
  cycleTimeCounts(): Float64Array {
    return this.#native.cycleTimeCounts();
  }

  /**
   * Sends each payload as an ECHO record. Writes as many as fit, publishes
   * them with one tail store and rings the doorbell at most once; when the
   * ring is full it waits a turn of the event loop (replies keep draining)
   * and goes on. Resolves when every payload is in the ring.
   */
  async echo(payloads: readonly Uint8Array[]): Promise<void> {
    let next = 0;
    while (next < payloads.length) {
      const producer = this.#producer;
      if (producer === undefined || !this.#native.running) throw new Error('qpgate Engine: echo() on a stopped engine');
      while (next < payloads.length && producer.write(RecordType.echo, payloads[next]!)) next++;
      this.#flush(producer);
      if (next < payloads.length) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  #work(): void {
    this.#workScheduled = false;
    for (const listener of this.#workListeners) {
      try {
        listener();
      } catch (e) {
        this.#recordHandlerFailed(e, 0);
      }
    }
  }

  /** Publishes what was written and wakes the engine only if it is parked (a driven one: runs its cycles now). */
  #flush(producer: RingProducer): void {
    if (!producer.publish()) return;
    if (this.#native.driven) {
      // Until a cycle does nothing: a record's work takes more than one. A
      // publish record becomes a frame posted by the feed agent, which the
      // device agent after it sends in the same cycle; a subscriber on this
      // engine takes the looped-back frame from its CQ in the next. No fd is
      // left readable to wake the event loop for that next cycle, so with one
      // cycle per flush the frame waited for the next publish (a p50 of one
      // publish interval in bench/feed/ts-path.ts with a driven engine).
      for (let i = 0; i < MAX_CYCLES_PER_FLUSH && this.doWork() > 0; i++);
      return;
    }
    // One Atomics.load on the hot path; the native call only when parked.
    if (producer.consumerWaiting()) this.#native.notify();
  }

  // The wake-up handler: drain until empty, then announce that we wait and
  // re-check (a batch published in between is drained now, not lost).
  #drain(): void {
    this.#drainScheduled = false;
    const consumer = this.#consumer;
    if (consumer === undefined || consumer.detached) return;
    const records: EngineRecord[] = [];
    const routes = this.#routes;
    const collect = (type: number, bytes: Uint8Array, offset: number, length: number): void => {
      const payload = bytes.subarray(offset, offset + length);
      const handlers = routes.size === 0 ? undefined : routes.get(type);
      if (handlers !== undefined) {
        for (const h of handlers) {
          try {
            h(payload);
          } catch (e) {
            // A throwing handler must not stall the ring for everyone else, nor end the process.
            this.#recordHandlerFailed(e, type);
          }
        }
      }
      records.push({ type, payload });
    };
    // The handler runs before head moves, so the payload views are intact.
    const deliver = (count: number): void => {
      if (count > 0) this.#handler?.(records);
    };
    let budget = MAX_RECORDS_PER_DRAIN;
    for (;;) {
      records.length = 0;
      const n = consumer.read(collect, MAX_RECORDS_PER_BATCH, deliver);
      if (n > 0) {
        budget -= n;
        if (budget <= 0) {
          // Still flooding: come back after the event loop had a turn. The
          // waiting word stays 0, so the engine does not wake us meanwhile.
          this.#scheduleDrain();
          return;
        }
        continue;
      }
      if (consumer.announceWaiting()) return;
    }
  }

  #recordHandlerFailed(err: unknown, type: number): void {
    this.#recordHandlerErrors++;
    try {
      this.#onRecordHandlerError?.(err, type);
    } catch {
      // A listener that throws too has been counted all the same.
    }
  }

  #scheduleDrain(): void {
    if (this.#drainScheduled) return;
    this.#drainScheduled = true;
    setImmediate(() => this.#drain());
  }

  #serialise<T>(fn: () => T): Promise<T> {
    const result = this.#op.then(fn);
    this.#op = result.catch(() => undefined);
    return result;
  }
}

export type { EngineStats, PlacementReport } from './addon.js';
