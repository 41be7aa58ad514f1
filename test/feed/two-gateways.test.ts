// Two gateways on one host publishing to the same groups (as two `qpgate
// serve` on the default 239.77.0.1/2 do): a subscriber follows one feed
// session and drops the other's frames. They are counted (stats,
// SubscriberReport → the gateway's /metrics, `qpgate subscribe --stats`) and
// the subscriber warns, naming the likely cause; with one gateway, neither.
// Groups of this test's own, so that no other gateway on the host joins in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';
import { subscribe, type FeedWarning } from '../../src/feed/subscriber.js';
import { writeConfig } from '../orders/support.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { syntheticFeedYaml } from '../support/feed-engine.js';
import { runCli } from '../support/cli.js';

const ADMIN_TOKEN = 'admin-token-two-gateways-0123456789';
const FEED_TOKEN = 'feed-token-two-gateways-0123456789';
const WARNING = /^channel 1: \d+ frames of another feed session on this group: is a second gateway publishing to it\? \(this subscriber follows session \d+\)$/;

async function gateway(group: string): Promise<Gateway> {
  const { file, dir } = writeConfig(`control:
  tokens:
    - {name: ops, scope: admin, token: ${ADMIN_TOKEN}}
    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}
orders:
  enabled: false
${syntheticFeedYaml({ group, heartbeatMs: 20, instruments: 20, ratePerSec: 2000 })}`);
  const config = loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`] });
  return startGateway(config, createLogger('silent'), { handleSignals: false });
}

const subscribeStats = (url: string) =>
  runCli(['subscribe', '--url', url, '--token', ADMIN_TOKEN, '--address', freeLoopbackAddress(), '--stats', '--seconds', '4']);

async function until(what: string, done: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

function otherSessionMetric(text: string, who: string): number {
  const line = text.split('\n').find((l) => l.startsWith('qpgate_feed_subscriber_other_session_frames_total{') && l.includes(`name="${who}"`));
  return line === undefined ? NaN : Number(line.split(' ').pop());
}

test('two gateways on one group: the other feed session is counted through to /metrics and --stats, and the subscriber warns', { timeout: 120_000 }, async () => {
  const group = `239.78.${200 + Math.floor(Math.random() * 4)}.${1 + Math.floor(Math.random() * 200)}`;
  const first = await gateway(group);
  const second = await gateway(group);
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  try {
    const warnings: FeedWarning[] = [];
    const sub = await subscribe({
      engine: e,
      device: { address: freeLoopbackAddress() },
      channels: [{ id: 1, groupA: group }],
      onWarning: (w) => warnings.push(w),
      recovery: { name: 'watcher', url: first.url, token: FEED_TOKEN, reportIntervalMs: 50 },
    });
    await until('a warning', () => warnings.length > 0);
    assert.match(warnings[0]!.message, WARNING);
    assert.equal(warnings[0]!.channel, 1);
    const ch = sub.stats().channels[0]!;
    assert.ok(ch.otherSessionFrames >= warnings[0]!.otherSessionFrames && ch.otherSessionFrames > 0);
    assert.equal(warnings[0]!.session, ch.session);
    await until('the count on the gateway the subscriber reports to', async () => {
      const res = await fetch(`${first.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      return otherSessionMetric(await res.text(), 'watcher') > 0;
    });
    await sleep(2_000);
    assert.equal(warnings.length, 1, 'once per channel, not once a second');
    await sub.close();

    const both = await subscribeStats(first.url);
    assert.equal(both.code, 0, both.stderr);
    assert.match(both.stdout.trim().split('\n').pop()!, /other-session [1-9]\d*$/);
    assert.match(both.stderr, /^qpgate subscribe: warning: channel 1: \d+ frames of another feed session on this group: is a second gateway publishing to it\?/m);

    await second.close();
    const alone = await subscribeStats(first.url);
    assert.equal(alone.code, 0, alone.stderr);
    assert.match(alone.stdout.trim().split('\n').pop()!, /other-session 0$/);
    assert.doesNotMatch(alone.stderr, /another feed session/);
  } finally {
    await e.stop();
    await second.close();
    await first.close();
  }
});
