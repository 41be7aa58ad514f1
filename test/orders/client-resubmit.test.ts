// OrderClient (issue 13, item 10): a request re-submitted after its answer
// went by in a catch-up settles with the answer the gateway resends
// (possible_resend, under its first app_seq) instead of waiting forever; and
// an application listener that throws costs no answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { Side, type SequencedMessage } from '../../src/orders/messages.js';
import { clientSide } from './e2e-support.js';
import { startOrdersGateway, TOKENS } from './support.js';

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms).unref())]);

test('an id answered during the catch-up of a new run, submitted again, settles with the resent answer', { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway();
  const side = await clientSide();
  try {
    const order = { clientOrderId: 7n, instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n };
    const first = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'resubmit', accounts: [1n], engine: side.engine, device: side.device });
    const ack = await first.newOrder(order);
    assert.equal(ack.kind, 'ack');
    await first.close();  // as if this run ended before it wrote the answer down

    // A new run from app_seq 0: the catch-up replays the ack (and the cancel-on-disconnect).
    const caughtUp: SequencedMessage[] = [];
    const second = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'resubmit', accounts: [1n], engine: side.engine, device: side.device });
    second.on('message', (m: SequencedMessage) => caughtUp.push(m));
    try {
      assert.ok(second.lastAppSeq >= ack.appSeq);
      const again = await within(second.newOrder(order), 3000, 'the re-submitted order 7');
      assert.equal(again.kind, 'ack');
      assert.equal(again.appSeq, ack.appSeq, 'the first answer, under its own app_seq');
      assert.equal((again as { possibleResend: boolean }).possibleResend, true);
      assert.equal((again as { orderId: bigint }).orderId, (ack as { orderId: bigint }).orderId);
      assert.equal(second.stats().inFlight, 0);
    } finally {
      await second.close();
    }
  } finally {
    await side.close();
    await gw.close();
  }
});

test("a listener that throws costs nothing: every request of the batch settles, and the exception comes as 'error'", { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway();
  const side = await clientSide();
  try {
    const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'throwing-listener', accounts: [1n], engine: side.engine, device: side.device });
    const errors: Error[] = [];
    let thrown = false;
    client.on('error', (e: Error) => errors.push(e));
    client.on('message', () => {
      if (thrown) return;
      thrown = true;
      throw new Error('a bug in the application');
    });
    try {
      const orders = Array.from({ length: 20 }, (_, i) => ({ clientOrderId: BigInt(100 + i), instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n }));
      const answers = await within(Promise.all(orders.map((o) => client.newOrder(o))), 3000, 'the 20 orders');
      assert.deepEqual(answers.map((a) => a.kind), orders.map(() => 'ack'));
      assert.equal(client.lastAppSeq, answers.reduce((max, a) => (a.appSeq > max ? a.appSeq : max), 0n));
      assert.equal(client.stats().inFlight, 0);
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.message, 'qpgate client: a listener threw: a bug in the application');
      assert.ok(client.connected, 'the session carries on');
      const after = await within(client.newOrder({ ...orders[0]!, clientOrderId: 200n }), 3000, 'an order after it');
      assert.equal(after.kind, 'ack');
    } finally {
      await client.close();
    }
  } finally {
    await side.close();
    await gw.close();
  }
});
