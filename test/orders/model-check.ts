// Order streams for the end-to-end tests, and the check of what the gateway
// answered against the reference model run over the same stream in the
// gateway's processing order (ascending gateway order id, which the gateway
// gives each accepted NewOrder as it takes it).
import assert from 'node:assert/strict';
import { Side, TimeInForce, type NewOrderInput, type SequencedMessage } from '../../src/orders/messages.js';
import { ReferenceExchange, type ModelFill, type SelfMatch } from './reference-book.js';
import { rng } from './support.js';

export const INSTRUMENTS = [1, 2, 3, 4];
export const MID = 10_000;

export interface StreamOrder extends NewOrderInput {
  clientOrderId: bigint;
  account: bigint;
  /** The reject reason the gateway must give, for orders invalid on their face. */
  invalid?: string;
}

/**
 * `count` NewOrders for session `s` (account s + 1): four instruments, prices
 * within 5 ticks of 10000 (so they cross often), 1..20 lots, one in five IOC,
 * and about 1% invalid on their face (price outside the band, quantity above
 * the maximum, unknown instrument).
 */
export function orderStream(s: number, count: number, seed: number, firstId = 1n): StreamOrder[] {
  const random = rng(seed * 7919 + s);
  const account = BigInt(s + 1);
  const out: StreamOrder[] = [];
  for (let k = 0; k < count; k++) {
    const clientOrderId = firstId + BigInt(k);
    const base = {
      clientOrderId,
      account,
      instrumentId: INSTRUMENTS[Math.floor(random() * INSTRUMENTS.length)]!,
      side: random() < 0.5 ? Side.SIDE_BUY : Side.SIDE_SELL,
      price: MID + Math.floor(random() * 11) - 5,
      quantity: 1 + Math.floor(random() * 20),
      timeInForce: random() < 0.2 ? TimeInForce.TIME_IN_FORCE_IOC : TimeInForce.TIME_IN_FORCE_DAY,
    };
    if (random() < 0.01) {
      const kind = k % 3;
      if (kind === 0) out.push({ ...base, price: 30_000, invalid: 'INVALID_PRICE' });
      else if (kind === 1) out.push({ ...base, quantity: 2_000_000, invalid: 'INVALID_QUANTITY' });
      else out.push({ ...base, instrumentId: 77, invalid: 'UNKNOWN_INSTRUMENT' });
    } else {
      out.push(base);
    }
  }
  return out;
}

const key = (session: number, clientOrderId: bigint): string => `${session}:${clientOrderId}`;
const sideName = (s: number): 'buy' | 'sell' => (s === Side.SIDE_BUY ? 'buy' : 'sell');

export interface CheckResult {
  model: ReferenceExchange;
  /** Resting orders per session index: clientOrderId → leaves, by the model. */
  resting: Map<number, Map<bigint, { instrumentId: number; leaves: number }>>;
  accepted: number;
  rejected: number;
  fills: number;
  trades: number;
  /** Position (lots, buys − sells) and traded notional per account, by the model. */
  positions: Map<bigint, { position: bigint; traded: bigint }>;
}

/**
 * Checks the gateway's answers (`messages[s]`: every sequenced message session
 * s processed, in order) against the model over `streams`:
 *   - app_seq runs 1, 2, 3... in every session: nothing lost, nothing twice;
 *   - every order has exactly one Ack or Reject, and the invalid ones the expected Reject;
 *   - every order's fills (trade id, price, quantity, leaves, liquidity) and the
 *     unsolicited cancels are the model's, run in gateway order id order;
 *   - each trade has a buy and a sell fill of the same price and quantity.
 */
export function checkAgainstModel(streams: StreamOrder[][], messages: SequencedMessage[][], selfMatch: SelfMatch): CheckResult {
  const orders = new Map<string, { session: number; order: StreamOrder }>();
  streams.forEach((stream, s) => stream.forEach((o) => orders.set(key(s, o.clientOrderId), { session: s, order: o })));

  const acks = new Map<string, bigint>();
  const answers = new Map<string, number>();
  const gatewayFills = new Map<string, ModelFill[]>();
  const gatewayCancels = new Map<string, Array<{ reason: string; quantity: number }>>();
  const byTrade = new Map<bigint, Array<{ side: string; price: number; quantity: number }>>();
  let rejected = 0;
  messages.forEach((list, s) => {
    list.forEach((m, i) => assert.equal(m.appSeq, BigInt(i + 1), `session ${s}: message ${i} has app_seq ${m.appSeq}`));
    for (const m of list) {
      const k = key(s, m.clientOrderId);
      if (m.kind === 'ack' || m.kind === 'reject') {
        answers.set(k, (answers.get(k) ?? 0) + 1);
        const o = orders.get(k);
        assert.ok(o, `session ${s}: an answer for client order id ${m.clientOrderId} it never sent`);
        if (m.kind === 'ack') {
          assert.equal(o.order.invalid, undefined, `${k} should have been rejected ${o.order.invalid}`);
          acks.set(k, m.orderId);
        } else {
          rejected++;
          assert.equal(m.reasonName, o.order.invalid ?? `(no reject expected: ${m.text})`, `${k}: ${m.text}`);
        }
      } else if (m.kind === 'fill') {
        const list2 = gatewayFills.get(k) ?? [];
        list2.push({
          key: k,
          orderId: m.orderId,
          tradeId: m.tradeId,
          side: sideName(m.side),
          price: m.price,
          quantity: m.quantity,
          leaves: m.leavesQuantity,
          liquidity: m.liquidity === 1 ? 'maker' : 'taker',
        });
        gatewayFills.set(k, list2);
        const t = byTrade.get(m.tradeId) ?? [];
        t.push({ side: sideName(m.side), price: m.price, quantity: m.quantity });
        byTrade.set(m.tradeId, t);
      } else if (m.kind === 'cancelAck' && m.reasonName !== 'REQUESTED') {
        const c = gatewayCancels.get(k) ?? [];
        c.push({ reason: m.reasonName, quantity: m.cancelledQuantity });
        gatewayCancels.set(k, c);
      }
    }
  });
  for (const [k] of orders) assert.equal(answers.get(k), 1, `${k}: expected exactly one Ack or Reject, got ${answers.get(k) ?? 0}`);

  // Fills are conserved: each trade is one buy and one sell of the same price and quantity.
  for (const [tradeId, sides] of byTrade) {
    assert.equal(sides.length, 2, `trade ${tradeId}: ${sides.length} fills`);
    assert.deepEqual(new Set(sides.map((x) => x.side)), new Set(['buy', 'sell']), `trade ${tradeId}`);
    assert.equal(sides[0]!.price, sides[1]!.price, `trade ${tradeId}: prices`);
    assert.equal(sides[0]!.quantity, sides[1]!.quantity, `trade ${tradeId}: quantities`);
  }

  // The model, in the gateway's processing order.
  const firstTrade = byTrade.size === 0 ? 1n : [...byTrade.keys()].reduce((a, b) => (a < b ? a : b));
  const model = new ReferenceExchange(INSTRUMENTS, selfMatch, firstTrade);
  const sequence = [...acks].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const modelFills = new Map<string, ModelFill[]>();
  const modelCancels = new Map<string, Array<{ reason: string; quantity: number }>>();
  const positions = new Map<bigint, { position: bigint; traded: bigint }>();
  const accountOf = (k: string): bigint => orders.get(k)!.order.account;
  for (const [k, orderId] of sequence) {
    const { order } = orders.get(k)!;
    const outcome = model.book(order.instrumentId).add(
      { key: k, orderId, account: order.account, instrumentId: order.instrumentId, side: sideName(order.side), price: order.price, leaves: order.quantity },
      order.timeInForce === TimeInForce.TIME_IN_FORCE_IOC ? 'ioc' : 'day',
    );
    assert.equal(outcome.rejected, undefined, `${k}: the model rejects it (${outcome.rejected}), the gateway acked it`);
    for (const f of outcome.fills) {
      modelFills.set(f.key, [...(modelFills.get(f.key) ?? []), f]);
      const p = positions.get(accountOf(f.key)) ?? { position: 0n, traded: 0n };
      p.position += BigInt(f.side === 'buy' ? f.quantity : -f.quantity);
      p.traded += BigInt(f.price) * BigInt(f.quantity);
      positions.set(accountOf(f.key), p);
    }
    for (const c of outcome.cancels) modelCancels.set(c.key, [...(modelCancels.get(c.key) ?? []), { reason: c.reason, quantity: c.quantity }]);
  }
  let fills = 0;
  for (const [k] of orders) {
    const g = (gatewayFills.get(k) ?? []).sort((a, b) => (a.tradeId < b.tradeId ? -1 : 1));
    const m = modelFills.get(k) ?? [];
    assert.deepEqual(g, m, `${k}: fills`);
    fills += g.length;
    assert.deepEqual(gatewayCancels.get(k) ?? [], modelCancels.get(k) ?? [], `${k}: unsolicited cancels`);
  }
  const resting = new Map<number, Map<bigint, { instrumentId: number; leaves: number }>>();
  for (const book of model.books.values()) {
    for (const side of ['buy', 'sell'] as const) {
      for (const o of book.resting(side)) {
        const { session, order } = orders.get(o.key)!;
        const r = resting.get(session) ?? new Map();
        r.set(order.clientOrderId, { instrumentId: o.instrumentId, leaves: o.leaves });
        resting.set(session, r);
      }
    }
  }
  return { model, resting, accepted: acks.size, rejected, fills, trades: byTrade.size, positions };
}
