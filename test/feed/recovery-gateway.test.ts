// Recovery through the real gateway: `qpgate serve`'s in-process equivalent
// publishing the synthetic feed, its POST /v1/sessions route (role
// 'recovery', token entitlements) dispatching to the feed's recovery
// provider, and a subscriber in its own engine joining late with 5% of the
// multicast dropped: snapshot, then every live message once and in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { setFaults } from '../../src/native/testing/faults.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway } from '../../src/gateway/service.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { RecoveryHandshakeError } from '../../src/feed/recovery-handshake.js';
import { subscribe, type FeedGap, type FeedMessage } from '../../src/feed/subscriber.js';
import { writeConfig, call } from '../orders/support.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { syntheticFeedYaml } from '../support/feed-engine.js';

const FEED_TOKEN = 'feed-token-0123456789abcdef';
const OTHER_TOKEN = 'other-token-0123456789abcdef';
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';

test('a late subscriber with 5% loss recovers through the gateway route: snapshot, then every message once and in order', async () => {
  const group = `239.78.${96 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const { file, dir } = writeConfig(`control:
  tokens:
    - {name: ops, scope: admin, token: ${ADMIN_TOKEN}}
    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}
    - {name: other, scope: read, token: ${OTHER_TOKEN}, roles: [recovery], channels: [2]}
${syntheticFeedYaml({ group, heartbeatMs: 5, instruments: 40, ratePerSec: 20000 })}`);
  const config = loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`] });
  const gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  try {
    await sleep(200); // the feed is well under way: this subscriber joins late
    const device = openFeedDevice(e, { address: freeLoopbackAddress() });
    const channels = [{ id: 1, groupA: group }];
    await assert.rejects(
      subscribe({ engine: e, device, channels, recovery: { name: 'nope', url: gw.url, token: OTHER_TOKEN } }),
      (err: unknown) => err instanceof RecoveryHandshakeError && err.status === 403 && /channel 1/.test(err.message),
    );
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const sub = await subscribe({
      engine: e,
      device,
      channels,
      recvSlots: 1024,
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'app-1', url: gw.url, token: FEED_TOKEN },
    });
    setFaults(device, { seed: 5, rx: { drop: 0.05 }, opcodes: [0x64] });
    await sleep(1500);
    const listed = await call(gw.url, 'GET', '/v1/sessions', ADMIN_TOKEN);
    assert.equal(listed.status, 200);
    const mine = (listed.json.sessions as Array<Record<string, unknown>>).find((s) => s['id'] === sub.recoverySessionId);
    assert.ok(mine, 'the recovery session is listed');
    assert.equal(mine['role'], 'recovery');
    assert.equal(mine['state'], 'RTS');
    assert.ok((mine['retransmitRequests'] as number) > 0);
    await sub.close();
    setFaults(device, null);

    const s = sub.stats().channels[0]!;
    assert.equal(s.snapshots, 1);
    assert.ok(s.recovered > 0, 'gaps were recovered');
    assert.equal(s.unrecoverable, 0);
    assert.deepEqual(gaps, []);
    const firstLive = got.findIndex((m) => !m.snapshot);
    assert.ok(firstLive > 0, 'the snapshot came first');
    const asOf = got[0]!.seq;
    const live = got.slice(firstLive);
    assert.ok(live.length > 5000, `live messages: ${live.length}`);
    assert.ok(live.every((m) => !m.snapshot));
    live.forEach((m, i) => assert.equal(m.seq, asOf + 1n + BigInt(i)));
    // Closing the subscriber ended its session on the gateway.
    const after = await call(gw.url, 'GET', '/v1/sessions', ADMIN_TOKEN);
    assert.ok(!(after.json.sessions as Array<Record<string, unknown>>).some((x) => x['id'] === sub.recoverySessionId && x['state'] === 'RTS'));
  } finally {
    await e.stop();
    await gw.close();
  }
});

test("the gateway's /metrics name a slow subscriber: its lag and drops come from the reports on its recovery session", async () => {
  const group = `239.78.${96 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const { file, dir } = writeConfig(`control:
  tokens:
    - {name: ops, scope: admin, token: ${ADMIN_TOKEN}}
    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}
${syntheticFeedYaml({ group, heartbeatMs: 5, instruments: 40, ratePerSec: 20000 })}`);
  const config = loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`] });
  const gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  try {
    const channels = [{ id: 1, groupA: group }];
    const recovery = (name: string) => ({ name, url: gw.url, token: FEED_TOKEN, reportIntervalMs: 50 });
    let fastCount = 0;
    const fast = await subscribe({ engine: e, device: { address: freeLoopbackAddress() }, channels, onMessage: () => fastCount++, recovery: recovery('fast-1') });
    const slow = await subscribe({ engine: e, device: { address: freeLoopbackAddress() }, channels, recovery: recovery('slow-1'), slowConsumer: { policy: 'drop-oldest', maxQueued: 500 } });
    let slowCount = 0;
    const reader = (async () => {
      for await (const _ of slow) {
        slowCount++;
        await sleep(2); // ~500 messages/s against a 20,000/s feed
      }
    })();
    const metric = (text: string, name: string, who: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`name="${who}"`));
      return line === undefined ? NaN : Number(line.split(' ').pop());
    };
    let text = '';
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      await sleep(100);
      const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      text = await res.text();
      if (metric(text, 'qpgate_feed_subscriber_dropped_messages_total', 'slow-1') > 1000) break;
    }
    assert.ok(metric(text, 'qpgate_feed_subscriber_lag_messages', 'slow-1') > 100, 'the slow subscriber lags');
    assert.ok(metric(text, 'qpgate_feed_subscriber_dropped_messages_total', 'slow-1') > 1000, 'its policy dropped the oldest');
    assert.equal(metric(text, 'qpgate_feed_subscriber_lag_messages', 'fast-1'), 0);
    assert.equal(metric(text, 'qpgate_feed_subscriber_dropped_messages_total', 'fast-1'), 0);
    const s = slow.stats().consumer;
    assert.ok(s.highWater <= 500, `bounded: high water ${s.highWater}`);
    assert.ok(fastCount > slowCount * 5, `the fast subscriber is unaffected (${fastCount} vs ${slowCount})`);
    assert.equal(fast.stats().channels[0]!.unrecoverable, 0);
    await slow.close();
    await reader;
    await fast.close();
  } finally {
    await e.stop();
    await gw.close();
  }
});

test('with two addresses at both ends, both ends of a recovery session arm the alternate path (the handshake carries both GIDs)', async () => {
  const group = `239.78.${96 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const { file, dir } = writeConfig(`control:
  tokens:
    - {name: ops, scope: admin, token: ${ADMIN_TOKEN}}
    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}
${syntheticFeedYaml({ group, heartbeatMs: 5, instruments: 4, ratePerSec: 100 })}`);
  const config = loadConfig({
    env: {},
    file,
    overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`, `backend.alternateAddress=${freeLoopbackAddress()}`],
  });
  const gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
  try {
    const sub = await subscribe({
      device: { address: freeLoopbackAddress(), alternateAddress: freeLoopbackAddress() },
      channels: [{ id: 1, groupA: group }],
      recovery: { name: 'two-paths', url: gw.url, token: FEED_TOKEN },
    });
    try {
      // The test of the migration itself needs two links: test/feed/recovery-path-migration.test.ts.
      assert.deepEqual(sub.recoveryPath(), { activePath: 'primary', pathMigState: 'ARMED', pathMigrations: 0 }, "the subscriber's end");
      const listed = await call(gw.url, 'GET', '/v1/sessions', ADMIN_TOKEN);
      const mine = (listed.json.sessions as Array<Record<string, unknown>>).find((s) => s['id'] === sub.recoverySessionId)!;
      assert.equal(mine['activePath'], 'primary', JSON.stringify(mine));
      assert.equal(mine['pathMigState'], 'ARMED', "the gateway's end");
    } finally {
      await sub.close();
    }
    const single = await subscribe({ device: { address: freeLoopbackAddress() }, channels: [{ id: 1, groupA: group }], recovery: { name: 'one-path', url: gw.url, token: FEED_TOKEN } });
    assert.deepEqual(single.recoveryPath(), { activePath: null, pathMigState: null, pathMigrations: 0 }, 'one address: no alternate path');
    await single.close();
  } finally {
    await gw.close();
  }
});
