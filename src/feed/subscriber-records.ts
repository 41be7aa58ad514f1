// Routes an engine's subscriber records (FEED_FRAME, FEED_GAP, FEED_SESSION;
// docs/protocol.md 2.11) to their subscriber by the id every one starts
// with: one handler per record type and engine, one map lookup per record,
// however many subscribers share the engine (rather than each subscriber's
// handler reading every record to drop the others').
import { RecordType, type Engine } from '../native/engine.js';

export interface SubscriberRecordHandlers {
  frame(payload: Uint8Array): void;
  gap(payload: Uint8Array): void;
  session(payload: Uint8Array): void;
}

type Kind = keyof SubscriberRecordHandlers;
const KINDS: ReadonlyArray<[Kind, number]> = [
  ['frame', RecordType.feedFrame],
  ['gap', RecordType.feedGap],
  ['session', RecordType.feedSession],
];

function subscriberIdOf(p: Uint8Array): number {
  return (p[0]! | (p[1]! << 8) | (p[2]! << 16)) + p[3]! * 2 ** 24;
}

class SubscriberRecords {
  readonly #byId = new Map<number, SubscriberRecordHandlers>();
  #unsubscribe: Array<() => void> = [];

  constructor(readonly engine: Engine) {}

  add(id: number, handlers: SubscriberRecordHandlers): () => void {
    if (this.#byId.has(id)) throw new Error(`qpgate feed: subscriber ${id} already receives this engine's records`);
    if (this.#byId.size === 0) {
      this.#unsubscribe = KINDS.map(([kind, type]) =>
        this.engine.onRecord(type, (p) => this.#byId.get(subscriberIdOf(p))?.[kind](p)),
      );
    }
    this.#byId.set(id, handlers);
    return () => {
      if (this.#byId.get(id) !== handlers) return;
      this.#byId.delete(id);
      if (this.#byId.size > 0) return;
      for (const u of this.#unsubscribe) u();
      this.#unsubscribe = [];
    };
  }
}

const routers = new WeakMap<Engine, SubscriberRecords>();

/** Delivers the records of subscriber `id` on `engine` to `handlers`; returns the function that stops it. */
export function routeSubscriberRecords(engine: Engine, id: number, handlers: SubscriberRecordHandlers): () => void {
  let r = routers.get(engine);
  if (r === undefined) routers.set(engine, (r = new SubscriberRecords(engine)));
  return r.add(id, handlers);
}
