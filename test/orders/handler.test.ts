// TS order handlers (orders.handlers): a module from a path and the built-in
// drop copy see every step of every order once, in processing order, with
// the fields of the acks and fills the sessions got; a handler that throws is
// counted and the gateway goes on; after a restart only what happens since is
// handed out; a module that cannot be loaded stops the start, naming its key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OrderClient } from '../../src/orders/client.js';
import { Side, type Ack, type Fill } from '../../src/orders/messages.js';
import type { OrderEvent } from '../../src/orders/events.js';
import { call, ordersYaml, startOrdersGateway, TOKENS } from './support.js';
import { clientSide, scrape } from './e2e-support.js';

// A handler module as a deployment writes one: it keeps what it sees where
// this test can read it, and throws on one kind of event.
const RECORDER = `
export function createOrderHandler(context) {
  const seen = (globalThis[context.options.key] ??= []);
  return {
    name: 'recorder',
    onEvent(event) {
      seen.push(event);
      if (event.kind === context.options.throwOn) throw new Error('recorder: refusing ' + event.kind);
    },
  };
}
`;

function handlersYaml(recorder: string, key: string): string {
  return `  handlers:
    - {module: ${recorder}, options: {key: ${key}, throwOn: replaced}}
    - {module: drop-copy, options: {file: copies/drop.jsonl}}
`;
}

async function until(what: string, done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('order handlers see every step of every order once, in order; a throw is counted; a restart hands out only what is new', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-handlers-'));
  const recorder = join(dir, 'recorder.mjs');
  writeFileSync(recorder, RECORDER);
  const key = `qpgateRecorder${process.pid}`;
  const seen = (): OrderEvent[] => ((globalThis as Record<string, unknown>)[key] as OrderEvent[] | undefined) ?? [];
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  const yaml = ordersYaml() + handlersYaml(recorder, key);
  let gw = await startOrdersGateway(yaml, stateDir);
  const side = await clientSide();
  try {
    const connect = (account: bigint) =>
      OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: `handler-${account}`, accounts: [account], engine: side.engine, device: side.device });
    const seller = await connect(1n);
    const buyer = await connect(2n);
    const buyerFills: Fill[] = [];
    const sellerFills: Fill[] = [];
    buyer.on('fill', (f: Fill) => buyerFills.push(f));
    seller.on('fill', (f: Fill) => sellerFills.push(f));

    const sellAck = (await seller.newOrder({ clientOrderId: 1n, instrumentId: 3, side: Side.SIDE_SELL, price: 10_010, quantity: 7, account: 1n })) as Ack;
    const buyAck = (await buyer.newOrder({ clientOrderId: 1n, instrumentId: 3, side: Side.SIDE_BUY, price: 10_020, quantity: 3, account: 2n })) as Ack;
    assert.equal(sellAck.kind, 'ack');
    assert.equal(buyAck.kind, 'ack');
    assert.equal((await seller.replace({ clientOrderId: 2n, origClientOrderId: 1n, instrumentId: 3, price: 10_030, quantity: 2 })).kind, 'replaceAck');
    assert.equal((await seller.cancel({ clientOrderId: 3n, origClientOrderId: 1n, instrumentId: 3 })).kind, 'cancelAck', 'the gateway goes on after the handler threw');
    await until('six events', () => seen().length >= 6);
    await until('both fills', () => buyerFills.length === 1 && sellerFills.length === 1);

    const ev = seen();
    assert.deepEqual(
      ev.map((e) => [e.kind, e.session, e.clientOrderId]),
      [
        ['accepted', seller.id, 1n],
        ['accepted', buyer.id, 1n],
        ['filled', buyer.id, 1n],
        ['filled', seller.id, 1n],
        ['replaced', seller.id, 2n],
        ['cancelled', seller.id, 3n],
      ],
    );
    const [sellAccepted, buyAccepted, taker, maker, replaced, cancelled] = ev as [OrderEvent, OrderEvent, OrderEvent, OrderEvent, OrderEvent, OrderEvent];
    assert.equal(sellAccepted.orderId, BigInt(sellAck.orderId), "the event's order id is the Ack's");
    assert.equal(buyAccepted.orderId, BigInt(buyAck.orderId));
    assert.ok(buyAccepted.orderId > sellAccepted.orderId, 'processing order');
    assert.deepEqual(
      [sellAccepted.account, sellAccepted.instrumentId, sellAccepted.side, sellAccepted.price, sellAccepted.quantity, sellAccepted.appSeq],
      [1n, 3, Side.SIDE_SELL, 10_010n, 7n, BigInt(sellAck.appSeq)],
    );
    assert.deepEqual([taker.price, taker.quantity, taker.leaves], [10_010n, 3n, 0n], 'a fill is at the trade price');
    assert.deepEqual([maker.price, maker.quantity, maker.leaves, maker.orderId], [10_010n, 3n, 4n, sellAccepted.orderId]);
    assert.equal(taker.tradeId, maker.tradeId);
    assert.equal(taker.tradeId, BigInt(buyerFills[0]!.tradeId), "the trade id is the fills'");
    assert.equal(maker.leaves, BigInt(sellerFills[0]!.leavesQuantity));
    assert.deepEqual([replaced.origClientOrderId, replaced.price, replaced.quantity, replaced.orderId], [1n, 10_030n, 2n, sellAccepted.orderId]);
    assert.deepEqual([cancelled.origClientOrderId, cancelled.quantity, cancelled.leaves, cancelled.cancelReason], [1n, 2n, 0n, 'REQUESTED']);

    const status = (await call(gw.url, 'GET', '/v1/status', TOKENS.viewer)).json;
    assert.deepEqual(status.sessions.summary.orders.handlers, ['recorder', 'drop-copy'], 'the status names the attached handlers');

    const m = await scrape(gw.url);
    assert.equal(m('qpgate_order_events_total', 'qpgate_order_events_total'), 6);
    assert.equal(m('qpgate_order_handler_events_total', 'qpgate_order_handler_events_total', { handler: 'recorder' }), 6);
    assert.equal(m('qpgate_order_handler_errors_total', 'qpgate_order_handler_errors_total', { handler: 'recorder' }), 1);
    assert.equal(m('qpgate_order_handler_events_total', 'qpgate_order_handler_events_total', { handler: 'drop-copy' }), 6);
    assert.equal(m('qpgate_order_handler_errors_total', 'qpgate_order_handler_errors_total', { handler: 'drop-copy' }), 0);

    await seller.close();
    await buyer.close();
    await gw.close();
    // A clean shutdown closed the drop copy after its last event.
    const lines = readFileSync(join(stateDir, 'copies/drop.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.kind, l.clientOrderId, l.side]),
      [
        ['accepted', '1', 'SELL'],
        ['accepted', '1', 'BUY'],
        ['filled', '1', 'BUY'],
        ['filled', '1', 'SELL'],
        ['replaced', '2', 'SELL'],
        ['cancelled', '3', 'SELL'],
      ],
    );
    assert.equal(lines[2].tradeId, String(taker.tradeId));
    assert.equal(lines[5].cancelReason, 'REQUESTED');

    // Restart on the same journal: the replay rebuilds the books but is not handed out again.
    seen().length = 0;
    gw = await startOrdersGateway(yaml, stateDir);
    const again = await connect(1n);
    assert.equal((await again.newOrder({ clientOrderId: 4n, instrumentId: 3, side: Side.SIDE_BUY, price: 9_000, quantity: 1, account: 1n })).kind, 'ack');
    await until('the new order', () => seen().length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(seen().map((e) => [e.kind, e.clientOrderId]), [['accepted', 4n]]);
    await again.close();
  } finally {
    await gw.close().catch(() => undefined);
    await side.close();
    delete (globalThis as Record<string, unknown>)[key];
  }
});

test('a handler module that cannot be loaded stops the start, naming its key and the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-handlers-bad-'));
  const empty = join(dir, 'empty.mjs');
  writeFileSync(empty, 'export const nothing = 1;\n');
  for (const s of ['s1', 's2', 's3']) mkdirSync(join(dir, s));
  await assert.rejects(
    startOrdersGateway(`${ordersYaml()}  handlers:\n    - {module: ${join(dir, 'missing.mjs')}}\n`, join(dir, 's1')),
    (e: Error) => e.message.startsWith(`orders.handlers.0.module: cannot load order handler module '${join(dir, 'missing.mjs')}': `),
  );
  await assert.rejects(
    startOrdersGateway(`${ordersYaml()}  handlers:\n    - {module: drop-copy}\n    - {module: ${empty}}\n`, join(dir, 's2')),
    (e: Error) => e.message === `orders.handlers.1.module: module '${empty}' exports no createOrderHandler(context) function`,
  );
  await assert.rejects(
    startOrdersGateway(`${ordersYaml()}  handlers:\n    - {module: drop-copy, options: {file: ""}}\n`, join(dir, 's3')),
    (e: Error) => e.message === `orders.handlers.0.module: createOrderHandler of 'drop-copy' failed: options.file: expected a non-empty path, got ""`,
  );
});
