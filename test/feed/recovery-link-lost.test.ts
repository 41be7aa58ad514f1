// The link between a subscriber and its gateway is lost for a while: the
// multicast and the recovery session's RC traffic both gone, until the
// recovery QP's retries have run out. The gateway stays up and still has
// every message in its ring, so the hole the outage left is asked for on the
// session the subscriber makes again (src/feed/recovery-link.ts) and
// recovered: nothing reported lost. Before, a failed connection gave up its
// queued ranges at once (native/src/feed/subscriber_channel.h).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { setFaults } from '../../src/native/testing/faults.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { subscribe, type FeedGap, type FeedMessage } from '../../src/feed/subscriber.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { startFeedEngine, until } from '../support/feed-engine.js';
import { recoveryFeedGatewayArgs } from '../support/feed-gateway.js';

const FEED_TOKEN = 'link-lost-feed-token-0123456789abcdef';
const RC_SEND_ONLY = 0x04;
const UD_SEND_ONLY = 0x64;


test('a link lost until the recovery connection fails costs no message: the renewed session recovers the hole', { timeout: 120_000 }, async () => {
  const group = `239.78.${104 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const args = await recoveryFeedGatewayArgs(FEED_TOKEN, group);
  const gw = await startGatewayProcess(args);
  const e = await startFeedEngine();
  try {
    const device = openFeedDevice(e, { address: freeLoopbackAddress() });
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const sub = await subscribe({
      engine: e,
      device,
      channels: [{ id: 1, groupA: group }],
      recvSlots: 1024,
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'loses-its-link', url: gw.url, token: FEED_TOKEN },
    });
    await until(() => got.some((m) => !m.snapshot));

    // The link down: no multicast arrives, nothing the subscriber sends over RC leaves (its
    // SubscriberReports every 250 ms go unacknowledged), until the QP's retries ran out.
    setFaults(device, { seed: 5, rx: { drop: 1 }, tx: { drop: 1 }, opcodes: [RC_SEND_ONLY, UD_SEND_ONLY] });
    await until(() => (sub.stats().recovery?.connection?.errors ?? 0) > 0, 30_000);
    setFaults(device, null);
    await until(() => (sub.stats().recovery?.renewals ?? 0) >= 1 && sub.recoverySessionId !== undefined, 30_000);
    // What the app was given, not the native counter: a frame the engine counted recovered reaches
    // onMessage a little later, from fromEngine (under load, after this check would have run).
    await until(() => got.some((m) => m.recovered) && sub.stats().channels[0]!.held === 0, 30_000);
    const s = sub.stats().channels[0]!;
    const recovery = sub.stats().recovery!;
    await sub.close();

    assert.equal(recovery.renewals, 1, `made again once: ${JSON.stringify(recovery)}`);
    assert.equal(s.unrecoverable, 0, `nothing lost: ${JSON.stringify(s)}`);
    assert.equal(s.recoveryFailures, 0);
    assert.ok(s.recovered > 0, `counted: ${JSON.stringify(s)}`);
    assert.deepEqual(gaps, [], 'no gap reported');
    const live = got.slice(got.findIndex((m) => !m.snapshot));
    live.forEach((m, i) => assert.equal(m.seq, live[0]!.seq + BigInt(i), 'in order, each once'));
  } finally {
    gw.child.kill('SIGTERM');
    await gw.exited;
    await e.stop();
  }
});
