// The plain Node TCP order gateway that bench_orders_rc is compared with: the
// same job as the order service, done the way a Node service would do it.
// One `net` server; connection k (in accept order) is session k + 1, entitled
// to accounts 2k + 1 and 2k + 2, as in bench_orders_rc. Frames are a u32 LE
// length + one protobuf OrderMessage (protobufjs, the generated module).
//
// Per request: decode -> checks (instrument, side, price band and tick,
// quantity, entitlement, duplicate client order id, credit) -> a one-price
// -level book per side with price-time matching -> a journal record appended
// -> the answers (Welcome / Ack + Fills / Reject) encoded. Per 'data' batch:
// the journal records written with one write(2) and never fsync'ed (the
// order service's default 'none' policy), then the answers written, one
// socket write per session.
import net from 'node:net';
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { ov1, RejectReason, Side, toU64 } from '../../src/orders/messages.js';

const INSTRUMENT = 1;
const TICK = 1;
const MIN_PRICE = 1;
const MAX_PRICE = 100_000;
const MAX_QUANTITY = 1_000_000;
const CREDIT_LIMIT = 10_000_000_000;

interface Resting {
  session: Session;
  clientOrderId: bigint;
  orderId: number;
  account: number;
  price: number;
  quantity: number;
}

interface Session {
  id: number;
  socket: net.Socket;
  accounts: Set<number>;
  appSeq: number;
  seen: Set<bigint>; // client order ids used
  out: Buffer[];
}

// A journal record: u32 length, u16 type, u16 0, payload (the request bytes).
class Journal {
  private readonly fd: number;
  private pending: Buffer[] = [];
  constructor(readonly path: string) {
    this.fd = openSync(path, 'w');
  }
  append(type: number, payload: Uint8Array): void {
    const h = Buffer.allocUnsafe(8);
    h.writeUInt32LE(payload.length, 0);
    h.writeUInt16LE(type, 4);
    h.writeUInt16LE(0, 6);
    this.pending.push(h, Buffer.from(payload.buffer, payload.byteOffset, payload.length));
  }
  // write(2), no fsync: survives a process crash, as the service's 'none'.
  write(): void {
    if (this.pending.length === 0) return;
    writeSync(this.fd, Buffer.concat(this.pending));
    this.pending = [];
  }
  close(): void {
    closeSync(this.fd);
    unlinkSync(this.path);
  }
}

export class NodeTcpGateway {
  private readonly sessions: Session[] = [];
  private readonly bids: Resting[] = []; // FIFO at one price level per side is all the bench needs,
  private readonly asks: Resting[] = []; // but matching walks prices as a book would
  private readonly openNotional = new Map<number, number>();
  private nextOrderId = 1;
  private nextTradeId = 1;
  private readonly journal: Journal;
  readonly server: net.Server;

  constructor(journalPath: string) {
    this.journal = new Journal(journalPath);
    this.server = net.createServer((socket) => this.accept(socket));
  }

  close(): void {
    this.server.close();
    this.journal.close();
  }

  private accept(socket: net.Socket): void {
    socket.setNoDelay(true);
    const k = this.sessions.length;
    const s: Session = { id: k + 1, socket, accounts: new Set([2 * k + 1, 2 * k + 2]), appSeq: 0, seen: new Set(), out: [] };
    this.sessions.push(s);
    let held = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const buf = held.length ? Buffer.concat([held, chunk]) : chunk;
      let at = 0;
      while (buf.length - at >= 4) {
        const n = buf.readUInt32LE(at);
        if (buf.length - at - 4 < n) break;
        this.onMessage(s, buf.subarray(at + 4, at + 4 + n));
        at += 4 + n;
      }
      held = at < buf.length ? Buffer.from(buf.subarray(at)) : Buffer.alloc(0);
      this.journal.write();
      for (const x of this.sessions) this.flush(x);
    });
    socket.on('error', () => socket.destroy());
  }

  private answer(s: Session, body: Record<string, unknown>): void {
    const bytes = ov1.OrderMessage.encode(body).finish();
    const frame = Buffer.allocUnsafe(4 + bytes.length);
    frame.writeUInt32LE(bytes.length, 0);
    frame.set(bytes, 4);
    s.out.push(frame);
  }

  private flush(s: Session): void {
    if (s.out.length === 0) return;
    s.socket.write(s.out.length === 1 ? (s.out[0] as Buffer) : Buffer.concat(s.out));
    s.out = [];
  }

  private reject(s: Session, clientOrderId: bigint, reason: RejectReason, text: string): void {
    this.answer(s, { reject: { appSeq: ++s.appSeq, clientOrderId: Number(clientOrderId), reason, text } });
  }

  private onMessage(s: Session, bytes: Buffer): void {
    let m: ReturnType<typeof ov1.OrderMessage.decode>;
    try {
      m = ov1.OrderMessage.decode(bytes);
    } catch (e) {
      this.reject(s, 0n, RejectReason.REJECT_REASON_MALFORMED, (e as Error).message);
      return;
    }
    if (m.hello) {
      this.answer(s, { welcome: { appSeq: s.appSeq, resendFrom: s.appSeq + 1 } });
      return;
    }
    const o = m.newOrder;
    if (!o) {
      this.reject(s, 0n, RejectReason.REJECT_REASON_MALFORMED, 'the benchmark gateway takes Hello and NewOrder');
      return;
    }
    const clid = toU64(o.clientOrderId);
    const price = Number(o.price);
    const quantity = Number(o.quantity);
    const account = Number(toU64(o.account));
    if (clid === 0n) return this.reject(s, clid, RejectReason.REJECT_REASON_MALFORMED, 'client_order_id is required');
    if (s.seen.has(clid)) return this.reject(s, clid, RejectReason.REJECT_REASON_DUPLICATE, 'client_order_id used');
    if (o.instrumentId !== INSTRUMENT) return this.reject(s, clid, RejectReason.REJECT_REASON_UNKNOWN_INSTRUMENT, 'unknown instrument');
    if (o.side !== Side.SIDE_BUY && o.side !== Side.SIDE_SELL) return this.reject(s, clid, RejectReason.REJECT_REASON_MALFORMED, 'side');
    if (price < MIN_PRICE || price > MAX_PRICE || price % TICK !== 0) {
      return this.reject(s, clid, RejectReason.REJECT_REASON_INVALID_PRICE, `price ${price}`);
    }
    if (quantity <= 0 || quantity > MAX_QUANTITY) return this.reject(s, clid, RejectReason.REJECT_REASON_INVALID_QUANTITY, 'quantity');
    if (!s.accounts.has(account)) return this.reject(s, clid, RejectReason.REJECT_REASON_NOT_ENTITLED, `account ${account}`);
    const buy = o.side === Side.SIDE_BUY;
    const notional = (this.openNotional.get(account) ?? 0) + (buy ? price * quantity : 0);
    if (notional > CREDIT_LIMIT) return this.reject(s, clid, RejectReason.REJECT_REASON_CREDIT_LIMIT, 'credit');
    s.seen.add(clid);
    this.journal.append(2, bytes);
    const order: Resting = { session: s, clientOrderId: clid, orderId: this.nextOrderId++, account, price, quantity };
    this.answer(s, { ack: { appSeq: ++s.appSeq, clientOrderId: Number(clid), orderId: order.orderId } });
    this.match(order, buy);
  }

  private match(order: Resting, buy: boolean): void {
    const other = buy ? this.asks : this.bids;
    while (order.quantity > 0 && other.length > 0) {
      const best = other[0] as Resting;
      if (buy ? best.price > order.price : best.price < order.price) break;
      const q = Math.min(order.quantity, best.quantity);
      order.quantity -= q;
      best.quantity -= q;
      const tradeId = this.nextTradeId++;
      this.fill(order, buy, best.price, q, tradeId, 2);
      this.fill(best, !buy, best.price, q, tradeId, 1);
      if (!buy) this.openNotional.set(best.account, (this.openNotional.get(best.account) ?? 0) - best.price * q);
      if (best.quantity === 0) other.shift();
    }
    if (order.quantity === 0) return;
    const same = buy ? this.bids : this.asks;
    // Price-time priority: after every order at an equal or better price.
    let i = same.length;
    while (i > 0 && (buy ? (same[i - 1] as Resting).price < order.price : (same[i - 1] as Resting).price > order.price)) i--;
    same.splice(i, 0, order);
    if (buy) this.openNotional.set(order.account, (this.openNotional.get(order.account) ?? 0) + order.price * order.quantity);
  }

  private fill(o: Resting, buy: boolean, price: number, quantity: number, tradeId: number, liquidity: number): void {
    this.journal.append(4, ov1.Fill.encode({ orderId: o.orderId, price, quantity, tradeId }).finish());
    this.answer(o.session, {
      fill: {
        appSeq: ++o.session.appSeq,
        clientOrderId: Number(o.clientOrderId),
        orderId: o.orderId,
        instrumentId: INSTRUMENT,
        side: buy ? Side.SIDE_BUY : Side.SIDE_SELL,
        price,
        quantity,
        leavesQuantity: o.quantity,
        tradeId,
        liquidity,
      },
    });
  }
}
