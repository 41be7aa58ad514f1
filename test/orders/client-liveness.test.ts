// An idle OrderClient learns that its gateway is gone. An RC requester hears
// of a dead peer only through a request that goes unanswered, so before the
// keepalive a client with nothing in flight stayed `connected` forever after
// the gateway was SIGKILLed or ended its session (the fault campaign's
// clients sat out whole gateway lives that way). The keepalive READs the
// session's own risk.local page every keepaliveMs (src/orders/client.ts);
// a gateway that stopped answering fails it with IBV_WC_RETRY_EXC_ERR.
//
// And a reconnect that fails leaves the client disconnected (before, a
// Hello or catch-up that failed left `connected` true on a half-made
// session, and a reconnect loop that waits for !connected stopped there),
// with its pending requests kept for the next reconnect().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { call, ordersYaml, startOrdersGateway, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { disconnected, keepalivesAnswered } from './liveness-support.js';

const KEEPALIVE_MS = 200;
const show = (v: unknown) => JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
const order = (id: bigint) => ({ clientOrderId: id, instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n });

test('an idle client sees its gateway SIGKILLed; reconnect fails while it is down and leaves it disconnected; the restarted gateway takes it back', { timeout: 120_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  let gw = await startGatewayProcess(['--config', file]);
  const stateDir = gw.stateDir;
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'liveness-kill', accounts: [1n], device: { address: freeLoopbackAddress() }, keepaliveMs: KEEPALIVE_MS, timeoutMs: 2000, helloTimeoutMs: 2000 });
  try {
    assert.equal((await client.newOrder(order(1n))).kind, 'ack');
    // Alive and idle: the probes are answered and nothing else happens.
    await keepalivesAnswered(client, 2);
    assert.equal(client.connected, true);

    gw.child.kill('SIGKILL');
    assert.equal(await gw.exited, null, 'killed by the signal');
    // Nothing in flight: only the keepalive can find out.
    const lost = await disconnected(client, 10_000);
    assert.match(lost.reason, /^keepalive READ completed with IBV_WC_RETRY_EXC_ERR/, lost.reason);
    assert.equal(client.connected, false);
    process.stdout.write(`# the kill was seen after ${lost.ms.toFixed(0)} ms (keepaliveMs ${KEEPALIVE_MS}, retry budget 8 × 67 ms)\n`);

    // A request while disconnected waits; a reconnect to nobody fails and changes nothing.
    const pending = client.newOrder(order(2n));
    pending.catch(() => undefined); // settled below; close() fails it if the test fails first
    await assert.rejects(client.reconnect(), /^HandshakeError: no gateway answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    assert.equal(client.connected, false, 'a failed reconnect leaves the client disconnected');
    assert.equal(client.stats().queued + client.stats().inFlight, 1, JSON.stringify(client.stats()));

    gw = await startGatewayProcess(['--config', file, '--set', `state.dir=${stateDir}`]);
    await client.reconnect({ url: gw.url });
    assert.equal(client.connected, true);
    const answer = await pending;
    assert.equal(answer.kind, 'ack', show(answer));
    assert.equal(answer.clientOrderId, 2n);
    // The new session is probed too.
    const before = client.stats().keepalives;
    await keepalivesAnswered(client, before + 1);
  } finally {
    await client.close().catch(() => undefined);
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
});

test('an idle client sees the gateway end its session (DELETE /v1/sessions/:id) and reconnects under the same id', { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway();
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'liveness-ended', accounts: [1n], device: { address: freeLoopbackAddress() }, keepaliveMs: KEEPALIVE_MS });
  try {
    assert.equal((await client.newOrder(order(1n))).kind, 'ack');
    await keepalivesAnswered(client, 1);
    const closed = await call(gw.url, 'DELETE', `/v1/sessions/${client.id}`, TOKENS.ops);
    assert.ok(closed.status >= 200 && closed.status < 300, JSON.stringify(closed));
    // The gateway's QP is in ERR: it answers nothing, so the next probe runs out of retries.
    const lost = await disconnected(client, 10_000);
    assert.match(lost.reason, /^keepalive READ completed with IBV_WC_RETRY_EXC_ERR/, lost.reason);
    const id = client.id;
    await client.reconnect();
    assert.equal(client.id, id);
    const answer = await client.newOrder(order(2n));
    assert.equal(answer.kind, 'ack', show(answer));
  } finally {
    await client.close().catch(() => undefined);
    await gw.close();
  }
});

test('keepaliveMs 0 sends no probe; a keepaliveMs out of range is refused before anything is opened', { timeout: 30_000 }, async () => {
  const gw = await startOrdersGateway();
  try {
    const device = { address: freeLoopbackAddress() };
    for (const keepaliveMs of [-1, 1.5, 3_600_001]) {
      await assert.rejects(
        OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'liveness-bad', accounts: [1n], device, keepaliveMs }),
        { name: 'RangeError', message: `qpgate client: options.keepaliveMs: expected an integer 0 to 3600000 ms, got ${keepaliveMs}` },
      );
    }
    const sessions = await call(gw.url, 'GET', '/v1/sessions', TOKENS.ops);
    assert.deepEqual(sessions.json.sessions, [], 'nothing was opened');
    const quiet = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'liveness-off', accounts: [1n], device, keepaliveMs: 0 });
    try {
      await new Promise((r) => setTimeout(r, 3 * KEEPALIVE_MS));
      assert.equal(quiet.stats().keepalives, 0);
    } finally {
      await quiet.close();
    }
  } finally {
    await gw.close();
  }
});

test('a reconnect the gateway refuses (its state lost: Hello SEQUENCE_AHEAD) leaves the client disconnected, not connected to a session it never greeted', { timeout: 60_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  let gw = await startGatewayProcess(['--config', file]);
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'liveness-refused', accounts: [1n], device: { address: freeLoopbackAddress() }, keepaliveMs: 0, helloTimeoutMs: 2000 });
  try {
    assert.equal((await client.newOrder(order(1n))).kind, 'ack');
    gw.child.kill('SIGKILL');
    await gw.exited;
    client.disconnect();
    // A gateway started on an empty state dir: our app_seq 1 is ahead of everything it has.
    gw = await startGatewayProcess(['--config', file]);
    await assert.rejects(client.reconnect({ url: gw.url }), /Hello refused: SEQUENCE_AHEAD/);
    assert.equal(client.connected, false);
    assert.equal(client.lastAppSeq, 1n);
  } finally {
    await client.close().catch(() => undefined);
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
});
