// An idle RiskClient learns that its gateway is gone before the kill switch
// is needed. A risk session sends nothing until someone acts, and an RC
// requester hears of a dead peer only through a request that goes
// unanswered: before the keepalive, a risk client stayed `connected` through
// a SIGKILLed gateway and found out only when its kill switch failed. The
// keepalive READs the first account's risk.local version word every
// keepaliveMs (src/orders/risk-client.ts); a gateway that stopped answering
// fails it with IBV_WC_RETRY_EXC_ERR, the client says 'disconnect', refuses
// operations at once, and reconnect() brings it back on a restarted gateway,
// where the kill switch it made durable is still set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { RiskClient } from '../../src/orders/risk-client.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { ordersYaml, startOrdersGateway, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { disconnected, keepalivesAnswered } from './liveness-support.js';

const KEEPALIVE_MS = 200;

test('an idle risk client sees its gateway SIGKILLed, refuses operations until reconnect(), and finds its durable kill switch on the restarted gateway', { timeout: 120_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  let gw = await startGatewayProcess(['--config', file]);
  const stateDir = gw.stateDir;
  const risk = await RiskClient.connect({ url: gw.url, token: TOKENS.risk, name: 'risk-liveness', accounts: [1n], device: { address: freeLoopbackAddress() }, keepaliveMs: KEEPALIVE_MS, timeoutMs: 2000 });
  try {
    assert.equal(await risk.compareSwap(1n, 'killSwitch', 0n, 1n), 0n);
    await risk.whenDurable(1n, 'killSwitch', 1n);
    await keepalivesAnswered(risk, 2);
    assert.equal(risk.connected, true);
    const operations = risk.stats().operations;

    gw.child.kill('SIGKILL');
    assert.equal(await gw.exited, null, 'killed by the signal');
    const lost = await disconnected(risk, 10_000);
    assert.match(lost.reason, /^keepalive READ completed with IBV_WC_RETRY_EXC_ERR/, lost.reason);
    assert.equal(risk.connected, false);
    assert.equal(risk.stats().operations, operations, 'the probes are not counted as operations');
    process.stdout.write(`# the kill was seen after ${lost.ms.toFixed(0)} ms (keepaliveMs ${KEEPALIVE_MS}, retry budget 8 × 67 ms)\n`);

    // Disconnected: an operation fails at once, naming what to do; a reconnect to nobody fails and changes nothing.
    await assert.rejects(risk.read(1n, 'killSwitch'), /not connected \(a failed operation left the QP in ERR\): call reconnect\(\)/);
    await assert.rejects(risk.reconnect(), /no gateway answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    assert.equal(risk.connected, false, 'a failed reconnect leaves the client disconnected');

    gw = await startGatewayProcess(['--config', file, '--set', `state.dir=${stateDir}`]);
    await risk.reconnect({ url: gw.url });
    assert.equal(risk.connected, true);
    assert.equal(await risk.read(1n, 'killSwitch'), 1n, 'the durable kill switch survived the restart');
    const before = risk.stats().keepalives;
    await keepalivesAnswered(risk, before + 1);
    assert.equal(risk.stats().reconnects, 2);
  } finally {
    await risk.close().catch(() => undefined);
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
});

test('an operation the gateway refuses leaves the risk client disconnected with that reason, and reconnect() serves it again', { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway();
  const risk = await RiskClient.connect({ url: gw.url, token: TOKENS.risk, name: 'risk-refused', accounts: [1n], device: { address: freeLoopbackAddress() }, keepaliveMs: 0 });
  try {
    const page = risk.region(1n, 'risk.local');
    const reason = once(risk, 'disconnect').then(([r]) => r as string);
    // risk.local is READ-only: an atomic on it is a remote access error, and the QP goes to ERR.
    await assert.rejects(risk.raw('ATOMIC_FETCH_AND_ADD', page.addr, page.rkey, 1n), { name: 'RdmaError', status: 'IBV_WC_REM_ACCESS_ERR' });
    assert.match(await reason, /^ATOMIC_FETCH_AND_ADD at 0x[0-9a-f]+ rkey 0x[0-9a-f]+ completed with IBV_WC_REM_ACCESS_ERR/);
    assert.equal(risk.connected, false);
    await risk.reconnect();
    assert.equal(await risk.read(1n, 'killSwitch'), 0n);
    assert.equal(risk.stats().keepalives, 0, 'keepaliveMs 0 sends no probe');
  } finally {
    await risk.close().catch(() => undefined);
    await gw.close();
  }
});

test('a keepaliveMs out of range is refused before anything is opened', async () => {
  for (const keepaliveMs of [-1, 1.5, 3_600_001]) {
    await assert.rejects(RiskClient.connect({ url: 'http://127.0.0.1:1', token: TOKENS.risk, name: 'risk-bad', accounts: [1n], keepaliveMs }), {
      name: 'RangeError',
      message: `qpgate risk client: options.keepaliveMs: expected an integer 0 to 3600000 ms, got ${keepaliveMs}`,
    });
  }
});
