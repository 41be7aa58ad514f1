// OrderService: the gateway's order entry, from an OrdersConfig — the native
// order service (addon.orders) on the given started engine and opened soft
// device, with its journal under state.dir. When a feed publisher is given,
// the service announces its instruments on the feed (InstrumentDefinition +
// OPEN status, published here) and the native side publishes every trade and
// book level change on that publisher (channel per instrument).
//
// Everything per order happens on the engine thread; this class is control
// path: open/close sessions, read counters, shut down (journal flushed) —
// and the order events (events.ts) for TS order-handler plug-ins, which the
// engine makes only while someone listens.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { RecordType, type Engine } from '../native/engine.js';
import type { Device } from '../native/verbs.js';
import type { SessionDevice } from '../common/session-provider.js';
import { nativeDeviceOf } from '../feed/native.js';
import type { FeedsConfig } from '../feed/config.js';
import type { FeedPublisher } from '../feed/publisher.js';
import { md, MessageType, type MarketDataMessage } from '../feed/messages.js';
import { nativeServiceConfig, type NativeOrderServiceConfig, type OrdersConfig } from './config.js';
import { orderEventsServiceId, readOrderEvents, type OrderEvent } from './events.js';
import {
  nativeOrders,
  type NativeOpenSession,
  type NativeOrderService,
  type NativeOrderSessionInfo,
  type NativeOrderStats,
  type NativeRiskLayout,
  type NativeRiskWords,
  type NativeSessionAnswer,
} from './native.js';

export interface OrderServiceOptions {
  /** Where a relative journal path lives (state.dir). */
  readonly stateDir: string;
  /** The feed's config: instruments without a channel get the feed's instrument → channel rule. */
  readonly feeds: FeedsConfig;
  /** Publish trades and book levels (and the instruments' definitions) here. */
  readonly publisher?: FeedPublisher | undefined;
  /** A second device sessions may open on (backend.alternateDevice): clients fail over to it (docs/protocol.md §1.11). */
  readonly alternateDevice?: Device | undefined;
}

export class OrderService {
  readonly config: OrdersConfig;
  readonly nativeConfig: NativeOrderServiceConfig;
  readonly #engine: Engine;
  readonly #device: Device;
  readonly #alternateDevice: Device | undefined;
  readonly #publisher: FeedPublisher | undefined;
  #native: NativeOrderService | undefined;
  #closed = false;
  readonly #eventListeners = new Set<(events: OrderEvent[]) => void>();
  #stopEventRoute: (() => void) | undefined;

  constructor(engine: Engine, device: Device, config: OrdersConfig, options: OrderServiceOptions) {
    this.config = config;
    this.#engine = engine;
    this.#device = device;
    this.#alternateDevice = options.alternateDevice;
    this.#publisher = config.publishToFeed ? options.publisher : undefined;
    this.nativeConfig = nativeServiceConfig(config, options.stateDir, options.feeds, this.#publisher?.id);
  }

  get running(): boolean {
    return this.#native !== undefined;
  }

  /** The native service (throws before start and after close). */
  get native(): NativeOrderService {
    if (this.#native === undefined) throw new Error(`qpgate orders: the order service is ${this.#closed ? 'closed' : 'not started'}`);
    return this.#native;
  }

  /** The feed publisher trades and book levels go to, if any. */
  get publisher(): FeedPublisher | undefined {
    return this.#publisher;
  }

  /**
   * Opens the journal (replaying it: books, duplicate filter and every
   * session's app_seq come back) and starts serving. Needs a started engine.
   */
  start(): void {
    if (this.#native !== undefined) return;
    if (this.#closed) throw new Error('qpgate orders: start() after close()');
    if (!this.#engine.running) throw new Error('qpgate orders: start the engine before the order service');
    mkdirSync(dirname(this.nativeConfig.journal.path), { recursive: true, mode: 0o700 });
    const alternate = this.#alternateDevice === undefined ? undefined : nativeDeviceOf(this.#alternateDevice);
    this.#native = nativeOrders().createService(this.#engine.native, nativeDeviceOf(this.#device), this.nativeConfig, alternate);
    if (this.#publisher !== undefined) this.#announceInstruments(this.#publisher);
  }

  openSession(options: NativeOpenSession): NativeSessionAnswer {
    return this.native.openSession(options);
  }

  closeSession(session: number): boolean {
    return this.#native?.closeSession(session) ?? false;
  }

  /** The QP of a session went fatal: lose it (cancel-on-disconnect), its endedBy the event's name. */
  onAsyncEvent(event: { type: string; elementId: number }, device: SessionDevice = 'primary'): boolean {
    return this.#native?.onAsyncEvent(event, device) ?? false;
  }

  /** The alternate device's GID (backend.alternateDevice), null without one. */
  get alternateDeviceGid(): string | null {
    return this.#alternateDevice?.gid ?? null;
  }

  sessions(): NativeOrderSessionInfo[] {
    return this.#native?.sessions() ?? [];
  }

  stats(): NativeOrderStats | undefined {
    return this.#native?.stats();
  }

  ackLatencyCounts(): Float64Array | undefined {
    return this.#native?.ackLatencyCounts();
  }

  riskLayout(): NativeRiskLayout {
    return this.native.riskLayout();
  }

  readRisk(account: bigint): NativeRiskWords {
    return this.native.readRisk(account);
  }

  /**
   * Calls `listener` with each batch of order events (accepted, replaced,
   * filled, cancelled), in the gateway's processing order, each once, after
   * the journal had them. The engine makes events only while a listener is
   * attached, and a listener that falls behind back-pressures the order
   * sessions (docs/protocol.md 3.7): listeners must not block. Returns the
   * function that detaches it.
   */
  onOrderEvents(listener: (events: OrderEvent[]) => void): () => void {
    const native = this.native;
    if (this.#eventListeners.size === 0) {
      const id = native.id;
      this.#stopEventRoute = this.#engine.onRecord(RecordType.orderEvents, (p) => {
        if (orderEventsServiceId(p) !== id) return;
        const events = readOrderEvents(p);
        for (const l of this.#eventListeners) l(events);
      });
      native.deliverOrderEvents(true);
    }
    this.#eventListeners.add(listener);
    return () => {
      if (!this.#eventListeners.delete(listener) || this.#eventListeners.size > 0) return;
      if (this.#native !== undefined) this.#native.deliverOrderEvents(false);
      this.#stopEventRoute?.();
      this.#stopEventRoute = undefined;
    };
  }

  /** Flushes the journal, closes every session (their QPs to ERR) and releases the service. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#eventListeners.clear();
    this.#stopEventRoute?.();
    this.#stopEventRoute = undefined;
    const n = this.#native;
    this.#native = undefined;
    n?.close();
  }

  // Subscribers learn the order-entry instruments from the feed itself: a
  // definition (priced like the synthetic source's: exponent -2) and OPEN.
  #announceInstruments(publisher: FeedPublisher): void {
    const byChannel = new Map<number, MarketDataMessage[]>();
    for (const ins of this.nativeConfig.instruments) {
      const channel = ins.channel ?? publisher.channels[0]!;
      const cfg = this.config.instruments.find((i) => i.id === ins.id);
      const list = byChannel.get(channel) ?? [];
      list.push(
        {
          type: MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION,
          value: {
            instrumentId: ins.id,
            symbol: cfg?.symbol ?? `ORD${ins.id}`,
            description: `order-entry instrument ${ins.id}`,
            priceExponent: -2,
            tickSize: ins.tickSize,
            lotSize: 1,
            currency: 'USD',
            channel,
            bookDepth: ins.bookDepth,
          },
        },
        { type: MessageType.MESSAGE_TYPE_TRADING_STATUS, value: { instrumentId: ins.id, status: md.TradingStatus.Status.STATUS_OPEN } },
      );
      byChannel.set(channel, list);
    }
    for (const [channel, messages] of byChannel) publisher.publish(channel, messages);
  }
}
