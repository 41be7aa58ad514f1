// The TS API's order round trips beside plain Node (issue 14 item 6), all in
// one run, repeated --runs times (default 5, interleaved), as medians
// (min–max) and ratios of medians against the aims (information,
// never a failure):
//
//   ts_order       OrderClient.newOrder() -> Ack against qpgate's gateway
//                  (ts-clients.ts), gateway engine at its default idle
//                  strategy; and again with engine.idleStrategy=spin
//   ts_risk        RiskClient.fetchAdd() (ATOMIC_FETCH_AND_ADD) -> old value
//   node_tcp       node-tcp-orders.js: a Node `net` gateway + client doing the
//                  same job (decode, checks, book, journal write, Ack)
//   node_echo      node-tcp-echo.js: a bare Node TCP echo of 32 bytes
//
// Gateways / servers on CPU 0, clients on CPU 1.
//   npm run bench -- --only api
//   node dist/bench/orders/api.js [--runs 5] [--quick] [--json out.json]
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runResult } from '../common/programs.js';
import { Results, fmt, parseBenchArgs, ratioVerdict, table, type Row } from '../feed/report.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const { quick, runs, jsonOut } = parseBenchArgs(process.argv.slice(2), root);
const script = (name: string): string => path.join(root, 'dist/bench/orders', name);
const SERVER_CPU = '0';
const CLIENT_CPU = '1';
const lengths = quick ? ['--iters', '1000', '--warmup', '200', '--max-seconds', '2'] : ['--iters', '20000', '--warmup', '2000', '--max-seconds', '10'];

const run = (label: string, name: string, argv: string[]): Row | undefined =>
  runResult('api', label, process.execPath, [script(name), '--server-cpu', SERVER_CPU, ...lengths, ...argv], { cpu: CLIENT_CPU });

const res = new Results();
const load0 = loadavg();
const started = Date.now();
for (let r = 0; r < runs; r++) {
  process.stdout.write(`api: run ${r + 1}/${runs} (load ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n`);
  res.keep('ts order', run('TS OrderClient', 'ts-clients.js', ['--client', 'order']));
  res.keep('ts order spin', run('TS OrderClient, gateway spin', 'ts-clients.js', ['--client', 'order', '--idle', 'spin']));
  res.keep('ts risk', run('TS RiskClient', 'ts-clients.js', ['--client', 'risk']));
  res.keep('node tcp', run('Node TCP gateway + client', 'node-tcp-orders.js', ['--sessions', '1']));
  res.keep('node echo', run('bare Node TCP echo', 'node-tcp-echo.js', []));
}
const load1 = loadavg();
const loadText = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
process.stdout.write(
  `\napi: ${runs} run(s) in ${((Date.now() - started) / 1000).toFixed(0)} s; medians (min–max) over runs; ` +
    `gateways and servers on CPU ${SERVER_CPU}, clients on CPU ${CLIENT_CPU}; load average before ${loadText(load0)}, after ${loadText(load1)}\n`,
);

const rows: Array<[string, string, string]> = [
  ['ts order', 'ts_order', "OrderClient.newOrder -> Ack, qpgate gateway (engine idle default), journal 'none'"],
  ['ts order spin', 'ts_order_spin', 'same, gateway engine.idleStrategy=spin'],
  ['ts risk', 'ts_risk', 'RiskClient.fetchAdd (ATOMIC_FETCH_AND_ADD) -> old value'],
  ['node tcp', 'node_tcp', 'Node net gateway + client, same job'],
  ['node echo', 'node_echo', 'bare Node TCP echo, 32 B'],
];
table(
  'TS API round trips on loopback, one in flight (µs; ops/s = 1 / mean round trip)',
  ['impl', 'p50', 'p99', 'p99.9', 'ops/s', 'what'],
  rows.map(([key, impl, what]) => [impl, res.cell(key, 'p50'), res.cell(key, 'p99'), res.cell(key, 'p999'), res.cell(key, 'orders_per_s'), what]),
);

const ratio = (a: string, b: string, field: string): number => res.median(a, field) / res.median(b, field);
const aims: string[][] = [];
const aim = (name: string, value: number, text: string, ok: (x: number) => boolean): void => {
  aims.push([name, fmt(value), text, ratioVerdict(value, ok)]);
};
aim('OrderClient p50 / Node TCP gateway + client p50', ratio('ts order', 'node tcp', 'p50'), '<= 0.5', (x) => x <= 0.5);
aim('OrderClient p50 / bare Node TCP echo p50', ratio('ts order', 'node echo', 'p50'), '<= 1.0', (x) => x <= 1.0);
aim('OrderClient p99 / Node TCP gateway + client p99', ratio('ts order', 'node tcp', 'p99'), '<= 0.5', (x) => x <= 0.5);
aims.push(['OrderClient p50, gateway spin / Node TCP p50', fmt(ratio('ts order spin', 'node tcp', 'p50')), 'info', '-']);
aims.push(['RiskClient atomic p50 / bare Node TCP echo p50', fmt(ratio('ts risk', 'node echo', 'p50')), 'info', '-']);
table('Aims of issue 14 (ratios of medians; information, not a test)', ['ratio', 'measured', 'aim', 'verdict'], aims);

if (jsonOut) {
  writeFileSync(jsonOut, JSON.stringify({ runs, quick, load0, load1, results: res.raw() }, null, 1));
  process.stdout.write(`\napi: raw results in ${jsonOut}\n`);
}
