// A feed's line A and line B on two links (docs/protocol.md 2.11), as
// exchanges run their A/B feeds on two networks: `qpgate serve` (soft
// backend, backend.address on the primary link, backend.alternateAddress on
// the other) sends line A from the first address and line B from the second;
// a subscriber with both addresses joins each group on both links
// (test/support/feed-two-lines-subscriber.ts), and without recovery. The
// primary link goes down mid-stream: line B alone carries the feed and the
// application meets no hole, no gap and no duplicate; when the link is back,
// line A does too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { GatewayProcess } from '../support/gateway-process.js';
import { makeTwoLinks, twoLinksUnavailable } from '../support/two-links.js';
import { childLines } from '../support/child-lines.js';
import { syntheticFeedYaml } from '../support/feed-engine.js';
import { startTwoLinkGateway } from '../orders/two-link-gateway.js';

const SUBSCRIBER = fileURLToPath(new URL('../support/feed-two-lines-subscriber.js', import.meta.url));

test('line A on the primary link and line B on the alternate: the loss of the primary link costs the subscriber no message, with no recovery', { skip: twoLinksUnavailable(), timeout: 120_000 }, async () => {
  const links = makeTwoLinks(4);
  const octet = () => 1 + Math.floor(Math.random() * 200);
  const [groupA, groupB] = [`239.81.${octet()}.${octet()}`, `239.82.${octet()}.${octet()}`];
  let gw: GatewayProcess | undefined;
  let child: ChildProcess | undefined;
  try {
    ({ gw } = await startTwoLinkGateway(links, { feedsYaml: syntheticFeedYaml({ group: groupA, groupB, heartbeatMs: 5, instruments: 40, ratePerSec: 2000 }) }));
    child = links.spawnIn(links.client, [process.execPath, SUBSCRIBER, JSON.stringify({
      groupA, groupB, address: links.primary.clientAddress, alternateAddress: links.alternate.clientAddress, live: 1000, after: 2000,
    })], { stdio: ['pipe', 'pipe', 'inherit'] });
    const nextLine = childLines(child, () => gw!.output());

    const live = await nextLine();
    assert.equal(live['phase'], 'live');
    // Both lines arrive, each on its own link: every frame twice, one copy a duplicate.
    assert.ok(live['channel'].lineAFrames > 0 && live['channel'].lineBFrames > 0, JSON.stringify(live['channel']));

    links.down(links.primary);
    child.stdin!.write('down\n');
    const outage = await nextLine();
    assert.equal(outage['phase'], 'outage');
    const [before, during] = [outage['before'], outage['channel']];
    // A few frames of line A may have been in flight when the link went down.
    assert.ok(during.lineAFrames - before.lineAFrames <= 5, `line A stopped with its link: ${before.lineAFrames} → ${during.lineAFrames}`);
    assert.ok(during.lineBFrames - before.lineBFrames >= 10, `line B carried the feed: ${before.lineBFrames} → ${during.lineBFrames}`);
    assert.deepEqual(outage['live'].breaks, [], 'the stream runs 1, 2, 3... across the outage: no hole, no duplicate');
    assert.deepEqual(outage['live'].gaps, [], 'no gap reported');
    assert.equal(during.gaps, 0, JSON.stringify(during));
    assert.equal(during.unrecoverable, 0, JSON.stringify(during));

    links.up(links.primary);
    child.stdin!.write('up\n');
    const back = await nextLine();
    assert.equal(back['phase'], 'back');
    assert.deepEqual(back['live'].breaks, [], 'nor when line A comes back');
    assert.equal(back['channel'].gaps, 0, JSON.stringify(back['channel']));
    child.stdin!.write('close\n');
  } finally {
    // A failed assertion leaves the subscriber waiting on stdin: without this the test process never ends.
    if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
    gw?.child.kill('SIGTERM');
    if (gw) await gw.exited;
    links.close();
  }
});
