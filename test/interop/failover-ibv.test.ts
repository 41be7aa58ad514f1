// Application-level failover on ibv (issue 17 item 1; docs/protocol.md §1.11):
// inside the rdma-vm guest, two links between two pairs of the kernel's rxe
// devices (veth-a/b, veth-c/d). The gateway serves on rxe_a with rxe_c as
// backend.alternateDevice; an OrderClient and a RiskClient on rxe_b with
// rxe_d as their alternate device. Mid-stream the first link drops every
// packet. rxe has no automatic path migration: the clients' retries run out
// (IBV_WC_RETRY_EXC_ERR), they open the session on the second link (a new
// handshake, Hello, the resend by app_seq, the unanswered orders again), and
// every order is answered exactly once, with no app_seq lost or given twice.
// A feed subscriber with a device on each link keeps its ticks (line B leaves
// from the gateway's alternate device) and its recovery session fails over
// too. The guest side is failover-ibv-guest.sh, failover-orders.ts and
// failover-feed.ts.
//
// Skipped where qemu is missing, unless QPGATE_REQUIRE_IBV=1 (then it fails).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { guestSkip, runGuestScript } from '../support/rdma-vm.js';
import { CUT_AFTER, ORDERS, type FailoverRun } from './failover-orders.js';

interface GuestResult {
  status: { run: number; gw: number };
  run: FailoverRun | null;
  runOut: string;
  runErr: string;
  sessionsTable: string;
  gwOut: string;
}

/**
 * Where each order ended: filled, cancelled, or still resting, never two of
 * these. The session that failed over left RTS, so cancel-on-disconnect
 * cancelled what rested at the cut (reason DISCONNECT, the only cancel
 * here). Each trade fills one sell and one buy; and a sell and a buy at one
 * price never both rest, or they would have crossed.
 */
function assertEveryOrderEndedOnce(run: FailoverRun, where: string): void {
  const filled = new Set(run.fillIds);
  const cancelled = new Set(run.cancelled.map((c) => c.id));
  assert.equal(filled.size, run.fillIds.length, `an order filled twice${where}`);
  assert.equal(cancelled.size, run.cancelled.length, `an order cancelled twice${where}`);
  assert.deepEqual(run.fillIds.filter((id) => cancelled.has(id)), [], `orders both filled and cancelled${where}`);
  assert.deepEqual([...new Set(run.cancelled.map((c) => c.reason))].filter((r) => r !== 'DISCONNECT'), [], where);
  // failover-orders.ts numbers orders from 1: odd ids sell (account 1), even ones buy (account 2).
  const isSell = (id: string): boolean => BigInt(id) % 2n === 1n;
  assert.equal(run.fillIds.filter(isSell).length * 2, run.fills, `every trade filled one sell and one buy${where}`);
  const ids = run.answers.map((a) => a.id);
  const resting = (sell: boolean): number => ids.filter((id) => isSell(id) === sell && !filled.has(id) && !cancelled.has(id)).length;
  assert.ok(resting(true) === 0 || resting(false) === 0, `a sell and a buy both resting at one price (${resting(true)} and ${resting(false)})${where}`);
}

type SessionView = { name: string; device: string; failovers: number; connected: boolean; state: string };

test('ibv without APM: when the primary link fails mid-stream the order, risk and recovery sessions fail over to the second device pair, every order answered once, app_seq without gap or repeat, the feed on line B', { skip: guestSkip, timeout: 1_200_000 }, async () => {
  const r = (await runGuestScript(['--veth', '--veth2'], 'test/interop/failover-ibv-guest.sh', 1000))[0] as unknown as GuestResult;
  const where = `\n--- client:\n${r.runErr}\n${r.runOut}\n--- gateway:\n${r.gwOut}`;
  assert.equal(r.status.run, 0, where);
  assert.ok(r.run !== null, where);
  const run = r.run;

  // Both devices open at the gateway, and the cut link said nothing to rxe's ports.
  assert.match(r.gwOut, /"alternate device open"/, where);

  // Every order settled exactly once, and acknowledged: the failover resent
  // the unanswered ones and the gateway acted on each once.
  const ids = run.answers.map((a) => a.id);
  assert.equal(ids.length, ORDERS, where);
  assert.equal(new Set(ids).size, ORDERS, `an order settled twice${where}`);
  assert.deepEqual(run.answers.filter((a) => a.kind !== 'ack'), [], where);

  // One failover, to the alternate device, after the retries ran out on the cut link.
  assert.equal(run.stats['failovers'], 1, where);
  assert.equal(run.failovers.length, 1, where);
  assert.equal(run.failovers[0]!.device, 'alternate');
  assert.match(run.failovers[0]!.reason, /IBV_WC_RETRY_EXC_ERR/);
  assert.equal(run.activeDevice, 'alternate');
  assert.ok(run.stats['resent']! >= 0);

  // Sequenced messages in app_seq order, each once (duplicates of the resend are dropped), none missing.
  const seqs = run.appSeqs.map(BigInt);
  for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1]! + 1n, `app_seq ${seqs[i - 1]} then ${seqs[i]}${where}`);
  assert.equal(run.gaps, 0, where);
  // Each order's ack plus its fills and cancels are every message of the session.
  assert.equal(BigInt(seqs.length), BigInt(ORDERS + run.fills + run.cancels), where);
  assert.ok(run.fills > 0, `the crossing pairs traded${where}`);
  assertEveryOrderEndedOnce(run, where);

  // The risk client, idle, found the link gone by its keepalive and moved too; it reads its words there.
  assert.equal(run.risk.activeDevice, 'alternate', where);
  assert.equal(run.risk.failovers, 1, where);
  assert.ok(BigInt(run.risk.creditLimit) > 0n, where);

  // The feed subscriber: line B (from the gateway's alternate device, onto
  // its own) carried the feed past the cut, every message once and in order,
  // and its recovery session moved to the second link and recovered there
  // what line B then lost.
  const feed = run.feed;
  assert.ok(feed.delivered > feed.atCut, `ticks after the cut${where}`);
  assert.equal(feed.outOfOrder, 0, where);
  assert.equal(feed.gaps, 0, where);
  const recovery = feed.stats.recovery!;
  assert.equal(recovery.device, 'alternate', where);
  assert.equal(recovery.failovers, 1, where);
  assert.ok(recovery.connection!.retryExceeded >= 1, where);
  const channel = feed.stats.channels[0]!;
  assert.ok(channel.lineBFrames > 0 && channel.recovered > 0, `line B and recovery${where}`);
  assert.equal(channel.unrecoverable, 0, where);
  // Line B's UD QP is listed on the gateway's alternate device (QPNs are per device).
  const qps = run.qps as { alternateDevice: string | null; qps: Array<{ device: string; type: string; state: string; owner: string; label: string | null }> };
  assert.equal(qps.alternateDevice, 'rxe_c', where);
  const lineB = qps.qps.filter((q) => q.device === 'alternate' && q.owner === 'feed:default');
  assert.deepEqual(lineB.map((q) => [q.type, q.state, q.label]), [['UD', 'RTS', 'UD multicast publisher, line B']], where);

  // The gateway shows the three sessions on its alternate device, one failover each.
  const sessions = (run.sessions as { sessions: SessionView[] }).sessions;
  for (const name of ['failover-orders', 'failover-risk', 'failover-feed']) {
    const s = sessions.find((x) => x.name === name);
    assert.ok(s !== undefined, `${name} in /v1/sessions${where}`);
    assert.equal(s.device, 'alternate', name);
    assert.equal(s.failovers, 1, name);
    assert.equal(s.state, 'RTS', name);
  }
  process.stdout.write(
    `# failover: ${run.failovers[0]!.ms.toFixed(0)} ms from the loss to the session open again (risk: ${run.risk.failoverEvents.map((f) => f.ms.toFixed(0)).join(', ')} ms; ` +
      `feed recovery: ${recovery.lastFailoverMs?.toFixed(0)} ms), cut after ${CUT_AFTER} answers, ${run.stats['resent']} orders resent, ` +
      `${feed.delivered - feed.atCut} ticks after the cut, ${channel.recovered} recovered on the second link\n`,
  );
  assert.equal(r.status.gw, 0, where);
});
