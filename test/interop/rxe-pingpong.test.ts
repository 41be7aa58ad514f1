// rdma-core's own tools against `qpgate pingpong` (issue 7): inside the
// rdma-vm guest, ibv_rc_pingpong and ibv_ud_pingpong on the kernel's rxe
// (rxe_v, 10.77.2.1) talk real RoCEv2 across a veth pair to qpgate's soft
// backend in another network namespace (10.77.2.2), each side in turn the
// server. rxe 6.1 has no ICRC error counter (it drops the packet and logs
// "bad ICRC"), so "no ICRC error" is: rxe's rcvd_pkts rose by exactly the
// packets we sent, its sent_pkts by exactly what we received, and dmesg has
// no ICRC complaint. Our side receives in the af-packet mode, so it checks
// the ICRC of every rxe packet against the real IP header (rxe's IPv4 ID is
// not 0): none mismatched, none went unverified, all were delivered.
//
// Skipped where qemu is missing, unless QPGATE_REQUIRE_IBV=1 (then it fails).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT } from '../support/paths.js';

const ITERS = 50;
const qemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { encoding: 'utf8' }).status === 0;
const required = process.env.QPGATE_REQUIRE_IBV === '1';

interface CaseResult {
  case: string;
  transport: 'rc' | 'ud';
  server: 'rxe' | 'qpgate';
  cStatus: number;
  qpgateStatus: number;
  rxeRcvdDelta: number;
  rxeSentDelta: number;
  qpgate: { sent: number; received: number; iters: number; checked?: boolean; counters: Record<string, number> } | null;
  cOutput: string;
  qpgateOutput: string;
}

test('ibv_rc_pingpong and ibv_ud_pingpong on rxe complete against qpgate pingpong, both directions', { skip: !qemu && !required ? 'no qemu-system-x86_64 (install qemu-system-x86)' : false, timeout: 1_200_000 }, () => {
  assert.ok(qemu, 'QPGATE_REQUIRE_IBV=1 but qemu-system-x86_64 is missing');
  const run = spawnSync(
    path.join(REPO_ROOT, 'test/rdma-vm/run'),
    ['--netns', '--timeout', '900', '--env', `PINGPONG_ITERS=${ITERS}`, '--', 'bash', path.join(REPO_ROOT, 'test/interop/rxe-pingpong-guest.sh')],
    { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  assert.equal(run.status, 0, `the guest run failed (${run.status}):\n${run.stderr}\n${run.stdout}`);
  const lines = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const cases = lines.filter((l) => 'case' in l) as unknown as CaseResult[];
  assert.deepEqual(cases.map((c) => c.case), ['rc server=rxe', 'rc server=qpgate', 'ud server=rxe', 'ud server=qpgate']);
  for (const c of cases) {
    const where = `${c.case}\n--- ibv_${c.transport}_pingpong:\n${c.cOutput}\n--- qpgate:\n${c.qpgateOutput}`;
    assert.equal(c.cStatus, 0, `ibv_${c.transport}_pingpong failed: ${where}`);
    assert.equal(c.qpgateStatus, 0, `qpgate pingpong failed: ${where}`);
    assert.match(c.cOutput, new RegExp(`${ITERS} iters in [0-9.]+ seconds`), where);
    assert.ok(c.qpgate !== null, where);
    assert.equal(c.qpgate.sent, ITERS, where);
    assert.equal(c.qpgate.received, ITERS, where);
    if (c.server === 'rxe') assert.equal(c.qpgate.checked, true, `the data did not come back intact: ${where}`);
    // Every packet we sent reached rxe's transport (none dropped for a bad
    // ICRC), and every packet rxe sent reached our QP, except answers to our
    // own retransmissions that come after the run: rxe ACKs each duplicate
    // packet again (rxe_resp.c's duplicate_request, C9-105), and when the
    // original ACK completed the last send first, pingpong has destroyed the
    // QP when the second one comes. Such a packet counts as unknown_qpn if it
    // lands before pingpong reads its counters (after the destroy,
    // finalCounters), or not at all if it lands after; rxe's counters are read
    // after both processes exit. At most one per packet we resent; any other
    // drop reason is a defect.
    const q = c.qpgate.counters;
    const count = (name: string): number => {
      const v = q[name];
      assert.ok(v !== undefined, `pingpong reported no counter ${name}: ${where}`);
      return v;
    };
    const ingress = Object.fromEntries(Object.entries(q).filter(([k, v]) => k.startsWith('ingress.') && v !== 0));
    const transport = `our QP: sent_pkts=${q['qp.sent_pkts']} retransmitted_pkts=${q['qp.retransmitted_pkts']} timeouts=${q['qp.timeouts']} ` +
      `acks_sent=${q['qp.acks_sent']} duplicate_request=${q['qp.duplicate_request']} rcvd_pkts=${q['qp.rcvd_pkts']}; ` +
      `net tx_packets=${q['net.tx_packets']} rx_packets=${q['net.rx_packets']}; ingress ${JSON.stringify(ingress)}`;
    assert.equal(c.rxeRcvdDelta, count('net.tx_packets'), `rxe's rcvd_pkts vs our net tx_packets (${transport}): ${where}`);
    const lateToDestroyedQp = count('ingress.unknown_qpn');
    const neverSeen = c.rxeSentDelta - count('net.rx_packets');
    assert.ok(neverSeen >= 0, `we received more than rxe's sent_pkts (${transport}): ${where}`);
    assert.equal(count('ingress.delivered') + lateToDestroyedQp, count('net.rx_packets'), `a packet from rxe was dropped by our ingress (${transport}): ${where}`);
    assert.ok(
      lateToDestroyedQp + neverSeen <= count('qp.retransmitted_pkts'),
      `packets from rxe that missed our QP (${lateToDestroyedQp} after its destroy, ${neverSeen} after our counters were read) beyond the ${q['qp.retransmitted_pkts']} we resent (${transport}): ${where}`,
    );
    assert.equal(count('wire.icrc_mismatch'), 0, where);
    assert.equal(count('ingress.icrc_unverifiable'), 0, `our side did not verify rxe's ICRCs: ${where}`);
  }
  const dmesg = lines.find((l) => 'dmesgIcrc' in l) as { dmesgIcrc: string } | undefined;
  assert.ok(dmesg !== undefined);
  assert.equal(dmesg.dmesgIcrc, '', 'rxe logged ICRC complaints');
});
