// The feed's recovery session across the loss of a link (docs/protocol.md
// §1.10): `qpgate serve` (soft backend, backend.address on the primary link,
// backend.alternateAddress on the other) publishing its synthetic feed in one
// namespace, a subscriber with two addresses in the other (two-links.ts,
// test/support/feed-failover-subscriber.ts). The primary link goes down: the
// multicast stops, and the subscriber's next SubscriberReport runs out of
// retries on the primary path and moves the recovery session to the
// alternate one, with no new handshake. When the link is back the ticks sent
// meanwhile are a gap, recovered over that same session on its new path:
// the live stream has no hole and no duplicate, and both ends armed the
// path they left again once its link was up (not while it was down): the loss of the alternate link then moves the
// session back to the primary instead of ending it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GatewayProcess } from '../support/gateway-process.js';
import { makeTwoLinks, twoLinksUnavailable } from '../support/two-links.js';
import { childLines } from '../support/child-lines.js';
import { syntheticFeedYaml } from '../support/feed-engine.js';
import { sessionsOf, sessionWhen, startTwoLinkGateway } from '../orders/two-link-gateway.js';

const SUBSCRIBER = fileURLToPath(new URL('../support/feed-failover-subscriber.js', import.meta.url));
const FEED_TOKEN = 'feed-token-0123456789abcdef';

const skip = twoLinksUnavailable();

test("a subscriber's recovery session survives the loss of its primary link: the gap of the outage recovered on the alternate path, no hole, no duplicate; re-armed, it moves back when the alternate fails", { skip, timeout: 120_000 }, async () => {
  const links = makeTwoLinks(2);
  const group = `239.79.${1 + Math.floor(Math.random() * 200)}.${1 + Math.floor(Math.random() * 200)}`;
  let gw: GatewayProcess | undefined;
  let child: ChildProcess | undefined;
  try {
    const started = await startTwoLinkGateway(links, {
      feedsYaml: syntheticFeedYaml({ group, heartbeatMs: 5, instruments: 40, ratePerSec: 2000 }),
      tokensYaml: `    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}\n`,
    });
    gw = started.gw;
    const { port } = started;
    const recoverySession = (id: number): Record<string, unknown> | undefined => sessionsOf(links, port).find((s) => s['id'] === id && s['role'] === 'recovery');
    const recoveryWhen = (id: number, ok: (s: Record<string, unknown>) => boolean) => sessionWhen(links, port, (s) => s['id'] === id && s['role'] === 'recovery', ok);

    child = links.spawnIn(links.client, [process.execPath, SUBSCRIBER, JSON.stringify({
      url: `http://${links.primary.gatewayAddress}:${port}`, token: FEED_TOKEN, name: 'apm-feed',
      address: links.primary.clientAddress, alternateAddress: links.alternate.clientAddress, group, live: 1000, after: 4000,
    })], { stdio: ['pipe', 'pipe', 'inherit'] });
    const nextLine = childLines(child, () => gw!.output());

    const live = await nextLine();
    assert.equal(live['phase'], 'live');
    const id = live['session'] as number;
    assert.deepEqual(live['path'], { activePath: 'primary', pathMigState: 'ARMED', pathMigrations: 0 }, "the subscriber's end is armed");
    const armed = recoverySession(id);
    assert.ok(armed, `recovery session ${id} listed`);
    assert.equal(armed['activePath'], 'primary', JSON.stringify(armed));
    assert.equal(armed['pathMigState'], 'ARMED', JSON.stringify(armed));

    links.down(links.primary);
    const downAt = Date.now();
    // The subscriber's reports (every 250 ms) exhaust the primary path's retries; the gateway follows it.
    const moved = await recoveryWhen(id, (s) => s['activePath'] === 'alternate');
    assert.equal(moved?.['activePath'], 'alternate', `the recovery session moved to the alternate path: ${JSON.stringify(moved)}`);
    const movedMs = Date.now() - downAt;
    // Nothing of the gateway's in flight, but the link it left is down: not armed again yet.
    await sleep(300);
    const waiting = recoverySession(id);
    assert.deepEqual([waiting?.['pathMigState'], waiting?.['pathRearms']], ['MIGRATED', 0], `no re-arm towards a link that is down: ${JSON.stringify(waiting)}`);
    links.up(links.primary);
    child.stdin!.write('up\n');

    const done = await nextLine();
    assert.equal(done['phase'], 'recovered');
    assert.equal(done['session'], id, 'the same recovery session: no new handshake');
    assert.equal(done['recovery'].renewals, 0, JSON.stringify(done['recovery']));
    assert.deepEqual(done['live'].breaks, [], 'the live stream runs 1, 2, 3... without a hole or a duplicate across the outage');
    const channel = done['channel'];
    assert.ok(channel.gaps >= 1, `the outage was a gap: ${JSON.stringify(channel)}`);
    assert.ok(channel.recovered > 0, `recovered over the recovery session: ${JSON.stringify(channel)}`);
    assert.equal(channel.unrecoverable, 0, JSON.stringify(channel));
    assert.equal(channel.snapshots, 1, 'only the join snapshot: the outage was retransmitted, not snapshotted');
    assert.equal(done['recovery'].connection.errors, 0, 'no error completion: the QP never failed');
    assert.equal(done['recovery'].connection.pathRearms, 1, 'the subscriber armed the path it left again');
    assert.deepEqual(done['path'], { activePath: 'alternate', pathMigState: 'ARMED', pathMigrations: 1 }, "the subscriber's end moved once and is armed again");

    const after = recoverySession(id)!;
    assert.equal(after['state'], 'RTS', JSON.stringify(after));
    assert.equal(after['activePath'], 'alternate', JSON.stringify(after));
    assert.equal(after['pathMigrations'], 1, JSON.stringify(after));
    assert.equal(after['pathMigState'], 'ARMED', JSON.stringify(after));
    assert.equal(after['pathRearms'], 1, 'the gateway armed the path it left again');
    assert.ok((after['retransmitRequests'] as number) >= 1, JSON.stringify(after));
    // Re-armed at both ends, so the loss of the alternate link moves the session back instead of ending it
    // (the ticks go on: the multicast runs on the primary link).
    links.down(links.alternate);
    const secondAt = Date.now();
    const back = await recoveryWhen(id, (s) => s['pathMigrations'] === 2);
    assert.equal(back?.['activePath'], 'primary', `the recovery session moved back to the primary path: ${JSON.stringify(back)}`);
    assert.equal(back?.['pathMigrations'], 2, JSON.stringify(back));
    const backMs = Date.now() - secondAt;
    child.stdin!.write('back\n');
    const returned = await nextLine();
    assert.equal(returned['phase'], 'back');
    assert.equal(returned['session'], id, 'still the same recovery session');
    assert.equal(returned['recovery'].renewals, 0, JSON.stringify(returned['recovery']));
    assert.equal(returned['recovery'].connection.errors, 0, 'no error completion across both migrations');
    assert.deepEqual(returned['live'].breaks, [], 'no hole and no duplicate across both migrations');
    assert.equal(returned['channel'].unrecoverable, 0, JSON.stringify(returned['channel']));
    assert.equal(returned['path'].activePath, 'primary', JSON.stringify(returned['path']));
    process.stdout.write(`# recovery session on the alternate path ${movedMs} ms after the primary link went down (${channel.recovered} messages of the outage recovered there), back on the primary ${backMs} ms after the alternate went down\n`);
    child.stdin!.write('close\n');
    await new Promise((r) => child!.once('exit', r));
  } finally {
    // A failed assertion leaves the subscriber waiting on stdin: without this the test process never ends.
    if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
    gw?.child.kill('SIGTERM');
    if (gw) await gw.exited;
    links.close();
  }
});
