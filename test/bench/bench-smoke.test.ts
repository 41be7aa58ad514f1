// Benchmarks are measured, not asserted: this only proves that `npm run bench`
// still runs end to end and prints what the README quotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';

test('the benchmark runner smoke-runs every benchmark and prints its tables', () => {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/bench/run.js'), '--quick'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    // A bound for a hung benchmark, not for a slow machine: the whole smoke took 301 s on a quiet
    // machine (2026-12-08; its rdma step, a TCG guest, 176 s of it), and a guest slows down more
    // than anything else as the host fills (the guest tests give themselves 1,200 s and more):
    // beside a parallel build one run was still in the rdma step after 734 s, and beside a build
    // and two more guests another ran out of the 900 s this bound was.
    timeout: 1_800_000,
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  // machine: a spinner per CPU and the longest time each lost
  assert.match(r.stdout, /^RESULT \{"bench":"vcpu_gaps","cpu":0,"cpus":\d+,"seconds":1\.0,"max_gap_ms":[\d.]+,/m);
  assert.match(r.stdout, /^isal\s+4096\s/m);
  assert.match(r.stdout, /^zlib\s+4096\s/m);
  assert.match(r.stdout, /^backoff\s+16\s+\d+/m);
  assert.match(r.stdout, /^spin\s+256\s+\d+/m);
  // transport: the ping-pong, tuning, multicast and aims tables
  assert.match(r.stdout, /^Ping-pong round trip on loopback/m);
  assert.match(r.stdout, /^soft_rc\s+64\s+\d/m);
  assert.match(r.stdout, /^soft_rc\s+1024\s+\d/m);
  assert.match(r.stdout, /^c_spin\s+64\s+\d/m);
  assert.match(r.stdout, /^node\s+64\s+\d/m);
  assert.match(r.stdout, /^stream\s+128\s+8\s+\d/m);
  assert.match(r.stdout, /^mc_soft\s+64\s+88\s+3\s+\d/m);
  assert.match(r.stdout, /^mc_c\s+64\s+88\s+1\s+\d/m);
  assert.match(r.stdout, /^mc_node\s+1024\s+1048\s+3\s+\d/m);
  assert.match(r.stdout, /^RC RTT p50 64 B \/ C busy-poll UDP RTT p50\s+[\d.]+\s+<= 2\s+(PASS|MISS)$/m);
  assert.match(r.stdout, /^UD mcast 64 B x 3 sub: soft sent\/s \/ C sendmmsg sent\/s\s+[\d.]+\s+>= 0\.9\s+(PASS|MISS)$/m);
  // rdma: perftest and the ibv backend side by side on rxe in the guest
  for (const t of ['send', 'write', 'atomic']) {
    assert.match(r.stdout, new RegExp(`^${t}\\s+perftest ib_${t}_lat\\s+[\\d.]+`, 'm'));
    assert.match(r.stdout, /qpgate ibv backend\s+[\d.]+/m);
  }
  assert.match(r.stdout, /^\s+ratio qpgate\/perftest\s+[\d.]+/m);
  // rdma: the gateway as users run it, on rxe and on the soft backend in the same guest run
  for (const t of ['feed', 'order', 'risk']) {
    for (const backend of ['ibv', 'soft']) assert.match(r.stdout, new RegExp(`^${t}\\s+${backend}\\s+[\\d.]+\\s+[\\d.]+`, 'm'));
  }
  assert.match(r.stdout, /^\s+ratio ibv\/soft\s+[\d.]+/m);
  assert.match(r.stdout, /^order -> Ack on rxe p50 \/ ib_send_lat round trip \(2 x typical\s+[\d.]+\)\s+[\d.]+$/m);
  // feed: path 1 (native publisher -> subscriber) at each offered rate, its anchors and aims
  assert.match(r.stdout, /^Path 1, native Publisher -> Subscriber/m);
  for (const rate of ['10000', '1000000', 'max']) {
    assert.match(r.stdout, new RegExp(`^${rate}\\s+\\S+\\s+\\S+\\s+[\\d.]+%\\s+[\\d.]+\\s+\\d`, 'm'));
  }
  assert.match(r.stdout, /^C sendmmsg x32 \/ recvmmsg\s+1016 B datagrams\s+\d/m);
  assert.match(r.stdout, /^native unpaced received ticks\/s \/ C sendmmsg ticks\/s \(zero loss\)\s+[\d.]+\s+>= 0\.8\s+(PASS|MISS)/m);
  assert.match(r.stdout, /^native p50 at 10000\/s \/ sockperf mcast one-way p50\s+\S+\s+<= 2\s+(PASS|MISS|-)$/m);
  assert.match(r.stdout, /clock for send times: CLOCK_MONOTONIC/);
  // feed: path 2 (TS API end to end vs Node dgram) at each offered rate, and its aims
  assert.match(r.stdout, /^Path 2, TS API end to end/m);
  for (const impl of ['qpgate', 'qpgate-batch', 'dgram']) {
    // A row per rate; '-' when a starved sender measured nothing in the short window.
    for (const rate of ['10000', '100000', '1000000']) {
      assert.match(r.stdout, new RegExp(`^${impl}\\s+${rate}\\s+\\S+\\s+\\S+\\s+([\\d.]+%|-)\\s+\\S+`, 'm'));
    }
  }
  assert.match(r.stdout, /^TS received ticks\/s \/ dgram received ticks\/s at 1000k\/s offered\s+\S+\s+>= 2\s+(PASS|MISS|-)$/m);
  assert.match(r.stdout, /^TS p99 \/ dgram p99 at 10000\/s\s+\S+\s+/m);
  // orders: order -> Ack over RC (1 and 8 sessions, ping-pong and throughput) beside its anchors, and the aims
  assert.match(r.stdout, /^Order -> Ack round trip on loopback/m);
  for (const sessions of ['1', '8']) {
    // ping-pong: a p50 and a non-zero orders/s; throughput: a non-zero orders/s
    const what = sessions === '1' ? 'order -> Ack' : 'same, round robin';
    assert.match(r.stdout, new RegExp(`^qpgate_rc\\s+${sessions}\\s+1\\s+[\\d.]+\\s+\\S+\\s+\\S+\\s+[1-9][\\d.]*k?\\s+${what}`, 'm'));
    assert.match(r.stdout, new RegExp(`^qpgate_rc\\s+${sessions}\\s+64\\s+[\\d.]+\\s+\\S+\\s+\\S+\\s+[1-9][\\d.]*k?\\s`, 'm'));
    assert.match(r.stdout, new RegExp(`^node_tcp\\s+${sessions}\\s+1\\s+[\\d.]+\\s+\\S+\\s+\\S+\\s+[1-9][\\d.]*k?\\s`, 'm'));
  }
  assert.match(r.stdout, /^c_spin\s+-\s+1\s+[\d.]+/m);
  assert.match(r.stdout, /^RC order->Ack p50, 1 session\(s\) \/ C busy-poll UDP RTT p50\s+[\d.]+\s+<= 2\.5\s+(PASS|MISS)$/m);
  assert.match(r.stdout, /^RC order->Ack p99, 1 session\(s\) \/ C busy-poll UDP RTT p99\s+[\d.]+\s+<= 3\s+(PASS|MISS)$/m);
  assert.match(r.stdout, /^Node TCP order->Ack p50 \/ RC p50, 1 session\(s\)\s+[\d.]+\s+>= 8\s+(PASS|MISS)$/m);
  // api: the TS clients beside a Node TCP gateway + client and a bare Node TCP echo, and the aims
  assert.match(r.stdout, /^TS API round trips on loopback/m);
  for (const impl of ['ts_order', 'ts_order_spin', 'ts_risk', 'node_tcp', 'node_echo']) {
    assert.match(r.stdout, new RegExp(`^${impl}\\s+[\\d.]+\\s+\\S+\\s+\\S+\\s+\\S+\\s+\\S`, 'm'));
  }
  assert.match(r.stdout, /^OrderClient p50 \/ Node TCP gateway \+ client p50\s+[\d.]+\s+<= 0\.5\s+(PASS|MISS)$/m);
  assert.match(r.stdout, /^OrderClient p50 \/ bare Node TCP echo p50\s+[\d.]+\s+<= 1\.0\s+(PASS|MISS)$/m);
  // failover: the session's time to its first Ack on the alternate path (root only: it makes namespaces)
  assert.match(r.stdout, /^(apm\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$|failover: skipped: needs root)/m);
  // failover-ibv: the same on rxe in the rdma-vm guest, where the client fails over to its second device pair
  assert.match(r.stdout, /^(ibv\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$|failover-ibv: skipped: no qemu)/m);
  // slo: the embedded default (npm start) against its tick-publish objective, lent and woken
  assert.match(r.stdout, /^The embedded default \(npm start\): tick_publish/m);
  for (const engine of ['lend', 'wake']) assert.match(r.stdout, new RegExp(`^${engine}\\s+[\\d.]+\\s+[\\d.]+\\s+[\\d.]+\\s`, 'm'));
  assert.match(r.stdout, /^tick-publish-p99 as shipped \(lend\): p99 [\d.]+ µs against 50: (MET|MISSED); wake: [\d.]+ µs$/m);
});
