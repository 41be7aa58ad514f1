// A subscriber outlives its gateway: `qpgate serve` is SIGKILLed and started
// again on the same state dir, port and address, and the subscriber, which
// stayed subscribed, makes its recovery session again by itself (the new
// feed session says the gateway restarted: src/feed/recovery-link.ts). The
// fault campaign found the subscriber kept its RC session to the dead
// process, so gaps after a restart were never recovered (test/campaign).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { setFaults } from '../../src/native/testing/faults.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { subscribe, type FeedGap, type FeedMessage } from '../../src/feed/subscriber.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { startFeedEngine, until } from '../support/feed-engine.js';
import { recoveryFeedGatewayArgs } from '../support/feed-gateway.js';

const FEED_TOKEN = 'restart-feed-token-0123456789abcdef';
const UD_SEND_ONLY = 0x64;


test('after its gateway is SIGKILLed and restarted, a subscriber makes its recovery session again and recovers the gaps of the new life', { timeout: 120_000 }, async () => {
  const group = `239.78.${100 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const args = await recoveryFeedGatewayArgs(FEED_TOKEN, group);
  let gw: GatewayProcess = await startGatewayProcess(args);
  const e = await startFeedEngine();
  try {
    const device = openFeedDevice(e, { address: freeLoopbackAddress() });
    const got: FeedMessage[] = [];
    const gapsAfterRestart: FeedGap[] = [];
    let restarted = false;
    const sub = await subscribe({
      engine: e,
      device,
      channels: [{ id: 1, groupA: group }],
      recvSlots: 1024,
      onMessage: (m) => got.push(m),
      // The old session's last gaps come before its session event (native/src/feed/subscriber_channel.h).
      onGap: (g) => void (restarted && gapsAfterRestart.push(g)),
      onSession: (c) => void (c.oldSession !== 0 && (restarted = true)),
      recovery: { name: 'outlives-its-gateway', url: gw.url, token: FEED_TOKEN },
    });
    await until(() => got.some((m) => !m.snapshot));
    const firstSession = got[got.length - 1]!.session;
    const firstId = sub.recoverySessionId;
    assert.notEqual(firstId, undefined);

    gw.child.kill('SIGKILL');
    await gw.exited;
    gw = await startGatewayProcess(args);
    await until(() => got.some((m) => m.session !== firstSession && !m.snapshot), 30_000);
    await until(() => (sub.stats().recovery?.renewals ?? 0) >= 1 && sub.recoverySessionId !== undefined, 30_000);

    // 5 % of the multicast lost from here on: gaps of the new life, which only the new recovery session can fill.
    const before = sub.stats().channels[0]!;
    setFaults(device, { seed: 13, rx: { drop: 0.05 }, opcodes: [UD_SEND_ONLY] });
    await sleep(1500);
    setFaults(device, null);
    await sleep(500);
    const s = sub.stats().channels[0]!;
    const recovery = sub.stats().recovery!;
    await sub.close();

    assert.ok(s.gaps > before.gaps, 'the faults made gaps after the restart');
    assert.ok(s.recovered > before.recovered, `gaps after the restart were recovered: ${JSON.stringify({ before, s, recovery })}`);
    assert.equal(s.unrecoverable, before.unrecoverable, 'nothing of the new life was lost');
    assert.equal(recovery.renewals, 1);
    // The new life: its state first (a snapshot, or sequence 1), then every message once and in order.
    const second = got.filter((m) => m.session !== firstSession);
    const firstLive = second.findIndex((m) => !m.snapshot);
    const live = second.slice(firstLive);
    assert.ok(live[0]!.seq === 1n || second[0]!.snapshot, `the new life starts from its state: first live ${live[0]!.seq}`);
    live.forEach((m, i) => assert.equal(m.seq, live[0]!.seq + BigInt(i), 'in order, each once'));
    assert.ok(live.some((m) => m.recovered));
    assert.deepEqual(gapsAfterRestart, [], 'no gap reported in the new life');
  } finally {
    gw.child.kill('SIGTERM');
    await gw.exited;
    await e.stop();
  }
});
