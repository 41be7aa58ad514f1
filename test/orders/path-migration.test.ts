// Automatic path migration with real links (docs/protocol.md §1.10): the
// gateway (`qpgate serve`, soft backend, backend.address on the primary
// link and backend.alternateAddress on the other) in one namespace, an
// OrderClient with two addresses in another (two-links.ts). Mid-stream the
// primary link goes down: the session moves to the alternate path by itself
// (no reconnect, no resend by the client), every order is answered exactly
// once, app_seq runs 1, 2, 3... with no gap and no duplicate, no fill is lost,
// and /v1/sessions shows the session on its alternate path after one
// migration, not armed again while the link it left is down (arming towards a
// dead link would only cost a second retry budget). With the primary link back
// both ends re-arm, and the loss of the alternate link then moves the session
// back to the primary. A session whose second link fails too has no path
// left: the order in flight ends its QP with IBV_WC_RETRY_EXC_ERR and the
// client is told ('disconnect'). And a cut with 16 orders in flight and
// their answers coming back: whichever end migrates first, the other follows
// and resends on the new path, and still nothing is lost or doubled. A risk
// session too moves by itself with FETCH_ADDs in flight, each executed
// exactly once (a resend whose answer the cut lost is answered from the
// gateway's atomic cache, not executed again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import type { GatewayProcess } from '../support/gateway-process.js';
import { makeTwoLinks, twoLinksUnavailable, type TwoLinks } from '../support/two-links.js';
import { childLines } from '../support/child-lines.js';
import { FAILOVER_CLIENT, metricOf, RISK_FAILOVER_CLIENT, sessionsOf, sessionWhen, startTwoLinkGateway } from './two-link-gateway.js';
import { TOKENS } from './support.js';
import { QPGATE_BIN } from '../support/paths.js';

const skip = twoLinksUnavailable();

interface FailoverRun {
  links: TwoLinks;
  port: number;
  client: ChildProcess;
  nextLine: () => Promise<Record<string, any>>;
}

/** What the failover client trades (test/support/failover-client.ts): `before` orders, then `after` per phase, with `window` in flight after "primary" when given. */
interface FailoverPlan {
  before: number;
  after: number;
  window?: number;
  streamingAfter?: number;
}

/** Which child runs on the client's side and with what: FAILOVER_CLIENT trading with TOKENS.desk, or RISK_FAILOVER_CLIENT with TOKENS.risk. */
interface FailoverChild {
  script: string;
  token: string;
  name: string;
  plan: object;
}

/** The failover client trading as `name` by `plan`, as withFailoverChild runs it. */
function withFailoverClient(tag: number, name: string, plan: FailoverPlan, body: (run: FailoverRun) => Promise<void>): Promise<void> {
  return withFailoverChild(tag, { script: FAILOVER_CLIENT, token: TOKENS.desk, name, plan }, body);
}

/**
 * A two-link gateway and `child` on the client's side, for `body`; the
 * child is killed if `body` left it running (a failed assertion leaves it
 * waiting on stdin, and the test process would never end), then the gateway
 * and the links go.
 */
async function withFailoverChild(tag: number, { script, token, name, plan }: FailoverChild, body: (run: FailoverRun) => Promise<void>): Promise<void> {
  const links = makeTwoLinks(tag);
  let gw: GatewayProcess | undefined;
  let client: ChildProcess | undefined;
  try {
    const started = await startTwoLinkGateway(links);
    gw = started.gw;
    client = links.spawnIn(links.client, [process.execPath, script, JSON.stringify({
      url: `http://${links.primary.gatewayAddress}:${started.port}`, token, name,
      address: links.primary.clientAddress, alternateAddress: links.alternate.clientAddress, ...plan,
    })], { stdio: ['pipe', 'pipe', 'inherit'] });
    await body({ links, port: started.port, client, nextLine: childLines(client, () => gw!.output()) });
    client.stdin!.write('close\n');
    await new Promise((r) => client!.once('exit', r));
  } finally {
    if (client !== undefined && client.exitCode === null) client.kill('SIGKILL');
    gw?.child.kill('SIGTERM');
    if (gw) await gw.exited;
    links.close();
  }
}

/** A "done" line of `total` orders: each answered once by an ack and filled, app_seq 1, 2, 3... with no gap or duplicate, all on the one session. */
function assertEveryOrderAnsweredOnce(done: Record<string, any>, total: number): void {
  assert.equal(done['phase'], 'done');
  assert.deepEqual(done['answers'], { ack: total }, 'every order answered once, by an ack');
  assert.equal(done['fills'], total, 'each crossing pair filled both of its orders');
  const seqs = done['appSeqs'] as number[];
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), 'app_seq 1, 2, 3... with no gap and no duplicate');
  assert.equal(seqs.length, total * 2, 'an ack and a fill per order');
  assert.equal(done['stats'].reconnects, 0, 'the session migrated: the client did not reconnect');
  assert.equal(done['stats'].resent, 0);
  assert.equal(done['stats'].duplicates, 0);
  assert.equal(done['stats'].gaps, 0);
}

test('a trading session survives the loss of its primary link: every order answered once, app_seq without a gap, no fill lost; re-armed, it moves back when the alternate fails', { skip, timeout: 120_000 }, async () => {
  const before = 20;
  const after = 20;
  await withFailoverClient(1, 'apm-desk', { before, after }, async ({ links, port, client, nextLine }) => {

    const primary = await nextLine();
    assert.equal(primary['phase'], 'primary');
    const armed = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(armed['activePath'], 'primary', JSON.stringify(armed));
    assert.equal(armed['pathMigState'], 'ARMED', JSON.stringify(armed));
    assert.equal(armed['pathMigrations'], 0);

    links.down(links.primary);
    client.stdin!.write('down\n');
    const done = await nextLine();
    const total = before + after;
    assertEveryOrderAnsweredOnce(done, total);

    const moved = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(moved['state'], 'RTS', JSON.stringify(moved));
    assert.equal(moved['activePath'], 'alternate', JSON.stringify(moved));
    // The client followed long ago (nothing of the gateway's in flight), but the
    // link the session left is still down: the gateway has not armed it again.
    assert.equal(moved['pathMigState'], 'MIGRATED', JSON.stringify(moved));
    assert.equal(moved['pathMigrations'], 1, JSON.stringify(moved));
    assert.equal(metricOf(links, port, 'qpgate_order_path_rearms_total'), 0, 'no re-arm towards a link that is down');
    // qpgate sessions, as an operator runs it in the gateway's namespace: PATH and MIGRATIONS.
    const table = links.runIn(links.gateway, [process.execPath, QPGATE_BIN, 'sessions', '--url', `http://127.0.0.1:${port}`, '--token', TOKENS.ops]);
    assert.match(table, new RegExp(`^\\s*${primary['session']}\\s+trading\\s+apm-desk\\s+RTS\\s.*\\salternate MIGRATED\\s+1\\s+primary\\s+0\\s+-$`, 'm'), table);

    // The primary link is back: both ends re-arm (the gateway at its next
    // 10 ms check, the client at its next keepalive), so the loss of the
    // alternate link now moves the session back instead of ending it.
    links.up(links.primary);
    const gatewayEnd = await sessionWhen(links, port, (s) => s['id'] === primary['session'], (s) => s['pathMigState'] === 'ARMED');
    assert.equal(gatewayEnd?.['pathMigState'], 'ARMED', `the gateway armed the path again once its link was up: ${JSON.stringify(gatewayEnd)}`);
    client.stdin!.write('again\n');
    const rearmed = await nextLine();
    assert.equal(rearmed['phase'], 'rearmed');
    assert.equal(rearmed['stats'].rearms, 1, JSON.stringify(rearmed));
    links.down(links.alternate);
    client.stdin!.write('go\n');
    const again = await nextLine();
    assert.equal(again['phase'], 'again');
    assert.deepEqual(again['answers'], { ack: total + after }, 'every order answered once, by an ack');
    assert.equal(again['fills'], total + after);
    const seqsAgain = again['appSeqs'] as number[];
    assert.deepEqual(seqsAgain, Array.from({ length: (total + after) * 2 }, (_, i) => i + 1), 'app_seq with no gap and no duplicate across both migrations');
    assert.equal(again['stats'].reconnects, 0, 'the session moved back: the client did not reconnect');
    const back = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(back['state'], 'RTS', JSON.stringify(back));
    assert.equal(back['activePath'], 'primary', JSON.stringify(back));
    assert.equal(back['pathMigrations'], 2, JSON.stringify(back));
    // The alternate link is down now: the gateway waits for it before arming it again.
    assert.equal(back['pathMigState'], 'MIGRATED', JSON.stringify(back));
    assert.equal(metricOf(links, port, 'qpgate_order_path_rearms_total'), 1, 'one re-arm: towards the primary once it was back, none towards the alternate while it is down');
    links.up(links.alternate);
    const armedAgain = await sessionWhen(links, port, (s) => s['id'] === primary['session'], (s) => s['pathMigState'] === 'ARMED');
    assert.equal(armedAgain?.['pathMigState'], 'ARMED', `the gateway armed the alternate again once its link was up: ${JSON.stringify(armedAgain)}`);
    assert.equal(metricOf(links, port, 'qpgate_order_path_rearms_total'), 2, 'the gateway re-armed after each migration, each once its link was up');
    process.stdout.write(`# failover: ${done['firstAnswerMs'].toFixed(0)} ms to the alternate, ${again['firstAnswerMs'].toFixed(0)} ms back to the primary after the re-arm\n`);
  });
});

test('a path that never comes back: with both links down the next order ends the session with IBV_WC_RETRY_EXC_ERR and the client is told', { skip, timeout: 120_000 }, async () => {
  await withFailoverClient(2, 'apm-lost', { before: 4, after: 4 }, async ({ links, port, client, nextLine }) => {
    const primary = await nextLine();
    assert.equal(primary['phase'], 'primary');
    links.down(links.primary);
    client.stdin!.write('down\n');
    const done = await nextLine();
    assert.deepEqual(done['answers'], { ack: 8 }, 'the session went on on its alternate path');
    const moved = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(moved['activePath'], 'alternate', JSON.stringify(moved));

    links.down(links.alternate);
    client.stdin!.write('lost\n');
    const lost = await nextLine();
    assert.equal(lost['phase'], 'lost');
    assert.match(String(lost['reason']), /IBV_WC_RETRY_EXC_ERR/, JSON.stringify(lost));
    // Unanswered, the order is neither acknowledged nor silently dropped: it waits for a reconnect to send it again.
    assert.equal(lost['order'], 'pending', JSON.stringify(lost));
    process.stdout.write(`# both links lost: the client told after ${Number(lost['ms']).toFixed(0)} ms (${String(lost['reason'])})\n`);
  });
});

test('primary link cut with orders and answers in flight: both ends move to the alternate path, every order answered once, app_seq without a gap, no fill lost', { skip, timeout: 120_000 }, async () => {
  const plan = { before: 10, after: 2000, window: 16, streamingAfter: 200 };
  await withFailoverClient(3, 'apm-stream', plan, async ({ links, port, client, nextLine }) => {
    const primary = await nextLine();
    assert.equal(primary['phase'], 'primary');
    client.stdin!.write('stream\n');
    const streaming = await nextLine();
    assert.equal(streaming['phase'], 'streaming');
    links.down(links.primary);
    const done = await nextLine();
    assertEveryOrderAnsweredOnce(done, plan.before + plan.after);
    const moved = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(moved['state'], 'RTS', JSON.stringify(moved));
    assert.equal(moved['activePath'], 'alternate', JSON.stringify(moved));
    assert.equal(moved['pathMigrations'], 1, JSON.stringify(moved));
    process.stdout.write(`# cut in flight: the longest wait for an answer was ${Number(done['longestWaitMs']).toFixed(0)} ms\n`);
  });
});

test('a risk session moves to the alternate path with FETCH_ADDs in flight: each executed exactly once, none lost, no reconnect', { skip, timeout: 120_000 }, async () => {
  const plan = { before: 10, after: 1000, window: 8, streamingAfter: 100 };
  await withFailoverChild(4, { script: RISK_FAILOVER_CLIENT, token: TOKENS.risk, name: 'apm-risk', plan }, async ({ links, port, client, nextLine }) => {
    const primary = await nextLine();
    assert.equal(primary['phase'], 'primary');
    const armed = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(armed['role'], 'risk', JSON.stringify(armed));
    assert.equal(armed['pathMigState'], 'ARMED', JSON.stringify(armed));
    client.stdin!.write('stream\n');
    assert.equal((await nextLine())['phase'], 'streaming');
    links.down(links.primary);
    const done = await nextLine();
    assert.equal(done['phase'], 'done');
    const total = plan.before + plan.after;
    const start = BigInt(primary['start']);
    // Each FETCH_ADD of 1 returns the limit before it: executed once each, the old values are start .. start + total - 1.
    const olds = (done['olds'] as string[]).map(BigInt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(olds, Array.from({ length: total }, (_, i) => start + BigInt(i)), 'each FETCH_ADD executed exactly once');
    assert.equal(BigInt(done['limit']), start + BigInt(total), 'the credit limit rose by the number of FETCH_ADDs');
    assert.equal(done['stats'].reconnects, 0, 'the session migrated: the client did not reconnect');
    assert.equal(done['stats'].failovers, 0);
    const moved = sessionsOf(links, port).find((s) => s['id'] === primary['session'])!;
    assert.equal(moved['state'], 'RTS', JSON.stringify(moved));
    assert.equal(moved['activePath'], 'alternate', JSON.stringify(moved));
    assert.equal(moved['pathMigrations'], 1, JSON.stringify(moved));
    process.stdout.write(`# risk session cut in flight: the longest wait for an atomic was ${Number(done['longestWaitMs']).toFixed(0)} ms\n`);
  });
});
