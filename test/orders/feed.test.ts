// With the feed running, the order books publish on it: a trade on an
// order-entry instrument reaches a feed subscriber as a Trade (price,
// quantity, trade id as in the fills) and the book changes as BookLevelUpdates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { subscribe, type FeedMessage } from '../../src/feed/subscriber.js';
import { MessageType } from '../../src/feed/messages.js';
import { OrderClient } from '../../src/orders/client.js';
import { Side, type Fill } from '../../src/orders/messages.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { ordersYaml, startOrdersGateway, TOKENS } from './support.js';
import { clientSide } from './e2e-support.js';

test('trades and book levels of the order books are published on the feed', { timeout: 60_000 }, async () => {
  const group = `239.77.${randomInt(100, 250)}.${randomInt(1, 250)}`;
  const gw = await startOrdersGateway(`feeds:\n  channels: [{id: 1, groupA: ${group}}]\n  synthetic: {enabled: false}\n${ordersYaml({ selfMatch: 'cancel-newest' })}`);
  const side = await clientSide();
  const got: FeedMessage[] = [];
  const sub = await subscribe({ engine: side.engine, device: { address: freeLoopbackAddress() }, channels: [{ id: 1, groupA: group }], onMessage: (m) => got.push(m) });
  const clients: OrderClient[] = [];
  try {
    for (const account of [1n, 2n]) {
      clients.push(await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: `feed-${account}`, accounts: [account], engine: side.engine, device: side.device }));
    }
    const fills: Fill[] = [];
    for (const c of clients) c.on('fill', (f: Fill) => fills.push(f));
    assert.equal((await clients[0]!.newOrder({ clientOrderId: 1n, instrumentId: 2, side: Side.SIDE_SELL, price: 10_010, quantity: 7, account: 1n })).kind, 'ack');
    assert.equal((await clients[1]!.newOrder({ clientOrderId: 1n, instrumentId: 2, side: Side.SIDE_BUY, price: 10_010, quantity: 3, account: 2n })).kind, 'ack');
    const end = Date.now() + 10_000;
    const trades = () => got.filter((m) => m.type === MessageType.MESSAGE_TYPE_TRADE && m.instrumentId === 2);
    while (trades().length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    const [trade] = trades();
    assert.ok(trade, `a Trade on the feed (got types ${[...new Set(got.map((m) => m.type))].join(', ')})`);
    const t = trade.decode();
    assert.equal(t?.type, MessageType.MESSAGE_TYPE_TRADE);
    const v = t!.value as { price?: unknown; size?: unknown; tradeId?: unknown };
    assert.equal(Number(v.price), 10_010);
    assert.equal(Number(v.size), 3);
    assert.equal(BigInt(String(v.tradeId)), fills[0]!.tradeId, 'the feed trade id is the fills\' trade id');
    assert.ok(
      got.some((m) => m.type === MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE && m.instrumentId === 2),
      'book level updates for the instrument',
    );
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await sub.close();
    await side.close();
    await gw.close();
  }
});
