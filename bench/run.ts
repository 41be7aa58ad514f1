// Runs qpgate's benchmarks, each beside the anchor it is compared with, in
// one run (timings on a shared VM drift; only ratios measured together mean
// anything):
//   icrc   the ICRC with ISA-L vs zlib (native, Release build in native/build-bench)
//   ring   JS -> engine -> JS round trip through the SPSC rings, backoff vs spin
//   transport  soft RoCEv2 RC ping-pong / UD multicast vs C UDP, sockperf and
//              Node dgram on loopback (bench/transport/run.ts; 5 runs, --quick 1)
//   rdma       perftest's ib_send/write/atomic_lat vs the ibv backend on rxe in
//              the rdma-vm guest (bench/rdma/run.ts)
//
//   feed       the feed (issue #4): native Publisher -> Subscriber vs C sendmmsg and
//              sockperf multicast; the TS API vs Node dgram (bench/feed/run.ts; 5 runs, --quick 1)
//   orders     order -> Ack over RC through the engine's order agent, 1 and 8
//              sessions, vs a C busy-poll UDP ping-pong, sockperf and a Node TCP
//              gateway doing the same job (bench/orders/run.ts; 5 runs, --quick 1)
//   api        the TS OrderClient and RiskClient against qpgate's gateway vs a
//              Node TCP gateway + client and a bare Node TCP echo (bench/orders/api.ts)
//   failover   a trading session's failover to its alternate path when the primary
//              link goes down: p50/p99 over 20 runs (bench/orders/failover.ts; root)
//   failover-ibv  the same on the kernel's rxe, which has no APM: the client fails
//              over to a second device pair (bench/orders/failover-ibv.ts; the
//              rdma-vm guest)
//   slo        the embedded default as `npm start` runs it, judged by its own
//              tick-publish-p99 objective, with a parked engine lent to the JS
//              thread and always woken (bench/gateway/default-slo.ts; 3 x 75 s, --quick 6 s)
//   machine    how long the host takes a CPU from a thread that never sleeps, one
//              spinner per CPU (bench/machine/bench_vcpu_gaps.cc; 20 s, --quick 1 s):
//              read it before trusting a p99 measured with every CPU busy
//
//   npm run bench [-- --quick] [-- --only icrc|ring|transport|rdma|feed|orders|api|failover|failover-ibv|slo|machine]
// --quick shortens every benchmark to a smoke run (the test suite uses it).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined;
const known = new Set(['--quick', '--only', only]);
for (const a of args) {
  if (!known.has(a)) {
    process.stderr.write(`bench: unknown argument ${a}; expected --quick, --only icrc|ring|transport|rdma|feed|orders|api|failover|failover-ibv|slo|machine\n`);
    process.exit(2);
  }
}

function step(title: string, command: string, argv: string[], cwd = root): void {
  process.stdout.write(`\n== ${title}\n$ ${[command, ...argv].join(' ')}\n`);
  const r = spawnSync(command, argv, { cwd, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`bench: ${title} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(1);
  }
}

const build = path.join(root, 'native/build-bench');
let configured = false;
function configureNativeBench(): void {
  if (configured) return;
  configured = true;
  step('configure native benchmarks (Release)', 'cmake', [
    '-S', 'native', '-B', build, '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release', '-DQPGATE_BUILD_BENCH=ON',
  ]);
}

if (!only || only === 'machine') {
  configureNativeBench();
  step('build the machine check', 'cmake', ['--build', build, '--target', 'bench_vcpu_gaps']);
  step('CPU time the host takes back: one spinner per CPU', path.join(build, 'bench/bench_vcpu_gaps'), [
    '--seconds', quick ? '1' : '20',
  ]);
}
if (!only || only === 'icrc') {
  configureNativeBench();
  step('build native benchmarks', 'cmake', ['--build', build, '--target', 'bench_icrc']);
  step('ICRC: ISA-L vs zlib', path.join(build, 'bench/bench_icrc'), [quick ? '200' : '20000']);
}
if (!only || only === 'ring') {
  step('JS <-> engine rings: echo round trip', process.execPath, [
    path.join(root, 'dist/bench/ring/echo-rtt.js'),
    '--seconds', quick ? '0.2' : '3',
    '--warmup', quick ? '0.05' : '0.5',
  ]);
}
if (!only || only === 'transport') {
  configureNativeBench();
  step('build transport benchmarks', 'cmake', [
    '--build', build, '--target', 'bench_soft_rc_pingpong', 'bench_soft_ud_mcast', 'bench_udp_pingpong', 'bench_udp_mcast',
  ]);
  step('transport: soft RoCEv2 vs UDP, sockperf and Node dgram on loopback', process.execPath, [
    path.join(root, 'dist/bench/transport/run.js'),
    '--build-dir', build,
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'rdma') {
  configureNativeBench();
  step('build the ibv latency benchmark', 'cmake', ['--build', build, '--target', 'bench_ibv_lat']);
  step('rdma: perftest vs the ibv backend on rxe in the rdma-vm guest', process.execPath, [
    path.join(root, 'dist/bench/rdma/run.js'),
    '--build', build,
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'feed') {
  configureNativeBench();
  step('build feed benchmarks', 'cmake', ['--build', build, '--target', 'bench_feed_native', 'bench_udp_mcast']);
  step('feed: native publisher -> subscriber vs C sendmmsg and sockperf', process.execPath, [
    path.join(root, 'dist/bench/feed/run.js'),
    '--build-dir', build,
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'orders') {
  configureNativeBench();
  step('build order-entry benchmarks', 'cmake', ['--build', build, '--target', 'bench_orders_rc', 'bench_orders', 'bench_udp_pingpong', 'bench_soft_rc_pingpong']);
  step('orders: order -> Ack over RC vs C UDP, sockperf and a Node TCP gateway', process.execPath, [
    path.join(root, 'dist/bench/orders/run.js'),
    '--build-dir', build,
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'api') {
  step('api: the TS order and risk clients vs a Node TCP gateway and a bare Node TCP echo', process.execPath, [
    path.join(root, 'dist/bench/orders/api.js'),
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'failover') {
  step('failover: a trading session moves to its alternate path when the primary link goes down', process.execPath, [
    path.join(root, 'dist/bench/orders/failover.js'),
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'failover-ibv') {
  step('failover-ibv: on rxe (no APM) a trading session fails over to a second device pair when its link is cut', process.execPath, [
    path.join(root, 'dist/bench/orders/failover-ibv.js'),
    ...(quick ? ['--quick'] : []),
  ]);
}
if (!only || only === 'slo') {
  step('slo: the embedded default against its tick-publish objective, lent and woken', process.execPath, [
    path.join(root, 'dist/bench/gateway/default-slo.js'),
    ...(quick ? ['--quick'] : []),
  ]);
}
