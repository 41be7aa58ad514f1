// A synthetic market: many instruments, Poisson arrivals with bursts, random-
// walk integer prices. Publishes every instrument's definition and an OPEN
// status first, then quotes, trades, book level updates and (rarely) halts
// and resumes, at a configured mean rate of messages per second.
//
// Arrivals are a Poisson process of rate ratePerSec / E[burst size]; an
// arrival is a burst of 2..burstMax messages with probability
// burstProbability, else one message. A timer (1 ms) publishes every message
// whose arrival time has passed, grouped by channel, one publish() per
// channel per tick.
import { md, MessageType, type MarketDataMessage } from '../messages.js';
import type { FeedPublisher } from '../publisher.js';

export interface SyntheticOptions {
  readonly instruments: number;
  readonly firstInstrumentId?: number;
  /** Mean messages per second (definitions excluded). */
  readonly ratePerSec: number;
  readonly burstProbability?: number;
  readonly burstMax?: number;
  readonly bookDepth?: number;
  readonly seed?: number;
  /** Channel of an instrument; default: the publisher's instruments map. */
  readonly channelOf?: (instrumentId: number) => number;
  readonly tickMs?: number;
}

export interface SyntheticStats {
  definitions: number;
  messages: number;
  quotes: number;
  trades: number;
  bookUpdates: number;
  statuses: number;
  bursts: number;
  /** Seconds since the ticks started. */
  elapsedSec: number;
  /**
   * Seconds of the arrival schedule published so far: every arrival due by
   * then has been published. Behind elapsedSec by up to one timer tick, more
   * when the event loop was late (the next tick catches up).
   */
  scheduledSec: number;
}

interface InstrumentState {
  id: number;
  mid: number;
  halted: boolean;
  tradeId: number;
}

// mulberry32: small, fast, seedable.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class SyntheticSource {
  readonly #pub: FeedPublisher;
  readonly #o: Required<Omit<SyntheticOptions, 'channelOf' | 'seed'>> & { seed: number };
  readonly #channelOf: (id: number) => number;
  readonly #random: () => number;
  readonly #instruments: InstrumentState[] = [];
  readonly #meanBurst: number;
  #timer: NodeJS.Timeout | undefined;
  #startMs = 0;
  #scheduledMs = 0;
  #nextArrivalMs = 0;
  readonly #stats: SyntheticStats = { definitions: 0, messages: 0, quotes: 0, trades: 0, bookUpdates: 0, statuses: 0, bursts: 0, elapsedSec: 0, scheduledSec: 0 };

  constructor(publisher: FeedPublisher, options: SyntheticOptions) {
    if (!(options.ratePerSec > 0)) throw new RangeError('synthetic source: ratePerSec must be > 0');
    if (!(options.instruments >= 1)) throw new RangeError('synthetic source: instruments must be >= 1');
    this.#pub = publisher;
    this.#o = {
      instruments: options.instruments,
      firstInstrumentId: options.firstInstrumentId ?? 1,
      ratePerSec: options.ratePerSec,
      burstProbability: options.burstProbability ?? 0.02,
      burstMax: Math.max(2, options.burstMax ?? 20),
      bookDepth: Math.min(256, Math.max(1, options.bookDepth ?? 5)),
      seed: options.seed ?? Date.now() >>> 0,
      tickMs: options.tickMs ?? 1,
    };
    this.#random = rng(this.#o.seed);
    const fallback = publisher.channels[0]!;
    this.#channelOf = options.channelOf ?? ((id) => publisher.channelOf(id) ?? fallback);
    // E[size] = (1 - p) * 1 + p * mean(2..burstMax)
    this.#meanBurst = 1 - this.#o.burstProbability + this.#o.burstProbability * ((2 + this.#o.burstMax) / 2);
    for (let i = 0; i < this.#o.instruments; i++) {
      this.#instruments.push({ id: this.#o.firstInstrumentId + i, mid: 10_000 + Math.floor(this.#random() * 90_000), halted: false, tradeId: 0 });
    }
  }

  get running(): boolean {
    return this.#timer !== undefined;
  }

  stats(): SyntheticStats {
    const since = (t: number): number => (this.#startMs === 0 ? 0 : (t - this.#startMs) / 1000);
    return { ...this.#stats, elapsedSec: since(performance.now()), scheduledSec: since(this.#scheduledMs) };
  }

  /** Publishes the definitions (and an OPEN status per instrument), then starts the ticks. */
  start(): void {
    if (this.#timer !== undefined) return;
    const batch: MarketDataMessage[] = [];
    for (const ins of this.#instruments) {
      batch.push({
        type: MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION,
        value: {
          instrumentId: ins.id,
          symbol: `SYN${ins.id}`,
          description: `synthetic instrument ${ins.id}`,
          priceExponent: -2,
          tickSize: 1,
          lotSize: 1,
          currency: 'USD',
          channel: this.#channelOf(ins.id),
          bookDepth: this.#o.bookDepth,
        },
      });
      batch.push({ type: MessageType.MESSAGE_TYPE_TRADING_STATUS, value: { instrumentId: ins.id, status: md.TradingStatus.Status.STATUS_OPEN } });
    }
    this.#stats.definitions = this.#instruments.length;
    this.#publish(batch);
    this.#startMs = performance.now();
    this.#scheduledMs = this.#startMs;
    this.#nextArrivalMs = this.#startMs + this.#expo();
    this.#timer = setInterval(() => this.#tick(), this.#o.tickMs);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #expo(): number {
    const lambdaPerMs = this.#o.ratePerSec / this.#meanBurst / 1000;
    return -Math.log(1 - this.#random()) / lambdaPerMs;
  }

  #tick(): void {
    const now = performance.now();
    const out: MarketDataMessage[] = [];
    while (this.#nextArrivalMs <= now) {
      let n = 1;
      if (this.#random() < this.#o.burstProbability) {
        n = 2 + Math.floor(this.#random() * (this.#o.burstMax - 1));
        this.#stats.bursts++;
      }
      const ins = this.#instruments[Math.floor(this.#random() * this.#instruments.length)]!;
      for (let i = 0; i < n; i++) out.push(this.#next(ins));
      this.#nextArrivalMs += this.#expo();
    }
    this.#scheduledMs = now;
    if (out.length > 0) this.#publish(out);
  }

  #next(ins: InstrumentState): MarketDataMessage {
    const r = this.#random();
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    if (r < 0.002) {
      ins.halted = !ins.halted;
      this.#stats.statuses++;
      return {
        type: MessageType.MESSAGE_TYPE_TRADING_STATUS,
        value: {
          instrumentId: ins.id,
          status: ins.halted ? md.TradingStatus.Status.STATUS_HALT : md.TradingStatus.Status.STATUS_RESUME,
          reason: ins.halted ? 'volatility halt' : '',
          exchangeTimeNs: Number(nowNs),
        },
      };
    }
    // Random walk of the mid, one tick at a time, never below 1.
    ins.mid = Math.max(100, ins.mid + (this.#random() < 0.5 ? -1 : 1) * (1 + Math.floor(this.#random() * 2)));
    const spread = 1 + Math.floor(this.#random() * 3);
    if (r < 0.5) {
      this.#stats.quotes++;
      return {
        type: MessageType.MESSAGE_TYPE_QUOTE,
        value: {
          instrumentId: ins.id,
          bidPrice: ins.mid - spread,
          bidSize: 1 + Math.floor(this.#random() * 100),
          bidOrderCount: 1 + Math.floor(this.#random() * 10),
          askPrice: ins.mid + spread,
          askSize: 1 + Math.floor(this.#random() * 100),
          askOrderCount: 1 + Math.floor(this.#random() * 10),
          exchangeTimeNs: Number(nowNs),
        },
      };
    }
    if (r < 0.65) {
      this.#stats.trades++;
      const buy = this.#random() < 0.5;
      return {
        type: MessageType.MESSAGE_TYPE_TRADE,
        value: {
          instrumentId: ins.id,
          price: buy ? ins.mid + spread : ins.mid - spread,
          size: 1 + Math.floor(this.#random() * 50),
          aggressorSide: buy ? md.Side.SIDE_BID : md.Side.SIDE_ASK,
          tradeId: ++ins.tradeId,
          exchangeTimeNs: Number(nowNs),
        },
      };
    }
    this.#stats.bookUpdates++;
    const ask = this.#random() < 0.5;
    const level = Math.floor(this.#random() * this.#o.bookDepth);
    return {
      type: MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE,
      value: {
        instrumentId: ins.id,
        action: md.BookLevelUpdate.Action.ACTION_MODIFY,
        side: ask ? md.Side.SIDE_ASK : md.Side.SIDE_BID,
        level,
        price: ask ? ins.mid + spread + level : ins.mid - spread - level,
        size: 1 + Math.floor(this.#random() * 200),
        orderCount: 1 + Math.floor(this.#random() * 20),
        exchangeTimeNs: Number(nowNs),
      },
    };
  }

  #publish(messages: MarketDataMessage[]): void {
    const byChannel = new Map<number, MarketDataMessage[]>();
    for (const m of messages) {
      const ch = this.#channelOf((m.value as { instrumentId?: number }).instrumentId ?? 0);
      let list = byChannel.get(ch);
      if (list === undefined) byChannel.set(ch, (list = []));
      list.push(m);
    }
    for (const [ch, list] of byChannel) this.#pub.publish(ch, list);
    const ticks = messages.length - (this.#timer === undefined ? messages.length : 0);
    this.#stats.messages += ticks;
  }
}
