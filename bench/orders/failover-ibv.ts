// Failover time of a trading session on ibv without automatic path
// migration (application-level failover, docs/protocol.md §1.11): in the
// rdma-vm guest, the gateway on the kernel's rxe with a second device on a
// second link (backend.alternateDevice), an OrderClient with two devices
// (failover-ibv-client.ts). Each run cuts the link the session is on and
// times the next order from the cut to its Ack; the session goes back and
// forth between the two links. Under TCG the figure is the guest's, not a
// NIC's: the retries (7 x the 67 ms ACK timeout) set its floor. p50/p99 over
// the runs, with the host's load average (measured, never asserted).
//   npm run bench -- --only failover-ibv
//   node dist/bench/orders/failover-ibv.js [--runs 20] [--quick] [--json out.json]
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBenchArgs } from '../feed/report.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const args = process.argv.slice(2);
const parsed = parseBenchArgs(args, root);
const { quick, jsonOut } = parsed;
const runs = quick || args.includes('--runs') ? parsed.runs : 20;

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;

if (spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { encoding: 'utf8' }).status !== 0) {
  process.stdout.write('failover-ibv: skipped: no qemu-system-x86_64 (the rdma-vm guest: test/rdma-vm/README.md)\n');
  process.exit(0);
}
const load0 = loadavg();
const run = spawnSync(
  path.join(root, 'test/rdma-vm/run'),
  ['--veth', '--veth2', '--timeout', String(300 + runs * 30), '--', 'bash', path.join(root, 'bench/orders/failover-ibv-guest.sh'), String(runs)],
  { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20 },
);
const load1 = loadavg();
const line = run.stdout.split('\n').find((l) => l.startsWith('{'));
const result = line === undefined ? undefined : (JSON.parse(line) as { times?: number[]; error?: string });
if (run.status !== 0 || result?.times === undefined) {
  process.stderr.write(`failover-ibv: the guest run failed (${run.status}): ${result?.error ?? ''}\n${run.stderr.slice(-4000)}\n`);
  process.exit(1);
}
const times = result.times;
const sorted = [...times].sort((a, b) => a - b);
const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
process.stdout.write(
  `\nFailover on ibv (rxe, TCG guest): link cut -> the next order's Ack on the other device pair, ${times.length} run(s); load average before ${load(load0)}, after ${load(load1)}\n` +
    `${'runs'.padEnd(6)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'min ms'.padStart(10)}${'max ms'.padStart(10)}\n` +
    `${'ibv'.padEnd(6)}${percentile(sorted, 50).toFixed(1).padStart(10)}${percentile(sorted, 99).toFixed(1).padStart(10)}` +
    `${sorted[0]!.toFixed(1).padStart(10)}${sorted[sorted.length - 1]!.toFixed(1).padStart(10)}\n`,
);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ runs: times.length, times, load: { before: load0, after: load1 } }, null, 2));
