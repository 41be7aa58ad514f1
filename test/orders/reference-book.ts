// A plain price-time priority order book, written from the rules in
// proto/qpgate/orders/v1/orders.proto and nothing else, to run beside the
// gateway over the same order stream: same inputs in the same order must give
// the same fills (price, quantity, leaves, liquidity, trade ids), the same
// unsolicited cancels and the same resting orders.
//
// Rules: an incoming order trades against the best opposite level while it
// crosses, oldest order first, at the resting order's price; a DAY remainder
// rests at the back of its level, an IOC remainder is cancelled. Self-match
// prevention when the next resting order has the same account:
// cancel-newest: an order whose very first match would be its own account is
// rejected (SELF_MATCH); meeting its own account later stops it and cancels
// its remainder; cancel-oldest: the resting order is cancelled, matching goes
// on; cancel-both: both are cancelled. Replace: same price and a smaller
// quantity keeps the place; anything else goes to the back (and may trade).

export type ModelSide = 'buy' | 'sell';
export type SelfMatch = 'cancel-newest' | 'cancel-oldest' | 'cancel-both';

export interface ModelOrder {
  key: string; // session:clientOrderId
  orderId: bigint;
  account: bigint;
  instrumentId: number;
  side: ModelSide;
  price: number;
  leaves: number;
}

export interface ModelFill {
  key: string;
  orderId: bigint;
  tradeId: bigint;
  side: ModelSide;
  price: number;
  quantity: number;
  leaves: number;
  liquidity: 'maker' | 'taker';
}

export interface ModelCancel {
  key: string;
  reason: 'IOC_REMAINDER' | 'SELF_MATCH' | 'REQUESTED';
  quantity: number;
}

export interface ModelOutcome {
  rejected?: 'SELF_MATCH' | 'UNKNOWN_ORDER';
  fills: ModelFill[];
  cancels: ModelCancel[];
  priorityKept?: boolean;
}

class Side {
  readonly levels = new Map<number, ModelOrder[]>();
  prices: number[] = []; // best first
  constructor(readonly better: (a: number, b: number) => boolean) {}

  best(): number | undefined {
    return this.prices[0];
  }
  push(o: ModelOrder): void {
    let level = this.levels.get(o.price);
    if (level === undefined) {
      level = [];
      this.levels.set(o.price, level);
      let i = 0;
      while (i < this.prices.length && this.better(this.prices[i]!, o.price)) i++;
      this.prices.splice(i, 0, o.price);
    }
    level.push(o);
  }
  remove(o: ModelOrder): void {
    const level = this.levels.get(o.price)!;
    level.splice(level.indexOf(o), 1);
    if (level.length === 0) this.dropLevel(o.price);
  }
  dropLevel(price: number): void {
    this.levels.delete(price);
    this.prices.splice(this.prices.indexOf(price), 1);
  }
}

export class ReferenceBook {
  readonly bids = new Side((a, b) => a > b);
  readonly asks = new Side((a, b) => a < b);
  readonly byKey = new Map<string, ModelOrder>();

  constructor(
    readonly instrumentId: number,
    readonly selfMatch: SelfMatch,
    private readonly nextTradeId: () => bigint,
  ) {}

  #side(s: ModelSide): Side {
    return s === 'buy' ? this.bids : this.asks;
  }

  /** A new order (already accepted by every other check). */
  add(o: ModelOrder, tif: 'day' | 'ioc'): ModelOutcome {
    const out: ModelOutcome = { fills: [], cancels: [] };
    if (this.selfMatch === 'cancel-newest' && this.#wouldSelfMatchFirst(o)) return { ...out, rejected: 'SELF_MATCH' };
    this.#match(o, tif, out);
    return out;
  }

  cancel(key: string): ModelOutcome {
    const o = this.byKey.get(key);
    if (o === undefined) return { rejected: 'UNKNOWN_ORDER', fills: [], cancels: [] };
    this.#side(o.side).remove(o);
    this.byKey.delete(key);
    return { fills: [], cancels: [{ key, reason: 'REQUESTED', quantity: o.leaves }] };
  }

  replace(key: string, price: number, quantity: number): ModelOutcome {
    const o = this.byKey.get(key);
    if (o === undefined) return { rejected: 'UNKNOWN_ORDER', fills: [], cancels: [] };
    if (price === o.price && quantity <= o.leaves) {
      o.leaves = quantity;
      return { fills: [], cancels: [], priorityKept: true };
    }
    if (price !== o.price && this.selfMatch === 'cancel-newest' && this.#wouldSelfMatchFirst({ ...o, price })) {
      return { rejected: 'SELF_MATCH', fills: [], cancels: [] };
    }
    this.#side(o.side).remove(o);
    this.byKey.delete(key);
    o.price = price;
    o.leaves = quantity;
    const out: ModelOutcome = { fills: [], cancels: [], priorityKept: false };
    this.#match(o, 'day', out);
    return out;
  }

  /** Resting orders, best level first, oldest first within a level. */
  resting(side: ModelSide): ModelOrder[] {
    const s = this.#side(side);
    return s.prices.flatMap((p) => s.levels.get(p)!);
  }

  #wouldSelfMatchFirst(o: ModelOrder): boolean {
    const contra = this.#side(o.side === 'buy' ? 'sell' : 'buy');
    const best = contra.best();
    if (best === undefined || !crosses(o, best)) return false;
    return contra.levels.get(best)![0]!.account === o.account;
  }

  #match(a: ModelOrder, tif: 'day' | 'ioc', out: ModelOutcome): void {
    const contra = this.#side(a.side === 'buy' ? 'sell' : 'buy');
    let stopped = false;
    while (a.leaves > 0 && !stopped) {
      const best = contra.best();
      if (best === undefined || !crosses(a, best)) break;
      const level = contra.levels.get(best)!;
      let i = 0;
      while (i < level.length && a.leaves > 0) {
        const r = level[i]!;
        if (r.account === a.account) {
          if (this.selfMatch === 'cancel-newest') {
            stopped = true;
            break;
          }
          level.splice(i, 1);
          this.byKey.delete(r.key);
          out.cancels.push({ key: r.key, reason: 'SELF_MATCH', quantity: r.leaves });
          if (this.selfMatch === 'cancel-both') {
            stopped = true;
            break;
          }
          continue;
        }
        const q = Math.min(a.leaves, r.leaves);
        a.leaves -= q;
        r.leaves -= q;
        const tradeId = this.nextTradeId();
        out.fills.push({ key: a.key, orderId: a.orderId, tradeId, side: a.side, price: best, quantity: q, leaves: a.leaves, liquidity: 'taker' });
        out.fills.push({ key: r.key, orderId: r.orderId, tradeId, side: r.side, price: best, quantity: q, leaves: r.leaves, liquidity: 'maker' });
        if (r.leaves === 0) {
          level.splice(i, 1);
          this.byKey.delete(r.key);
        } else {
          i++;
        }
      }
      if (level.length === 0) contra.dropLevel(best);
    }
    if (a.leaves === 0) return;
    if (!stopped && tif === 'day') {
      this.#side(a.side).push(a);
      this.byKey.set(a.key, a);
    } else {
      out.cancels.push({ key: a.key, reason: stopped ? 'SELF_MATCH' : 'IOC_REMAINDER', quantity: a.leaves });
    }
  }
}

function crosses(o: { side: ModelSide; price: number }, levelPrice: number): boolean {
  return o.side === 'buy' ? levelPrice <= o.price : levelPrice >= o.price;
}

/** One book per instrument and one trade id sequence, as the gateway keeps them. */
export class ReferenceExchange {
  readonly books = new Map<number, ReferenceBook>();
  #tradeId: bigint;

  constructor(instruments: number[], selfMatch: SelfMatch, firstTradeId = 1n) {
    this.#tradeId = firstTradeId - 1n;
    for (const id of instruments) this.books.set(id, new ReferenceBook(id, selfMatch, () => ++this.#tradeId));
  }

  book(instrumentId: number): ReferenceBook {
    const b = this.books.get(instrumentId);
    if (b === undefined) throw new RangeError(`no instrument ${instrumentId}`);
    return b;
  }
}
