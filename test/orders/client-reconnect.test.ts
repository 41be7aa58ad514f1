// OrderClient.reconnect() called again while one is under way (an app's
// 'disconnect' handler and its retry timer both firing) joins the one in
// progress: one handshake, the session goes on. Before, the two handshakes
// raced for the session's name (one got 409 even with takeover), and in the
// fault campaign's driver a poll then threw "not connected" uncaught.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { clientSide } from './e2e-support.js';
import { startOrdersGateway, TOKENS } from './support.js';

test('two reconnect() calls at once make one reconnect, and the session goes on', { timeout: 60_000 }, async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  const gw = await startOrdersGateway();
  const side = await clientSide();
  try {
    const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'twice', accounts: [1n], engine: side.engine, device: side.device, takeover: true });
    try {
      const order = (id: bigint) => ({ clientOrderId: id, instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n });
      assert.equal((await client.newOrder(order(1n))).kind, 'ack');
      client.disconnect();
      await Promise.all([client.reconnect(), client.reconnect()]);
      assert.equal(client.connected, true);
      assert.equal(client.stats().reconnects, 1, 'the second call joined the first');
      assert.equal((await client.newOrder(order(2n))).kind, 'ack');
      await new Promise((resolve) => setTimeout(resolve, 100)); // a few poll cycles
      assert.deepEqual(uncaught, []);
    } finally {
      await client.close();
    }
  } finally {
    process.off('uncaughtException', onUncaught);
    await side.close();
    await gw.close();
  }
});
