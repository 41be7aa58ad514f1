// The gateway on a real RDMA device (issue 15): inside the rdma-vm guest,
// `qpgate serve` with backend.kind ibv on the kernel's rxe (rxe_v,
// 10.77.2.1) publishes its feed by UD multicast and takes order sessions
// over RC; from namespace qpgate-peer, clients on the soft backend (af-packet
// receive, strict ICRC) subscribe and place and cancel an order. The
// gateway's QPs in /v1/qps are the ones `rdma res show qp` lists, in the
// same states, and rxe's own counters reach /metrics. The guest side is
// gateway-rxe-guest.sh.
//
// Skipped where qemu is missing, unless QPGATE_REQUIRE_IBV=1 (then it fails).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT } from '../support/paths.js';

const COUNT = 200;
const qemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { encoding: 'utf8' }).status === 0;
const required = process.env.QPGATE_REQUIRE_IBV === '1';

interface GuestResult {
  device: { rdma: { backend: string; name: string; gid: string; gidIndex: number; gidReport: string; interface: { name: string } } } | null;
  qps: { qps: Array<{ qpn: number; type: string; state: string; owner: string }> } | null;
  sessions: unknown;
  rdmaQp: Array<{ ifname: string; lqpn: number; type: string; state: string; comm: string }> | null;
  subStatus: number;
  orderStatus: number;
  gwStatus: number;
  rxeSentDelta: number;
  sub: string[];
  subErr: string;
  order: string[];
  orderErr: string;
  metrics: string[];
  netDev: Record<string, string>;
  bad: Record<'gid' | 'port', { status: number; output: string }>;
  gwOut: string;
}

test('the gateway on rxe (backend.kind ibv): a soft subscriber gets the feed, a soft order session places and cancels, /v1/qps agrees with rdma res', { skip: !qemu && !required ? 'no qemu-system-x86_64 (install qemu-system-x86)' : false, timeout: 1_200_000 }, () => {
  assert.ok(qemu, 'QPGATE_REQUIRE_IBV=1 but qemu-system-x86_64 is missing');
  const run = spawnSync(
    path.join(REPO_ROOT, 'test/rdma-vm/run'),
    ['--netns', '--timeout', '900', '--', 'bash', path.join(REPO_ROOT, 'test/interop/gateway-rxe-guest.sh')],
    { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  assert.equal(run.status, 0, `the guest run failed (${run.status}):\n${run.stderr}\n${run.stdout}`);
  const line = run.stdout.split('\n').find((l) => l.startsWith('{'));
  assert.ok(line !== undefined, run.stdout);
  const r = JSON.parse(line) as GuestResult;
  const where = `\n--- gateway:\n${r.gwOut}\n--- subscriber:\n${r.subErr}\n--- order:\n${r.orderErr}\n--- /proc/net/dev:\n${JSON.stringify(r.netDev, null, 1)}`;

  // The device is rxe's, with the RoCE v2 IPv4-mapped GID chosen and said so.
  assert.ok(r.device !== null, where);
  assert.equal(r.device.rdma.backend, 'ibv');
  assert.equal(r.device.rdma.name, 'rxe_v');
  assert.equal(r.device.rdma.gid, '::ffff:10.77.2.1');
  assert.equal(r.device.rdma.interface.name, 'veth-rxe');
  assert.match(r.device.rdma.gidReport, /^rxe_v port 1: GID index \d+ ::ffff:10\.77\.2\.1 \(RoCE v2, veth-rxe\), chosen automatically/);

  // The feed: COUNT messages, decoded, in sequence with no gap.
  assert.equal(r.subStatus, 0, where);
  const ticks = r.sub.map((l) => JSON.parse(l) as { channel: number; seq: string | number; body: unknown });
  assert.equal(ticks.length, COUNT, where);
  for (const t of ticks) assert.ok(t.body !== null && !(typeof t.body === 'object' && 'undecodable' in t.body), JSON.stringify(t));
  const seqs = ticks.filter((t) => t.channel === ticks[0]!.channel).map((t) => BigInt(t.seq));
  seqs.forEach((s, i) => assert.equal(s, seqs[0]! + BigInt(i), `a gap on channel ${ticks[0]!.channel} at ${i}: ${where}`));

  // The order session: an ack for order 1, then its cancel.
  assert.equal(r.orderStatus, 0, where);
  const answers = r.order.map((l) => JSON.parse(l) as { kind: string; clientOrderId?: string | number; origClientOrderId?: string | number });
  assert.ok(answers.some((a) => a.kind === 'ack' && String(a.clientOrderId) === '1'), `no ack for order 1: ${r.order.join('\n')}${where}`);
  assert.ok(answers.some((a) => a.kind === 'cancelAck' && String(a.origClientOrderId) === '1'), `no cancel of order 1: ${r.order.join('\n')}${where}`);

  // The kernel lists the gateway's QPs as the gateway does: /v1/qps's (the
  // feed's UD QP) with the same numbers and states, and the order session's
  // RC QP (in /v1/sessions; /v1/qps does not list session QPs on either backend).
  assert.ok(r.qps !== null && r.rdmaQp !== null, where);
  const kernel = new Map(r.rdmaQp.filter((q) => q.ifname === 'rxe_v' && q.comm !== 'ib_core').map((q) => [q.lqpn, `${q.type} ${q.state}`]));
  const listed = `/v1/qps ${JSON.stringify(r.qps.qps)}, /v1/sessions ${JSON.stringify(r.sessions)} vs rdma res show qp ${JSON.stringify(r.rdmaQp)}`;
  for (const q of r.qps.qps) assert.equal(kernel.get(q.qpn), `${q.type} ${q.state}`, listed);
  assert.ok(r.qps.qps.some((q) => q.type === 'UD' && q.state === 'RTS' && q.owner === 'feed:default'), listed);
  const sessionQpns = JSON.stringify(r.sessions).match(/"qpn":(\d+)/g)?.map((m) => Number(m.slice(6))) ?? [];
  assert.equal(sessionQpns.length, 1, listed);
  assert.equal(kernel.get(sessionQpns[0]!), 'RC RTS', listed);
  assert.equal(kernel.size, r.qps.qps.length + 1, `the kernel lists QPs the gateway does not: ${listed}`);

  // rxe's own counters: they rose with the feed, and /metrics shows them.
  assert.ok(r.rxeSentDelta >= COUNT / 10, `rxe sent_pkts rose by ${r.rxeSentDelta}`);
  const sent = r.metrics.find((l) => l.startsWith('qpgate_device_hw_counter{name="sent_pkts"}'));
  assert.ok(sent !== undefined && Number(sent.split(' ')[1]) > 0, r.metrics.join('\n'));
  assert.ok(r.metrics.includes('qpgate_device_async_events_lost_total 0'), r.metrics.join('\n'));

  assert.equal(r.gwStatus, 0, `the gateway did not stop cleanly on SIGTERM: ${where}`);

  // Bad input stops the start at the device: one line naming it and the fix, exit 2, nothing served.
  const oneLine = (o: string) => o.split('\n').filter((l) => l.startsWith('qpgate: '));
  assert.equal(r.bad.gid.status, 2, r.bad.gid.output);
  assert.deepEqual(oneLine(r.bad.gid.output).length, 1, r.bad.gid.output);
  assert.match(oneLine(r.bad.gid.output)[0]!, /^qpgate: cannot open the ibv device rxe_v: .*200.* \(set backend\.gidIndex to a RoCE v2 IPv4 entry, or unset it\)$/);
  assert.equal(r.bad.port.status, 2, r.bad.port.output);
  assert.deepEqual(oneLine(r.bad.port.output).length, 1, r.bad.port.output);
  assert.match(oneLine(r.bad.port.output)[0]!, /^qpgate: cannot open the ibv device rxe_v: rxe_v port 1 is PORT_DOWN, not ACTIVE \(bring the port up: .*\)$/);
  for (const b of [r.bad.gid, r.bad.port]) assert.doesNotMatch(b.output, /qpgate ready|Server listening/);
});
