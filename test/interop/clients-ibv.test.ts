// The clients on a real RDMA device (issue 15 item 5): inside the rdma-vm
// guest, the gateway on rxe_a (backend.kind ibv) and `qpgate subscribe`,
// `order`, `risk` and `pingpong` on rxe_b with --backend ibv --device rxe_b.
// The order and risk clients drive their engine from the JS thread: an
// answer reaches them only because the device's completion channel is in
// the engine's wait fd (native/src/engine/device_events_agent.h); without it
// the first order would wait forever. rxe_a's port going down and up again
// is logged by the gateway, one line each. A risk session whose QP a remote
// access error makes fatal ends alone, /v1/sessions and `qpgate sessions`
// saying what ended it. The guest side is clients-ibv-guest.sh.
//
// Skipped where qemu is missing, unless QPGATE_REQUIRE_IBV=1 (then it fails).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { guestSkip, runGuestScript } from '../support/rdma-vm.js';

const COUNT = 200;
const ITERS = 50;

interface GuestResult {
  status: Record<'sub' | 'order' | 'risk' | 'killed' | 'gw' | 'pp' | 'c' | 'bystander' | 'down', number>;
  /** `qpgate pingpong --ib-port 1` on rxe_b with veth-b down: its output. */
  down: string;
  /** The risk session made fatal: its client's completion status, the page's access, /v1/sessions/<id> once it ended. */
  fatal: { status: string; access: string[]; session: Record<string, unknown> } | null;
  fatalErr: string;
  sessionsTable: string;
  sessions: { sessions: Array<Record<string, unknown>> } | null;
  bystander: string[];
  bystanderErr: string;
  /** Seconds each step took in the guest ('ready=40 subscribe=12 ...'), printed for the CI time budget. */
  seconds: string;
  sub: string[];
  subErr: string;
  order: string[];
  orderErr: string;
  risk: string[];
  riskErr: string;
  killed: string[];
  killedErr: string;
  pp: string;
  ppErr: string;
  c: string;
  gwOut: string;
}

type Answer = { kind: string; clientOrderId?: string; origClientOrderId?: string; reasonName?: string; quantity?: number; leavesQuantity?: number };

test('clients on rxe (--backend ibv): subscribe gets the feed, order places, fills and cancels, risk sets the kill switch, pingpong runs against ibv_rc_pingpong', { skip: guestSkip, timeout: 1_200_000 }, () => {
  const r = runGuestScript(['--veth'], 'test/interop/clients-ibv-guest.sh')[0] as unknown as GuestResult;
  process.stdout.write(`# guest steps (s): ${r.seconds}\n`);
  const where = `\n--- gateway:\n${r.gwOut}\n--- subscriber:\n${r.subErr}\n--- order:\n${r.orderErr}\n--- risk:\n${r.riskErr}\n--- killed:\n${r.killedErr}`;

  // The feed on rxe_b: COUNT messages, decoded, in sequence with no gap.
  assert.equal(r.status.sub, 0, where);
  const ticks = r.sub.map((l) => JSON.parse(l) as { channel: number; seq: string | number; body: unknown });
  assert.equal(ticks.length, COUNT, where);
  for (const t of ticks) assert.ok(t.body !== null && !(typeof t.body === 'object' && 'undecodable' in t.body), JSON.stringify(t));
  const seqs = ticks.filter((t) => t.channel === ticks[0]!.channel).map((t) => BigInt(t.seq));
  seqs.forEach((s, i) => assert.equal(s, seqs[0]! + BigInt(i), `a gap on channel ${ticks[0]!.channel} at ${i}: ${where}`));

  // The order session: both orders acked, the buy fills 3 of the sell, the sell's rest is cancelled.
  assert.equal(r.status.order, 0, `${r.order.join('\n')}${where}`);
  const answers = r.order.map((l) => JSON.parse(l) as Answer);
  const has = (pred: (a: Answer) => boolean, what: string) => assert.ok(answers.some(pred), `${what}: ${r.order.join('\n')}${where}`);
  has((a) => a.kind === 'ack' && a.clientOrderId === '1', 'no ack for the sell');
  has((a) => a.kind === 'ack' && a.clientOrderId === '2', 'no ack for the buy');
  has((a) => a.kind === 'fill' && a.clientOrderId === '1' && a.quantity === 3 && a.leavesQuantity === 2, 'no fill of the sell');
  has((a) => a.kind === 'fill' && a.clientOrderId === '2' && a.quantity === 3 && a.leavesQuantity === 0, 'no fill of the buy');
  has((a) => a.kind === 'cancelAck' && a.origClientOrderId === '1', 'no cancel of the sell');

  // The QP-fatal path: an atomic on a READ-only page is a remote access error
  // on rxe; the gateway's QP went to ERR and that session ended, saying why
  // ('QP state ERR', whether its flushed receives or the 10 ms state check saw
  // it first: rxe flushes asynchronously and raises no async event), while the
  // bystander order session stayed connected and cancelled its order after it.
  assert.ok(r.fatal !== null, `${r.fatalErr}${where}`);
  assert.deepEqual(r.fatal.access, ['REMOTE_READ']);
  assert.equal(r.fatal.status, 'IBV_WC_REM_ACCESS_ERR', r.fatalErr);
  const fatal = r.fatal.session;
  assert.deepEqual([fatal['name'], fatal['connected'], fatal['state'], fatal['endedBy']], ['ibv-fatal', false, 'ERR', 'QP state ERR'], JSON.stringify(fatal));
  const bystander = r.sessions?.sessions.find((x) => x['name'] === 'ibv-bystander');
  assert.deepEqual([bystander?.['connected'], bystander?.['state'], bystander?.['endedBy']], [true, 'RTS', null], JSON.stringify(r.sessions));
  assert.match(r.sessionsTable, new RegExp(`^\\s*${String(fatal['id'])}\\s+risk\\s+ibv-fatal\\s+ERR\\s+.*\\sQP state ERR$`, 'm'), r.sessionsTable);
  assert.equal(r.status.bystander, 0, `${r.bystander.join('\n')}\n${r.bystanderErr}${where}`);
  const after = r.bystander.map((l) => JSON.parse(l) as Answer);
  assert.ok(after.some((a) => a.kind === 'ack' && a.clientOrderId === '20'), r.bystander.join('\n'));
  assert.ok(after.some((a) => a.kind === 'cancelAck' && a.origClientOrderId === '20'), `the bystander cancels after the fatal session ended: ${r.bystander.join('\n')}`);

  // The risk session's CMP_SWAP set the kill switch; the next order of account 1 is rejected for it.
  assert.equal(r.status.risk, 0, `${r.risk.join('\n')}${where}`);
  assert.deepEqual(JSON.parse(r.risk[0]!), { account: '1', word: 'killSwitch', op: 'CMP_SWAP', before: '0', after: '1' }, r.risk.join('\n'));
  assert.equal(r.status.killed, 1, `one order, rejected: exit 1\n${r.killed.join('\n')}${where}`);
  const killed = r.killed.map((l) => JSON.parse(l) as Answer);
  assert.ok(killed.some((a) => a.kind === 'reject' && a.clientOrderId === '10' && a.reasonName === 'KILL_SWITCH'), r.killed.join('\n'));

  // The port's bounce: one pino line per event, naming the device and the
  // port (rxe 6.1 raises PORT_ACTIVE twice on one link up: NETDEV_UP and NETDEV_CHANGE).
  const logged = r.gwOut.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const event of ['IBV_EVENT_PORT_ERR', 'IBV_EVENT_PORT_ACTIVE']) {
    const lines = logged.filter((l) => l['event'] === event);
    assert.ok(lines.length >= 1, `${event} is logged: ${r.gwOut}`);
    for (const l of lines) {
      assert.deepEqual([l['component'], l['device'], l['port'], l['msg']], ['device', 'rxe_a', 1, `device event ${event}`]);
      assert.equal(l['level'], event === 'IBV_EVENT_PORT_ERR' ? 40 : 30, 'a port going down is a warning, coming back is news');
    }
  }

  assert.equal(r.status.gw, 0, `the gateway did not stop cleanly on SIGTERM: ${where}`);

  // qpgate pingpong on rxe_b against ibv_rc_pingpong on rxe_a: every round trip, both sides.
  assert.equal(r.status.pp, 0, `${r.pp}\n${r.ppErr}\n--- ibv_rc_pingpong:\n${r.c}`);
  assert.equal(r.status.c, 0, r.c);
  const pp = JSON.parse(r.pp) as { sent: number; received: number; local: { gid: string } };
  assert.equal(pp.sent, ITERS, r.ppErr);
  assert.equal(pp.received, ITERS, r.ppErr);
  assert.equal(pp.local.gid, '::ffff:10.77.1.2', 'the RoCE v2 GID of veth-b, chosen automatically');

  // A client whose port is not ACTIVE stops at the device: one line naming it and the port, exit 2.
  assert.equal(r.status.down, 2, r.down);
  assert.match(r.down, /^qpgate pingpong: cannot open the ibv device rxe_b port 1: rxe_b port 1 is PORT_DOWN, not ACTIVE \(bring the port up: .* --ib-port\)\n$/, r.down);
});
