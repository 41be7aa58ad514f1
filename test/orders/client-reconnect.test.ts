// OrderClient.reconnect() called again while one is under way (an app's
// 'disconnect' handler and its retry timer both firing) joins the one in
// progress: one handshake, the session goes on. Before, the two handshakes
// raced for the session's name (one got 409 even with takeover), and in the
// fault campaign's driver a poll then threw "not connected" uncaught.
//
// A connection lost during the resend (the catch-up after Welcome) fails that
// reconnect at once, saying so, and the next one resends from where it got
// to: no fill lost or seen twice. A link that dies in the resend is seen by
// the keepalive READ, which now runs then too. Before, both waited
// helloTimeoutMs and then blamed the gateway ("the gateway's resend stopped
// at app_seq k of N"), which is what the fault campaign's sessions reported
// under netem.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { Side, type Fill, type SequencedMessage } from '../../src/orders/messages.js';
import { setFaults } from '../../src/native/testing/faults.js';
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

type ClientSide = Awaited<ReturnType<typeof clientSide>>;

/**
 * A seller whose `resting` orders were filled while it was away (disconnect():
 * the gateway does not know, its fills wait in the resend store), listening
 * for the fills; whenResent/firstResent run a function at each / the first resent message.
 */
async function filledWhileAway(url: string, side: ClientSide, resting: number, options: { recvDepth?: number; keepaliveMs?: number; helloTimeoutMs?: number } = {}) {
  const common = { url, token: TOKENS.desk, engine: side.engine, device: side.device, takeover: true, helloTimeoutMs: options.helloTimeoutMs ?? 30_000 };
  const seller = await OrderClient.connect({ ...common, ...options, name: 'resend-seller', accounts: [1n] });
  const buyer = await OrderClient.connect({ ...common, name: 'resend-buyer', accounts: [2n] });
  const order = (id: number, sideOf: Side, account: bigint) => ({ clientOrderId: BigInt(id), instrumentId: 1, side: sideOf, price: 100, quantity: 1, account });
  const acks = await Promise.all(Array.from({ length: resting }, (_, i) => seller.newOrder(order(i + 1, Side.SIDE_SELL, 1n))));
  assert.ok(acks.every((a) => a.kind === 'ack'));
  const beforeFills = seller.lastAppSeq;
  seller.disconnect();
  const bought = await Promise.all(Array.from({ length: resting }, (_, i) => buyer.newOrder(order(i + 1, Side.SIDE_BUY, 2n))));
  assert.ok(bought.every((a) => a.kind === 'ack'));
  const fills = new Map<bigint, Fill>();
  const twice: bigint[] = [];
  seller.on('fill', (f: Fill) => {
    if (fills.has(f.appSeq)) twice.push(f.appSeq);
    fills.set(f.appSeq, f);
  });
  let onResent: (() => void) | undefined;
  seller.on('message', (m: SequencedMessage) => {
    if (m.appSeq > beforeFills) onResent?.();
  });
  return {
    seller,
    fills,
    twice,
    whenResent: (f: () => void) => (onResent = f),
    /** `f` at the first resent message only. */
    firstResent(f: () => void) {
      onResent = () => {
        onResent = undefined;
        f();
      };
    },
    close: async () => {
      await seller.close();
      await buyer.close();
    },
    /** The next reconnect gets the rest: every fill once, app_seq at the end. */
    async reconnectsWhole() {
      await seller.reconnect();
      assert.equal(seller.connected, true);
      assert.equal(fills.size, resting, `every fill once (${fills.size} app_seqs)`);
      assert.deepEqual(twice, []);
      assert.equal(seller.lastAppSeq, beforeFills + BigInt(resting));
    },
  };
}

test('a connection lost during the resend fails that reconnect at once, and the next one resends the rest', { timeout: 90_000 }, async () => {
  const gw = await startOrdersGateway();
  const side = await clientSide();
  const away = await filledWhileAway(gw.url, side, 20);
  try {
    away.firstResent(() => away.seller.disconnect()); // the QP goes, mid-resend
    const started = performance.now();
    await assert.rejects(away.seller.reconnect(), /connection lost \(disconnect\(\) called\) during the resend, at app_seq \d+ of \d+/);
    assert.ok(performance.now() - started < 30_000, 'failed when the connection was lost, not at helloTimeoutMs');
    assert.equal(away.seller.connected, false);
    assert.equal(away.fills.size, 1, 'one fill came before the cut');
    await away.reconnectsWhole();
  } finally {
    await away.close();
    await side.close();
    await gw.close();
  }
});

test('a link that dies during the resend is seen by the keepalive READ, not after helloTimeoutMs', { timeout: 90_000 }, async () => {
  const gw = await startOrdersGateway();
  const side = await clientSide();
  // More fills than receives posted: the resend takes several batches, so the cut lands inside it.
  const resting = 300;
  const away = await filledWhileAway(gw.url, side, resting, { recvDepth: 32, keepaliveMs: 100 });
  try {
    away.firstResent(() => setFaults(side.device, { tx: { drop: 1 }, rx: { drop: 1 } }));
    const started = performance.now();
    await assert.rejects(away.seller.reconnect(), /connection lost \(keepalive READ completed with IBV_WC_RETRY_EXC_ERR: the gateway stopped answering\) during the resend/);
    const ms = performance.now() - started;
    assert.ok(ms < 30_000, `seen in ${ms.toFixed(0)} ms, before helloTimeoutMs`);
    assert.ok(away.fills.size < resting, `the cut landed inside the resend (${away.fills.size} of ${resting} fills before it)`);
    setFaults(side.device, null);
    await away.reconnectsWhole();
  } finally {
    setFaults(side.device, null);
    await away.close();
    await side.close();
    await gw.close();
  }
});

test('a resend that takes longer than helloTimeoutMs but keeps coming is not a stalled one', { timeout: 90_000 }, async () => {
  const gw = await startOrdersGateway();
  const side = await clientSide();
  const resting = 200;
  const helloTimeoutMs = 1000;
  const away = await filledWhileAway(gw.url, side, resting, { recvDepth: 32, helloTimeoutMs });
  try {
    // An application that takes 10 ms over each fill: the resend lasts ~2 s, each message within 1 s of the last.
    away.whenResent(() => {
      const until = performance.now() + 10;
      while (performance.now() < until);
    });
    const started = performance.now();
    await away.reconnectsWhole();
    assert.ok(performance.now() - started > helloTimeoutMs, 'the resend outlasted helloTimeoutMs');
  } finally {
    await away.close();
    await side.close();
    await gw.close();
  }
});
