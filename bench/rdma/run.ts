// perftest beside the project's ibv backend, on rxe in the rdma-vm guest
// (issue 7): ib_send_lat / ib_write_lat / ib_atomic_lat and bench_ibv_lat
// doing the same thing on the same rxe pair across a veth; then the gateway
// as users run it (issue 15 item 8), on rxe and on the soft backend: feed
// latency at a subscriber, OrderClient order -> Ack and a RiskClient atomic
// (gateway-guest.sh); all in one guest run, on the same emulated CPUs.
// Figures are emulated-CPU figures (TCG): only the ratios mean anything.
//
//   node dist/bench/rdma/run.js --build native/build-bench [--iters N] [--quick]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const args = process.argv.slice(2);
const flag = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const quick = args.includes('--quick');
const build = path.resolve(root, flag('--build', 'native/build-bench'));
const iters = Number(flag('--iters', quick ? '200' : '2000'));
const gatewayIters = quick ? 200 : 1000;
const feedSeconds = quick ? 5 : 20;
const feedRate = 1000;

interface Measurement {
  tool?: string;
  bench?: string;
  /** The gateway rows: which backend served. */
  backend?: string;
  test: string;
  error?: string;
  received?: number;
  lost?: number;
  t_typical?: number;
  t_avg?: number;
  p99?: number;
  p999?: number;
  p50?: number;
  mean?: number;
}

const run = spawnSync(
  path.join(root, 'test/rdma-vm/run'),
  [
    '--veth',
    '--netns',
    '--timeout',
    '1800',
    '--',
    'bash',
    path.join(root, 'bench/rdma/guest.sh'),
    path.join(build, 'bench/bench_ibv_lat'),
    String(iters),
    String(gatewayIters),
    String(feedSeconds),
    String(feedRate),
  ],
  { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20 },
);
if (run.status !== 0) {
  process.stderr.write(`bench rdma: the guest run failed (${run.status})\n${run.stderr}\n${run.stdout}\n`);
  process.exit(1);
}
const rows = run.stdout
  .split('\n')
  .filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l) as Measurement);
const fmt = (v: number | undefined) => (v === undefined ? '   -   ' : v.toFixed(2).padStart(7));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '  -  ' : (a / b).toFixed(2).padStart(5));
process.stdout.write(`rxe in the rdma-vm guest (TCG), rxe_a <-> rxe_b across a veth, ${iters} iterations, 2 B (atomic: 8 B)\n`);
process.stdout.write('test    tool              typical     avg     p99   p99.9   (µs; send/write: RTT/2, atomic: RTT)\n');
const summary: Record<string, unknown> = {};
let failed = false;
for (const test of ['send', 'write', 'atomic']) {
  const perf = rows.find((r) => r.tool === 'perftest' && r.test === test);
  const ours = rows.find((r) => r.bench === 'ibv_lat' && r.test === test);
  if (perf?.error !== undefined || perf === undefined || ours === undefined) {
    failed = true;
    process.stderr.write(`bench rdma: ${test}: ${perf?.error ?? 'missing result'}\n`);
    continue;
  }
  process.stdout.write(`${test.padEnd(7)} perftest ib_${test}_lat ${fmt(perf.t_typical)} ${fmt(perf.t_avg)} ${fmt(perf.p99)} ${fmt(perf.p999)}\n`);
  process.stdout.write(`${''.padEnd(7)} qpgate ibv backend  ${fmt(ours.p50)} ${fmt(ours.mean)} ${fmt(ours.p99)} ${fmt(ours.p999)}\n`);
  process.stdout.write(`${''.padEnd(7)} ratio qpgate/perftest ${ratio(ours.p50, perf.t_typical)}   ${ratio(ours.mean, perf.t_avg)}   ${ratio(ours.p99, perf.p99)}   ${ratio(ours.p999, perf.p999)}\n`);
  summary[test] = { perftest: perf, qpgate: ours, ratioTypical: ours.p50! / perf.t_typical! };
}
failed = gatewayTable(rows, summary) || failed;
process.stdout.write(`RESULT ${JSON.stringify({ bench: 'rdma', iters, ...summary })}\n`);
process.exit(failed ? 1 : 0);

/**
 * The gateway rows: each test on rxe beside the soft backend, and the order
 * round trip beside ib_send_lat's (perftest reports RTT/2: twice its typical).
 * Returns whether a row is missing.
 */
function gatewayTable(measured: Measurement[], into: Record<string, unknown>): boolean {
  const gateway = measured.filter((r) => r.bench === 'gateway');
  let missing = false;
  for (const e of gateway.filter((r) => r.error !== undefined)) {
    missing = true;
    process.stderr.write(`bench rdma: gateway on ${e.backend}: ${e.error}\n`);
  }
  process.stdout.write(
    `\nthe gateway (qpgate serve, bench/orders/gateway.yaml, synthetic feed at ${feedRate}/s): on rxe (ibv: rxe_a, clients on rxe_b) ` +
      `and on the soft backend (loopback in qpgate-peer), ${gatewayIters} round trips, feed ${feedSeconds} s\n`,
  );
  process.stdout.write('test    backend       p50     p99   p99.9   (µs; feed: frame sent -> received, order/risk: round trip)\n');
  const rows: Record<string, Record<string, Measurement | undefined>> = {};
  for (const test of ['feed', 'order', 'risk']) {
    rows[test] = {};
    for (const backend of ['ibv', 'soft']) {
      const m = gateway.find((r) => r.test === test && r.backend === backend);
      rows[test]![backend] = m;
      if (m === undefined) {
        missing = true;
        continue;
      }
      const extra = test === 'feed' ? `   ${m.received} received, ${m.lost} lost` : '';
      process.stdout.write(`${test.padEnd(7)} ${backend.padEnd(7)} ${fmt(m.p50)} ${fmt(m.p99)} ${fmt(m.p999)}${extra}\n`);
    }
    const { ibv, soft } = rows[test]!;
    process.stdout.write(`${''.padEnd(7)} ratio ibv/soft ${ratio(ibv?.p50, soft?.p50)}   ${ratio(ibv?.p99, soft?.p99)}   ${ratio(ibv?.p999, soft?.p999)}\n`);
  }
  const send = measured.find((r) => r.tool === 'perftest' && r.test === 'send');
  const sendRtt = send?.t_typical === undefined ? undefined : 2 * send.t_typical;
  const order = rows['order']!['ibv'];
  process.stdout.write(`order -> Ack on rxe p50 / ib_send_lat round trip (2 x typical ${fmt(sendRtt)}) ${ratio(order?.p50, sendRtt)}\n`);
  into['gateway'] = { rows, sendRttUs: sendRtt };
  return missing;
}
