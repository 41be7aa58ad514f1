// Failover time of a trading session over two links (automatic path
// migration, docs/protocol.md §1.10): the gateway (`qpgate serve`, soft
// backend, backend.address + backend.alternateAddress) and an OrderClient
// with two addresses in two network namespaces joined by two veth pairs
// (test/support/two-links.ts). Each run opens a new session (both paths
// armed), trades 10 orders on the primary link, takes that link down and
// times the next order from the moment the link is down to its Ack, which
// comes over the alternate path: the primary path's retries running out
// (retry_cnt 7 x the 67 ms ACK timeout), the migration and the resend. The
// link comes up again before the next run. p50/p99 over the runs, with the
// load average (measured, never asserted).
//   npm run bench -- --only failover        (root: it makes namespaces)
//   node dist/bench/orders/failover.js [--runs 20] [--quick] [--json out.json]
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseBenchArgs } from '../feed/report.js';
import { makeTwoLinks, twoLinksUnavailable, type TwoLinks } from '../../test/support/two-links.js';
import { FAILOVER_CLIENT, sessionsOf, startTwoLinkGateway } from '../../test/orders/two-link-gateway.js';
import { childLines } from '../../test/support/child-lines.js';
import { TOKENS } from '../../test/orders/support.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const args = process.argv.slice(2);
const parsed = parseBenchArgs(args, root);
const { quick, jsonOut } = parsed;
const runs = quick || args.includes('--runs') ? parsed.runs : 20;

/** One failover: a new session, 10 orders on the primary link, the link down, the next order's time to its Ack (ms). */
async function failover(links: TwoLinks, port: number, run: number): Promise<number> {
  const client = links.spawnIn(links.client, [process.execPath, FAILOVER_CLIENT, JSON.stringify({
    url: `http://${links.primary.gatewayAddress}:${port}`, token: TOKENS.desk, name: `failover-${run}`,
    address: links.primary.clientAddress, alternateAddress: links.alternate.clientAddress, before: 10, after: 2,
  })], { stdio: ['pipe', 'pipe', 'inherit'] });
  const next = childLines(client, () => `failover: run ${run}`);
  const primary = await next();
  links.down(links.primary);
  client.stdin!.write('down\n');
  const done = await next();
  const session = sessionsOf(links, port).find((s) => s['id'] === primary['session']);
  client.stdin!.write('close\n');
  await new Promise((r) => client.once('exit', r));
  links.up(links.primary);
  if (done['stats'].reconnects !== 0 || session?.['pathMigrations'] !== 1 || session['activePath'] !== 'alternate') {
    throw new Error(`failover: run ${run}: the session did not migrate once (reconnects ${done['stats'].reconnects}, session ${JSON.stringify(session)})`);
  }
  return done['firstAnswerMs'] as number;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;

const unavailable = twoLinksUnavailable();
if (unavailable !== undefined) {
  process.stdout.write(`failover: skipped: ${unavailable}\n`);
  process.exit(0);
}
const links = makeTwoLinks(9);
const load0 = loadavg();
const times: number[] = [];
try {
  const { gw, port } = await startTwoLinkGateway(links);
  try {
    for (let r = 1; r <= runs; r++) {
      times.push(await failover(links, port, r));
      process.stdout.write(`failover: run ${r}/${runs}: ${times[times.length - 1]!.toFixed(1)} ms (load ${loadavg()[0]!.toFixed(2)})\n`);
    }
  } finally {
    gw.child.kill('SIGTERM');
    await gw.exited;
  }
} finally {
  links.close();
}
const load1 = loadavg();
const sorted = [...times].sort((a, b) => a - b);
const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
process.stdout.write(
  `\nFailover: primary link down -> first Ack on the alternate path, ${runs} run(s); load average before ${load(load0)}, after ${load(load1)}\n` +
    `${'runs'.padEnd(6)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'min ms'.padStart(10)}${'max ms'.padStart(10)}\n` +
    `${'apm'.padEnd(6)}${percentile(sorted, 50).toFixed(1).padStart(10)}${percentile(sorted, 99).toFixed(1).padStart(10)}` +
    `${sorted[0]!.toFixed(1).padStart(10)}${sorted[sorted.length - 1]!.toFixed(1).padStart(10)}\n`,
);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ runs, times, load: { before: load0, after: load1 } }, null, 2));
