// The transport benchmark: the soft RoCEv2 backend beside plain UDP on
// loopback, everything in one run, repeated --runs times (default 5; the
// programs of one run are interleaved so drift hits all of them alike), and
// summarised as medians (min–max) and ratios of medians against the aims of
// issue 3. Aims are information, never a failure.
//
//   latency   soft RC SEND ping-pong (bench_soft_rc_pingpong) vs a C busy-poll
//             UDP ping-pong (bench_udp_pingpong), sockperf ping-pong
//             --nonblocked and blocking (one-way doubled to a round trip),
//             and Node dgram (node-pingpong.js); 64 B and 1 KiB
//   tuning    soft RC SEND stream, queue depth 32 vs 128 × 1 vs 8 WRs per post
//             call; and the ping-pong at depth 128 / 8 WRs per call
//   multicast soft UD multicast (bench_soft_ud_mcast) vs a C sendmmsg sender
//             (bench_udp_mcast) and Node dgram (node-mcast.js), same UDP
//             datagram size, 1 and 3 subscriber processes
//
// Servers and subscribers on CPU 0, clients and senders on CPU 1.
//
//   node dist/bench/transport/run.js [--runs 5] [--quick] [--build-dir native/build-bench] [--json out.json]
// The native programs must be built (bench/run.ts --only transport builds them).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { table } from '../feed/report.js';

type Row = Record<string, number | string>;

const root = fileURLToPath(new URL('../../../', import.meta.url));
const args = process.argv.slice(2);
function opt(name: string, def: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? (args[i + 1] as string) : def;
}
const quick = args.includes('--quick');
const runs = quick ? 1 : Number(opt('runs', '5'));
const buildDir = path.resolve(root, opt('build-dir', 'native/build-bench'));
const jsonOut = opt('json', '');
const benchBin = (name: string): string => path.join(buildDir, 'bench', name);
const distDir = path.join(root, 'dist/bench/transport');

// Lengths: full / quick.
const L = {
  ppIters: quick ? 3000 : 100000,
  ppWarmup: quick ? 500 : 10000,
  ppMaxSeconds: quick ? 2 : 6, // caps a ping-pong on a loaded machine (samples = what fitted)
  nodeIters: quick ? 2000 : 30000,
  nodeWarmup: quick ? 500 : 5000,
  sockperfSeconds: quick ? 1 : 3,
  streamSeconds: quick ? 0.3 : 1.5,
  mcastSeconds: quick ? 0.3 : 2,
};
const SERVER_CPU = '0';
const CLIENT_CPU = '1';

for (const b of ['bench_soft_rc_pingpong', 'bench_soft_ud_mcast', 'bench_udp_pingpong', 'bench_udp_mcast']) {
  if (!existsSync(benchBin(b))) {
    process.stderr.write(`transport: ${benchBin(b)} is missing; build with -DQPGATE_BUILD_BENCH=ON (npm run bench -- --only transport)\n`);
    process.exit(2);
  }
}
if (spawnSync('sockperf', ['--version'], { encoding: 'utf8' }).error) {
  process.stderr.write('transport: sockperf is not installed (apt-get install sockperf); its rows are skipped\n');
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// Runs a program (under taskset when cpu is given) and returns its RESULT json.
function runResult(label: string, command: string, argv: string[], cpu?: string): Row {
  const [cmd, full] = cpu !== undefined ? ['taskset', ['-c', cpu, command, ...argv]] : [command, argv];
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = spawnSync(cmd, full as string[], { encoding: 'utf8', timeout: 180_000 });
    const m = /^RESULT (\{.*\})$/m.exec(r.stdout ?? '');
    if (r.status === 0 && m) return JSON.parse(m[1] as string) as Row;
    process.stderr.write(`transport: ${label} failed (exit ${r.status ?? r.signal}) attempt ${attempt + 1}\n${r.stderr ?? ''}`);
  }
  throw new Error(`transport: ${label} failed twice`);
}

// sockperf: server on CPU 0, ping-pong client on CPU 1; percentiles are
// one-way (RTT/2), doubled here to a round trip.
let sockperfPort = 20000 + (process.pid % 20000);
function sockperf(size: number, nonblocked: boolean): Row | undefined {
  const port = String(sockperfPort++);
  const nb = nonblocked ? ['--nonblocked'] : [];
  let server: ChildProcess;
  try {
    server = spawn('taskset', ['-c', SERVER_CPU, 'sockperf', 'server', '-i', '127.0.0.2', '-p', port, ...nb], {
      stdio: 'ignore',
    });
  } catch {
    return undefined;
  }
  sleepMs(300);
  const r = spawnSync(
    'taskset',
    ['-c', CLIENT_CPU, 'sockperf', 'ping-pong', '-i', '127.0.0.2', '-p', port, '-t', String(L.sockperfSeconds), '-m', String(size), ...nb],
    { encoding: 'utf8', timeout: 120_000 },
  );
  server.kill('SIGINT');
  sleepMs(100);
  if (server.exitCode === null) server.kill('SIGKILL');
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const pct = (p: string): number => {
    const m = new RegExp(`percentile ${p.replace('.', '\\.')} =\\s*([\\d.]+)`).exec(out);
    return m ? 2 * Number(m[1]) : NaN;
  };
  const max = /<MAX> observation =\s*([\d.]+)/.exec(out);
  const obs = /\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+)/.exec(out);
  if (!max) {
    process.stderr.write(`transport: sockperf ping-pong ${size} failed:\n${out}\n`);
    return undefined;
  }
  return {
    bench: nonblocked ? 'sockperf_nonblocked' : 'sockperf_blocking',
    size,
    p50: pct('50.000'),
    p99: pct('99.000'),
    p999: pct('99.900'),
    max: 2 * Number(max[1]),
    rtt_per_s: obs ? Number(obs[2]) / Number(obs[1]) : NaN,
  };
}

// ---------------------------------------------------------------- one run
const results = new Map<string, Row[]>();
function keep(key: string, row: Row | undefined): void {
  if (!row) return;
  const list = results.get(key) ?? [];
  list.push(row);
  results.set(key, list);
}

const SIZES = [64, 1024];
const MC_SUBS = [1, 3];
const pp = (size: number): string[] => [
  '--size', String(size), '--iters', String(L.ppIters), '--warmup', String(L.ppWarmup), '--max-seconds', String(L.ppMaxSeconds),
];

const started = Date.now();
const load0 = loadavg();
for (let run = 0; run < runs; run++) {
  process.stdout.write(`transport: run ${run + 1}/${runs} (load ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n`);
  for (const size of SIZES) {
    keep(`soft_rc ${size}`, runResult(`soft RC ${size}`, benchBin('bench_soft_rc_pingpong'), pp(size)));
    // What qpgate's sessions between soft ends run: AckReq to the window, the peer's ACK hold (docs/protocol.md).
    keep(
      `soft_rc_window ${size}`,
      runResult(`soft RC ${size} window`, benchBin('bench_soft_rc_pingpong'), [...pp(size), '--ack-requests', 'window', '--depth', '256']),
    );
    keep(`c_spin ${size}`, runResult(`C UDP ${size}`, benchBin('bench_udp_pingpong'), [...pp(size), '--wait', 'spin']));
    keep(`sockperf_nb ${size}`, sockperf(size, true));
    keep(`sockperf_block ${size}`, sockperf(size, false));
    keep(
      `node ${size}`,
      runResult(
        `Node dgram ${size}`,
        process.execPath,
        [path.join(distDir, 'node-pingpong.js'), '--size', String(size), '--iters', String(L.nodeIters), '--warmup', String(L.nodeWarmup), '--server-cpu', SERVER_CPU],
        CLIENT_CPU,
      ),
    );
  }
  // Tuning: queue depth × WRs per post call.
  for (const [depth, batch] of [[32, 1], [32, 8], [128, 1], [128, 8]] as const) {
    keep(
      `stream ${depth} ${batch}`,
      runResult(`soft RC stream d${depth} b${batch}`, benchBin('bench_soft_rc_pingpong'), [
        '--mode', 'stream', '--size', '64', '--seconds', String(L.streamSeconds), '--depth', String(depth), '--batch', String(batch),
      ]),
    );
  }
  keep(`pp_tuned 64`, runResult('soft RC 64 d128 b8', benchBin('bench_soft_rc_pingpong'), [...pp(64), '--depth', '128', '--batch', '8']));
  // Multicast.
  for (const size of SIZES) {
    const datagram = size + 24; // BTH 12 + DETH 8 + ICRC 4: the soft device's UDP payload
    for (const subs of MC_SUBS) {
      const common = ['--subs', String(subs), '--seconds', String(L.mcastSeconds), '--sub-cpu', SERVER_CPU];
      keep(
        `mc_soft ${size} ${subs}`,
        runResult(`soft UD mcast ${size}x${subs}`, benchBin('bench_soft_ud_mcast'), [...common, '--size', String(size), '--sender-cpu', CLIENT_CPU]),
      );
      keep(
        `mc_c ${size} ${subs}`,
        runResult(`C sendmmsg mcast ${size}x${subs}`, benchBin('bench_udp_mcast'), [...common, '--datagram', String(datagram), '--sender-cpu', CLIENT_CPU]),
      );
      keep(
        `mc_node ${size} ${subs}`,
        runResult(
          `Node mcast ${size}x${subs}`,
          process.execPath,
          [path.join(distDir, 'node-mcast.js'), ...common, '--datagram', String(datagram), '--port', String(24791 + run)],
          CLIENT_CPU,
        ),
      );
    }
  }
}
const load1 = loadavg();

// ---------------------------------------------------------------- summary
function med(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
function values(key: string, field: string): number[] {
  return (results.get(key) ?? []).map((r) => Number(r[field]));
}
function median(key: string, field: string): number {
  return med(values(key, field));
}
function fmt(x: number): string {
  if (!Number.isFinite(x)) return '-';
  if (x >= 100000) return `${(x / 1000).toFixed(0)}k`;
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(2);
}
function cell(key: string, field: string): string {
  const v = values(key, field).filter((x) => Number.isFinite(x));
  if (v.length === 0) return '-';
  const m = fmt(med(v));
  return v.length === 1 ? m : `${m} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})`;
}
function pct(x: number): string {
  return Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '-';
}

process.stdout.write(
  `\ntransport: ${runs} run(s) in ${((Date.now() - started) / 1000).toFixed(0)} s; medians (min–max) over runs; ` +
    `servers/subscribers on CPU ${SERVER_CPU}, clients/senders on CPU ${CLIENT_CPU}; ` +
    `load average before ${load0.map((x) => x.toFixed(2)).join(' ')}, after ${load1.map((x) => x.toFixed(2)).join(' ')}\n`,
);

const latRows: string[][] = [];
const latNames: [string, string][] = [
  ['soft_rc', 'soft RC SEND, busy-poll do_work'],
  ['soft_rc_window', "same, --ack-requests window (the peer's ACK hold)"],
  ['c_spin', 'C UDP ping-pong, busy-poll'],
  ['sockperf_nb', 'sockperf --nonblocked, one-way x2'],
  ['sockperf_block', 'sockperf blocking, one-way x2'],
  ['node', 'Node dgram'],
];
for (const size of SIZES) {
  for (const [k, what] of latNames) {
    const key = `${k} ${size}`;
    if (!results.has(key)) continue;
    latRows.push([k, String(size), cell(key, 'p50'), cell(key, 'p99'), cell(key, 'p999'), cell(key, 'max'), cell(key, 'rtt_per_s'), what]);
  }
}
table('Ping-pong round trip on loopback (µs)', ['impl', 'bytes', 'p50', 'p99', 'p99.9', 'max', 'RTT/s', 'what'], latRows);

const base = median('stream 32 1', 'msgs_per_s');
const tuneRows: string[][] = [];
for (const [depth, batch] of [[32, 1], [32, 8], [128, 1], [128, 8]] as const) {
  const key = `stream ${depth} ${batch}`;
  tuneRows.push([
    'stream', String(depth), String(batch), cell(key, 'msgs_per_s'), fmt(median(key, 'msgs_per_s') / base),
    fmt(median(key, 'retransmitted') + median(key, 'rnr_naks_rcvd')),
  ]);
}
tuneRows.push(['pingpong', '32', '1', `p50 ${cell('soft_rc 64', 'p50')} µs`, '1.00', '-']);
tuneRows.push(['pingpong', '128', '8', `p50 ${cell('pp_tuned 64', 'p50')} µs`, fmt(median('pp_tuned 64', 'p50') / median('soft_rc 64', 'p50')), '-']);
table('Soft RC SEND tuning, 64 B (stream: msgs/s with up to <depth> outstanding; ratio vs depth 32 x 1 WR/call)', ['mode', 'depth', 'wrs/call', 'result', 'ratio', 'retx+rnr'], tuneRows);

const mcRows: string[][] = [];
for (const size of SIZES) {
  for (const subs of MC_SUBS) {
    for (const [k, what] of [['mc_soft', 'soft UD, post 8/call'], ['mc_c', 'C sendmmsg x32'], ['mc_node', 'Node dgram']] as const) {
      const key = `${k} ${size} ${subs}`;
      mcRows.push([
        k, String(size), String(size + 24), String(subs), cell(key, 'sent_per_s'), cell(key, 'recv_per_s_per_sub'),
        pct(median(key, 'loss_mean')), pct(Math.max(...values(key, 'loss_max'))), what,
      ]);
    }
  }
}
table('Multicast on loopback (datagrams/s; 1 message per datagram)', ['impl', 'msg', 'datagram', 'subs', 'sent/s', 'recv/s per sub', 'loss med', 'loss max', 'what'], mcRows);

const aimRows: string[][] = [];
for (const size of SIZES) {
  const soft = median(`soft_rc ${size}`, 'p50');
  const c = median(`c_spin ${size}`, 'p50');
  const sp = median(`sockperf_nb ${size}`, 'p50');
  const r1 = soft / c;
  aimRows.push([`RC RTT p50 ${size} B / C busy-poll UDP RTT p50`, fmt(r1), '<= 2', r1 <= 2 ? 'PASS' : 'MISS']);
  const r2 = soft / sp;
  aimRows.push([`RC RTT p50 ${size} B / sockperf --nonblocked 2x one-way p50`, fmt(r2), '<= 2', Number.isFinite(r2) ? (r2 <= 2 ? 'PASS' : 'MISS') : '-']);
  const rn = median(`node ${size}`, 'p50') / soft;
  aimRows.push([`Node dgram RTT p50 ${size} B / RC RTT p50`, fmt(rn), 'info', '-']);
  const rw = median(`soft_rc_window ${size}`, 'p50') / c;
  aimRows.push([`RC RTT p50 ${size} B, window / C busy-poll UDP RTT p50 (issue 14)`, fmt(rw), '<= 1.5', rw <= 1.5 ? 'PASS' : 'MISS']);
}
for (const size of SIZES) {
  for (const subs of MC_SUBS) {
    const r = median(`mc_soft ${size} ${subs}`, 'sent_per_s') / median(`mc_c ${size} ${subs}`, 'sent_per_s');
    aimRows.push([`UD mcast ${size} B x ${subs} sub: soft sent/s / C sendmmsg sent/s`, fmt(r), '>= 0.9', r >= 0.9 ? 'PASS' : 'MISS']);
    const rn = median(`mc_soft ${size} ${subs}`, 'sent_per_s') / median(`mc_node ${size} ${subs}`, 'sent_per_s');
    aimRows.push([`UD mcast ${size} B x ${subs} sub: soft sent/s / Node dgram sent/s`, fmt(rn), 'info', '-']);
  }
}
table('Aims (ratios of medians; information, not a test)', ['ratio', 'measured', 'aim', 'verdict'], aimRows);

if (jsonOut) {
  writeFileSync(jsonOut, JSON.stringify({ runs, quick, load0, load1, results: Object.fromEntries(results) }, null, 1));
  process.stdout.write(`\ntransport: raw results in ${jsonOut}\n`);
}
