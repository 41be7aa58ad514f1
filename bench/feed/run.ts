// The feed benchmark (issue #4), each path beside its anchor in one run:
//
//   native   the engine's own path: bench_feed_native (qpgate::feed Publisher
//            -> Subscriber on soft devices, both busy-polling, no JS) at
//            offered rates of 10k, 100k and 1M ticks/s and unpaced (max);
//            anchors: bench_udp_mcast (C sendmmsg x32 of the same full
//            frame-sized datagrams, recvmmsg subscriber) for ticks/s, and
//            sockperf --nonblocked multicast ping-pong (one-way) for p50.
//
//   ts       the public TS API end to end (bench/feed/ts-path.ts --impl qpgate:
//            encodeMessage -> createPublisher().publish() -> engine -> soft
//            devices -> subscribe() onMessage -> decode()) vs the same job in
//            Node dgram (--impl dgram: encodeMessage, FramePacker, dgram
//            multicast, parseFrame, decodeMessage), one process each, at the
//            same offered rates; and --impl qpgate-batch, the batch APIs
//            (MessageBatch + publishBatch() -> subscribe() onBatch -> decode(i));
//            each qpgate path both with the engine on its own thread and
//            driven from the JS thread (--engine driven: no second thread).
//
// Latency is from each tick's scheduled send time (a paced sender; no
// coordinated omission) to the subscriber reading it, CLOCK_MONOTONIC in
// both processes; recorded in qpgate::metrics::LatencyHistogram. The time
// from the publish() call is shown beside it: the scheduled-send figure
// minus it is the sender's own lag. sockperf's ping-pong measures one
// message at a time from its actual send, so a stall of either process
// costs it one sample where a paced sender has every tick due in the stall
// wait: compare its mean as well as its p50 on a loaded machine.
// Subscribers on CPU 0, senders on CPU 1.
//
//   node dist/bench/feed/run.js [--runs 5] [--quick] [--build-dir native/build-bench] [--json out.json]
// The native program must be built (bench/run.ts --only feed builds it).
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { haveSockperf, runResult, sockperfPingPong } from '../common/programs.js';
import { Results, fmt, parseBenchArgs, ratioVerdict, table, type Row } from './report.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const { quick, runs, buildDir, jsonOut } = parseBenchArgs(process.argv.slice(2), root);
const benchBin = (name: string): string => path.join(buildDir, 'bench', name);
const tsPath = path.join(root, 'dist/bench/feed/ts-path.js');
// Path 2's rows: the message API, the batch API (publishBatch + onBatch), Node dgram.
// Each TS path: its --impl and --engine (the qpgate ones on an engine thread, and driven from the JS thread).
const TS_IMPLS = ['qpgate', 'qpgate-batch', 'qpgate driven', 'qpgate-batch driven', 'dgram'] as const;
const tsArgs = (label: string): string[] => {
  const [impl, mode] = label.split(' ');
  return ['--impl', impl!, '--engine', mode ?? 'thread'];
};

const L = {
  seconds: quick ? 0.2 : 1,
  warmup: quick ? 0.05 : 0.2,
  sockperfSeconds: 1, // sockperf takes whole seconds
};
const RATES = [10_000, 100_000, 1_000_000];
const SUB_CPU = '0';
const SENDER_CPU = '1';
const BODY = 36; // tick body bytes: 12 + 36 = 48-byte messages, 20 per 1024-byte frame
const TICK_BYTES = 12 + BODY;
const FULL_FRAME_TICKS = Math.floor((1024 - 32) / TICK_BYTES);
const FULL_DATAGRAM = 32 + FULL_FRAME_TICKS * TICK_BYTES + 24; // frame + BTH 12 + DETH 8 + ICRC 4
const ONE_TICK_DATAGRAM = 32 + TICK_BYTES + 24;

for (const b of ['bench_feed_native', 'bench_udp_mcast']) {
  if (!existsSync(benchBin(b))) {
    process.stderr.write(`feed: ${benchBin(b)} is missing; build with -DQPGATE_BUILD_BENCH=ON (npm run bench -- --only feed)\n`);
    process.exit(2);
  }
}
const sockperfInstalled = haveSockperf();
if (!sockperfInstalled) process.stderr.write('feed: sockperf is not installed (apt-get install sockperf); its rows are skipped\n');

// A sender starved for the whole window measured nothing: no figures, not zeros.
const runFeed = (label: string, command: string, argv: string[]): Row | undefined =>
  runResult('feed', label, command, argv, {
    refuse: (row) => (row.sent === 0 ? 'no tick measured (the sender did not run inside the window)' : undefined),
  });

// sockperf multicast ping-pong, both ends --nonblocked (busy-polling
// recvfrom); sockperf reports one-way latency (RTT/2), kept as is.
function sockperfMulticast(size: number): Row | undefined {
  const mc = ['-i', '239.78.9.1', '--mc-rx-if', '127.0.0.1', '--mc-tx-if', '127.0.0.1', '--mc-loopback-enable', '--nonblocked'];
  const figures = sockperfPingPong('feed', mc, { serverCpu: SUB_CPU, clientCpu: SENDER_CPU, seconds: L.sockperfSeconds, size });
  return figures && { bench: 'sockperf_mc_nonblocked', size, ...figures };
}

// ---------------------------------------------------------------- runs
const res = new Results();
const started = Date.now();
const load0 = loadavg();
const feedArgs = (rate: number, run: number): string[] => [
  '--rate', String(rate), '--seconds', String(L.seconds), '--warmup', String(L.warmup), '--body', String(BODY),
  '--sub-cpu', SUB_CPU, '--sender-cpu', SENDER_CPU, '--group', `239.78.${1 + (run % 200)}.1`,
];
for (let run = 0; run < runs; run++) {
  process.stdout.write(`feed: run ${run + 1}/${runs} (load ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n`);
  for (const rate of RATES) {
    res.keep(`native ${rate}`, runFeed(`feed native ${rate}/s`, benchBin('bench_feed_native'), feedArgs(rate, run)));
  }
  res.keep('native max', runFeed('feed native unpaced', benchBin('bench_feed_native'), feedArgs(0, run)));
  res.keep(
    'c_sendmmsg',
    runFeed('C sendmmsg mcast', benchBin('bench_udp_mcast'), [
      '--datagram', String(FULL_DATAGRAM), '--seconds', String(L.seconds), '--sub-cpu', SUB_CPU, '--sender-cpu', SENDER_CPU,
      '--port', String(24891 + run),
    ]),
  );
  if (sockperfInstalled) res.keep('sockperf', sockperfMulticast(ONE_TICK_DATAGRAM));
  for (const rate of RATES) {
    for (const impl of TS_IMPLS) {
      res.keep(
        `ts ${impl} ${rate}`,
        // Not pinned: the engine's thread and the JS thread each need a CPU.
        runFeed(`TS ${impl} ${rate}/s`, process.execPath, [
          tsPath, ...tsArgs(impl), '--rate', String(rate), '--seconds', String(L.seconds),
          '--warmup', String(L.warmup), '--group', `239.79.${1 + (run % 200)}.${rate === 10_000 ? 1 : rate === 100_000 ? 2 : 3}`,
          '--port', String(25991 + run), '--pub-addr', `127.79.${1 + (run % 200)}.1`, '--sub-addr', `127.79.${1 + (run % 200)}.2`,
        ]),
      );
    }
  }
}
const load1 = loadavg();

// ---------------------------------------------------------------- summary
const loadText = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
process.stdout.write(
  `\nfeed: ${runs} run(s) in ${((Date.now() - started) / 1000).toFixed(0)} s; medians (min–max) over runs; ` +
    `subscribers on CPU ${SUB_CPU}, senders on CPU ${SENDER_CPU}; clock for send times: CLOCK_MONOTONIC ` +
    `(native: clock_gettime, both processes); load average before ${loadText(load0)}, after ${loadText(load1)}\n`,
);

const nativeRows: string[][] = [];
for (const key of [...RATES.map((r) => `native ${r}`), 'native max']) {
  nativeRows.push([
    key.replace('native ', ''), res.cell(key, 'sent_per_s'), res.cell(key, 'recv_per_s'), res.pct(res.max(key, 'loss')),
    res.cell(key, 'ticks_per_frame'), res.cell(key, 'p50'), res.cell(key, 'p99'), res.cell(key, 'p999'),
    res.cell(key, 'transit_p50'), res.cell(key, 'transit_p99'),
  ]);
}
table(
  `Path 1, native Publisher -> Subscriber (soft devices, busy-poll), ${TICK_BYTES}-byte ticks; ` +
    'latency µs from the scheduled send (p50..p99.9) and from the publish() call (call p50/p99)',
  ['offered/s', 'sent/s', 'received/s', 'loss max', 'ticks/frame', 'p50', 'p99', 'p99.9', 'call p50', 'call p99'],
  nativeRows,
);

const cTicks = (r: Row): number => Number(r.recv_per_s_per_sub) * FULL_FRAME_TICKS;
const anchorRows: string[][] = [
  [
    'C sendmmsg x32 / recvmmsg', `${FULL_DATAGRAM} B datagrams`, res.cell('c_sendmmsg', 'recv_per_s_per_sub'),
    fmt(res.medianOf('c_sendmmsg', cTicks)), res.pct(res.max('c_sendmmsg', 'loss_max')), '-',
  ],
  [
    'sockperf --nonblocked mcast', `${ONE_TICK_DATAGRAM} B, one-way`, '-', '-', '-', res.cell('sockperf', 'p50'),
    res.cell('sockperf', 'p99'), res.cell('sockperf', 'mean'),
  ],
];
table(
  `Anchors (C: ticks/s = datagrams/s x ${FULL_FRAME_TICKS} ticks per full frame)`,
  ['anchor', 'datagram', 'datagrams/s', 'ticks/s', 'loss max', 'p50 µs', 'p99 µs', 'mean µs'],
  anchorRows,
);

const aims: string[][] = [];
const maxLoss = res.max('native max', 'loss');
const tput = res.median('native max', 'recv_per_s') / res.medianOf('c_sendmmsg', cTicks);
aims.push([
  'native unpaced received ticks/s / C sendmmsg ticks/s (zero loss)',
  fmt(tput),
  '>= 0.8',
  maxLoss > 0 ? `MISS (loss ${res.pct(maxLoss)})` : ratioVerdict(tput, (x) => x >= 0.8),
]);
for (const rate of RATES) {
  const r = res.median(`native ${rate}`, 'p50') / res.median('sockperf', 'p50');
  aims.push([
    `native p50 at ${fmt(rate)}/s / sockperf mcast one-way p50`, fmt(r), rate === RATES[0] ? '<= 2' : 'info',
    rate === RATES[0] ? ratioVerdict(r, (x) => x <= 2) : '-',
  ]);
}
table('Aims, path 1 (ratios of medians; information, not a test)', ['ratio', 'measured', 'aim', 'verdict'], aims);

const tsRows: string[][] = [];
for (const rate of RATES) {
  for (const impl of TS_IMPLS) {
    const key = `ts ${impl} ${rate}`;
    tsRows.push([
      impl, String(rate), res.cell(key, 'sent_per_s'), res.cell(key, 'recv_per_s'), res.pct(res.max(key, 'loss')),
      res.cell(key, 'p50'), res.cell(key, 'p99'), res.cell(key, 'p999'),
    ]);
  }
}
table(
  'Path 2, TS API end to end (encode -> publish -> subscribe -> decode) vs Node dgram, one process; latency µs from scheduled send ' +
    '(process.hrtime.bigint = CLOCK_MONOTONIC)',
  ['impl', 'offered/s', 'sent/s', 'received/s', 'loss max', 'p50', 'p99', 'p99.9'],
  tsRows,
);

// A rate is carried when every run lost nothing and received >= 95 % of it.
const carries = (key: string, rate: number): boolean => res.max(key, 'loss') === 0 && res.median(key, 'recv_per_s') >= 0.95 * rate;
const top = RATES[RATES.length - 1] as number;
const tsAims: string[][] = [];
const tsRatio = res.median(`ts qpgate ${top}`, 'recv_per_s') / res.median(`ts dgram ${top}`, 'recv_per_s');
tsAims.push([`TS received ticks/s / dgram received ticks/s at ${fmt(top)}/s offered`, fmt(tsRatio), '>= 2', ratioVerdict(tsRatio, (x) => x >= 2)]);
for (const rate of RATES) {
  const both = carries(`ts qpgate ${rate}`, rate) && carries(`ts dgram ${rate}`, rate);
  const r = res.median(`ts qpgate ${rate}`, 'p99') / res.median(`ts dgram ${rate}`, 'p99');
  tsAims.push([
    `TS p99 / dgram p99 at ${fmt(rate)}/s`, fmt(r), both ? '< 1' : 'info (not carried by both)',
    both ? ratioVerdict(r, (x) => x < 1) : '-',
  ]);
}
table('Aims, path 2 (ratios of medians; information, not a test)', ['ratio', 'measured', 'aim', 'verdict'], tsAims);

if (jsonOut) {
  writeFileSync(jsonOut, JSON.stringify({ runs, quick, load0, load1, results: res.raw() }, null, 1));
  process.stdout.write(`\nfeed: raw results in ${jsonOut}\n`);
}
