// The order-entry benchmark (issue 5): order -> Ack round trip through the
// product's order path, beside its anchors, all in one run, repeated --runs
// times (default 5; the programs of one run are interleaved so drift hits
// them alike), summarised as medians (min–max) and ratios of medians against
// the aims. Aims are information, never a failure.
//
//   qpgate     bench_orders_rc: an Engine (spin) with the soft device agent and
//              the order agent, one OrderService, journal 'none' (the
//              default) — and one ping-pong row with 'interval' (fdatasync
//              per duty cycle); ONE native client with 1 or 8 RC sessions;
//              ping-pong (one order in flight) and throughput (a window of
//              orders in flight across the sessions)
//   c_spin     bench_udp_pingpong --wait spin: a C busy-poll UDP ping-pong
//   soft_rc    bench_soft_rc_pingpong: the bare soft RC SEND ping-pong (64 B, no
//              engine, no order service): the transport's own share
//   sockperf   sockperf ping-pong --nonblocked (one-way doubled to a round trip)
//   node_tcp   node-tcp-orders.js: a plain Node `net` gateway doing the same
//              job (decode, checks, book, journal write(2) without fsync,
//              encoded Ack) and a Node client, 1 and 8 connections
//   in-process bench_orders: the ack path alone on one thread (no transport)
//
// Gateways / servers on CPU 0, clients on CPU 1.
//
//   node dist/bench/orders/run.js [--runs 5] [--quick] [--build-dir native/build-bench] [--json out.json]
// The native programs must be built (bench/run.ts --only orders builds them).
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { haveSockperf, runResult, sockperfPingPong } from '../common/programs.js';
import { Results, fmt, parseBenchArgs, ratioVerdict, table, type Row } from '../feed/report.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const { quick, runs, buildDir, jsonOut } = parseBenchArgs(process.argv.slice(2), root);
const benchBin = (name: string): string => path.join(buildDir, 'bench', name);
const nodeTcp = path.join(root, 'dist/bench/orders/node-tcp-orders.js');

// Lengths: full / quick.
const L = {
  ppIters: quick ? 3000 : 100000,
  ppWarmup: quick ? 500 : 10000,
  ppMaxSeconds: quick ? 2 : 6, // caps a ping-pong on a loaded machine (samples = what fitted)
  syncedIters: quick ? 300 : 3000, // fdatasync per order: milliseconds each on a virtual disk
  nodeIters: quick ? 2000 : 30000,
  nodeWarmup: quick ? 500 : 5000,
  tputSeconds: quick ? 0.3 : 1.5,
  sockperfSeconds: quick ? 1 : 3,
  inProcessRequests: quick ? 20000 : 200000,
};
const SERVER_CPU = '0';
const CLIENT_CPU = '1';
const SIZE = 64; // the UDP anchors' message: a NewOrder is ~25 bytes, its RoCEv2 datagram ~45
const SESSIONS = [1, 8];
const WINDOW = 64; // orders in flight across the sessions in throughput mode

for (const b of ['bench_orders_rc', 'bench_udp_pingpong', 'bench_soft_rc_pingpong', 'bench_orders']) {
  if (!existsSync(benchBin(b))) {
    process.stderr.write(`orders: ${benchBin(b)} is missing; build with -DQPGATE_BUILD_BENCH=ON (npm run bench -- --only orders)\n`);
    process.exit(2);
  }
}
const sockperfInstalled = haveSockperf();
if (!sockperfInstalled) process.stderr.write('orders: sockperf is not installed (apt-get install sockperf); its rows are skipped\n');

const run = (label: string, command: string, argv: string[], cpu?: string): Row | undefined =>
  runResult('orders', label, command, argv, cpu === undefined ? {} : { cpu });

// Ping-pong lengths (bench_orders_rc's default mode is pingpong).
const pingpong = (iters: number, warmup: number): string[] => [
  '--iters', String(iters), '--warmup', String(warmup), '--max-seconds', String(L.ppMaxSeconds),
];
const throughput = ['--mode', 'throughput', '--seconds', String(L.tputSeconds), '--window', String(WINDOW)];

// sockperf --nonblocked unicast ping-pong, one-way doubled to a round trip.
function sockperfRtt(): Row | undefined {
  const f = sockperfPingPong('orders', ['-i', '127.0.0.2', '--nonblocked'], {
    serverCpu: SERVER_CPU, clientCpu: CLIENT_CPU, seconds: L.sockperfSeconds, size: SIZE,
  });
  return f && { bench: 'sockperf_nonblocked', p50: 2 * f.p50, p99: 2 * f.p99, p999: 2 * f.p999, mean: 2 * f.mean };
}

// bench_orders prints lines, not a RESULT: its "no fdatasync, on_message alone" row.
function inProcess(): Row | undefined {
  const r = spawnSync(benchBin('bench_orders'), [String(L.inProcessRequests)], { encoding: 'utf8', timeout: 120_000 });
  const m = /no fdatasync: on_message alone\s+n=\d+\s+p50=\s*(\d+)\s+p99=\s*(\d+)\s+p99\.9=\s*(\d+).*?([\d.]+) req\/s/.exec(r.stdout ?? '');
  if (r.status !== 0 || !m) {
    process.stderr.write(`orders: bench_orders failed (exit ${r.status ?? r.signal}):\n${r.stdout ?? ''}${r.stderr ?? ''}\n`);
    return undefined;
  }
  return { bench: 'in_process', p50: Number(m[1]) / 1000, p99: Number(m[2]) / 1000, p999: Number(m[3]) / 1000, orders_per_s: Number(m[4]) };
}

// ---------------------------------------------------------------- runs
const res = new Results();
const started = Date.now();
const load0 = loadavg();
const pp = pingpong(L.ppIters, L.ppWarmup);
const nodeArgs = (n: number, mode: string[]): string[] => [nodeTcp, '--sessions', String(n), '--server-cpu', SERVER_CPU, ...mode];
const nodePingpong = ['--iters', String(L.nodeIters), '--warmup', String(L.nodeWarmup)];
const nodeThroughput = ['--mode', 'throughput', '--seconds', String(L.tputSeconds), '--window', String(WINDOW)];
for (let r = 0; r < runs; r++) {
  process.stdout.write(`orders: run ${r + 1}/${runs} (load ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n`);
  res.keep('c_spin', run('C UDP busy-poll', benchBin('bench_udp_pingpong'), [...pp, '--size', String(SIZE), '--wait', 'spin']));
  if (sockperfInstalled) res.keep('sockperf', sockperfRtt());
  res.keep('soft_rc', run('soft RC SEND ping-pong', benchBin('bench_soft_rc_pingpong'), [...pp, '--size', String(SIZE)]));
  for (const n of SESSIONS) {
    const sessions = ['--sessions', String(n)];
    res.keep(`rc pp ${n}`, run(`RC ping-pong ${n} session(s)`, benchBin('bench_orders_rc'), [...pp, ...sessions]));
    res.keep(`rc tput ${n}`, run(`RC throughput ${n} session(s)`, benchBin('bench_orders_rc'), [...throughput, ...sessions]));
  }
  const synced = [...pingpong(L.syncedIters, 50), '--sync', 'interval'];
  res.keep('rc pp 1 interval', run('RC ping-pong, fsync interval', benchBin('bench_orders_rc'), synced));
  for (const n of SESSIONS) {
    res.keep(`node pp ${n}`, run(`Node TCP ping-pong ${n}`, process.execPath, nodeArgs(n, nodePingpong), CLIENT_CPU));
    res.keep(`node tput ${n}`, run(`Node TCP throughput ${n}`, process.execPath, nodeArgs(n, nodeThroughput), CLIENT_CPU));
  }
  res.keep('in_process', inProcess());
}
const load1 = loadavg();

// ---------------------------------------------------------------- summary
const loadText = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
process.stdout.write(
  `\norders: ${runs} run(s) in ${((Date.now() - started) / 1000).toFixed(0)} s; medians (min–max) over runs; ` +
    `gateways and servers on CPU ${SERVER_CPU}, clients on CPU ${CLIENT_CPU}; ` +
    `load average before ${loadText(load0)}, after ${loadText(load1)}\n`,
);

const rows: Array<[string, string, string, string, string]> = [
  ['rc pp 1', 'qpgate_rc', '1', '1', "order -> Ack, engine + order agent, journal 'none'"],
  ['rc pp 8', 'qpgate_rc', '8', '1', 'same, round robin over 8 sessions'],
  ['rc pp 1 interval', 'qpgate_rc', '1', '1', "same, journal 'interval' (fdatasync on the journal's thread)"],
  ['rc tput 1', 'qpgate_rc', '1', String(WINDOW), 'orders in flight: Acks/s, post -> Ack'],
  ['rc tput 8', 'qpgate_rc', '8', String(WINDOW), 'same over 8 sessions'],
  ['c_spin', 'c_spin', '-', '1', `C UDP ping-pong ${SIZE} B, busy-poll`],
  ['sockperf', 'sockperf_nb', '-', '1', `sockperf --nonblocked ${SIZE} B, one-way x2`],
  ['soft_rc', 'soft_rc', '-', '1', `soft RC SEND ping-pong ${SIZE} B, busy-poll, no engine`],
  ['node pp 1', 'node_tcp', '1', '1', 'Node net gateway + client, same job'],
  ['node pp 8', 'node_tcp', '8', '1', 'same, round robin over 8 connections'],
  ['node tput 1', 'node_tcp', '1', String(WINDOW), 'orders in flight: Acks/s, post -> Ack'],
  ['node tput 8', 'node_tcp', '8', String(WINDOW), 'same over 8 connections'],
  ['in_process', 'in_process', '-', '-', 'bench_orders: on_message alone, one thread, no transport'],
];
table(
  'Order -> Ack round trip on loopback (µs; orders/s = Acks per second; ping-pong: one order in flight)',
  ['impl', 'sessions', 'window', 'p50', 'p99', 'p99.9', 'orders/s', 'what'],
  rows.map(([key, impl, sessions, window, what]) => [
    impl, sessions, window, res.cell(key, 'p50'), res.cell(key, 'p99'), res.cell(key, 'p999'), res.cell(key, 'orders_per_s'), what,
  ]),
);

table(
  "Gateway side of the RC rows (the service's own ack latency: receive completion seen -> answer posted, µs), " +
    'and the UDP datagrams the client sent + received per order (SENDs and RC ACKs)',
  ['row', 'gw ack p50', 'gw ack p99', 'journal syncs/order', 'idle cycles %', 'client datagrams/order'],
  ['rc pp 1', 'rc pp 8', 'rc pp 1 interval', 'rc tput 1', 'rc tput 8'].map((key) => [
    key, res.cell(key, 'gw_ack_p50'), res.cell(key, 'gw_ack_p99'),
    fmt(res.medianOf(key, (x) => Number(x.journal_syncs) / Number(x.journal_records))),
    fmt(res.medianOf(key, (x) => (100 * Number(x.idle_cycles)) / Number(x.duty_cycles))),
    fmt(res.medianOf(key, (x) => (Number(x.client_sent_pkts) + Number(x.client_rcvd_pkts)) / Number(x.journal_records))),
  ]),
);

const aims: string[][] = [];
const ratio = (a: string, af: string, b: string, bf: string): number => res.median(a, af) / res.median(b, bf);
// The three aims are on the 1-session rows; the 8-session ones are information.
const aim = (name: string, value: number, headline: boolean, text: string, ok: (x: number) => boolean): void => {
  aims.push([name, fmt(value), headline ? text : 'info', headline ? ratioVerdict(value, ok) : '-']);
};
for (const n of SESSIONS) {
  const key = `rc pp ${n}`;
  const headline = n === 1;
  const p50 = ratio(key, 'p50', 'c_spin', 'p50');
  const p99 = ratio(key, 'p99', 'c_spin', 'p99');
  aim(`RC order->Ack p50, ${n} session(s) / C busy-poll UDP RTT p50`, p50, headline, '<= 2.5', (x) => x <= 2.5);
  aim(`RC order->Ack p99, ${n} session(s) / C busy-poll UDP RTT p99`, p99, headline, '<= 3', (x) => x <= 3);
  aim(`Node TCP order->Ack p50 / RC p50, ${n} session(s)`, ratio(`node pp ${n}`, 'p50', key, 'p50'), headline, '>= 8', (x) => x >= 8);
}
const info = (name: string, value: number): void => aim(name, value, false, '', () => true);
info('RC order->Ack p50, 1 session / sockperf --nonblocked RTT p50', ratio('rc pp 1', 'p50', 'sockperf', 'p50'));
info('soft RC SEND ping-pong p50 / C busy-poll UDP RTT p50 (the transport)', ratio('soft_rc', 'p50', 'c_spin', 'p50'));
info('RC order->Ack p50, 1 session / soft RC SEND ping-pong p50', ratio('rc pp 1', 'p50', 'soft_rc', 'p50'));
for (const n of SESSIONS) {
  const tput = ratio(`rc tput ${n}`, 'orders_per_s', `node tput ${n}`, 'orders_per_s');
  info(`RC orders/s / Node TCP orders/s, ${n} session(s), window ${WINDOW}`, tput);
}
table('Aims of issue 5 (ratios of medians; information, not a test)', ['ratio', 'measured', 'aim', 'verdict'], aims);

if (jsonOut) {
  writeFileSync(jsonOut, JSON.stringify({ runs, quick, load0, load1, results: res.raw() }, null, 1));
  process.stdout.write(`\norders: raw results in ${jsonOut}\n`);
}
