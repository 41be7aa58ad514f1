// Running the benchmark programs for the bench/*/run.ts drivers: a program's
// one `RESULT {json}` line (bench_common.h), retried once because a loaded VM
// can time a run out, and sockperf's ping-pong with its server beside it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { parseSockperf, type Row } from '../feed/report.js';

export function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export interface RunOptions {
  cpu?: string; // run under `taskset -c cpu`
  timeoutMs?: number;
  // Why a row that parsed still measured nothing ('' or undefined: keep it).
  refuse?: (row: Row) => string | undefined;
}

// The program's RESULT row, or undefined (said on stderr, prefixed `tag: `) after two failures.
export function runResult(tag: string, label: string, command: string, argv: string[], o: RunOptions = {}): Row | undefined {
  const [cmd, full] = o.cpu !== undefined ? ['taskset', ['-c', o.cpu, command, ...argv]] : [command, argv];
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = spawnSync(cmd, full as string[], { encoding: 'utf8', timeout: o.timeoutMs ?? 120_000 });
    const m = /^RESULT (\{.*\})$/m.exec(r.stdout ?? '');
    if (r.status === 0 && m) {
      const row = JSON.parse(m[1] as string) as Row;
      const refused = o.refuse?.(row);
      if (!refused) return row;
      process.stderr.write(`${tag}: ${label}: ${refused}\n`);
      return undefined;
    }
    process.stderr.write(`${tag}: ${label} failed (exit ${r.status ?? r.signal}):\n${r.stderr ?? ''}\n`);
  }
  return undefined;
}

export const haveSockperf = (): boolean => !spawnSync('sockperf', ['--version'], { encoding: 'utf8' }).error;

// SIGINT (sockperf prints its summary and exits), SIGKILL if it lingers.
export function stopServer(server: ChildProcess): void {
  server.kill('SIGINT');
  sleepMs(100);
  if (server.exitCode === null) server.kill('SIGKILL');
}

let sockperfPort = 21000 + (process.pid % 20000);

// sockperf server (serverCpu) + ping-pong client (clientCpu) with the same
// address options; its one-way (RTT/2) percentiles and mean, µs, as printed.
export function sockperfPingPong(
  tag: string,
  addressArgs: string[],
  o: { serverCpu: string; clientCpu: string; seconds: number; size: number },
): { p50: number; p99: number; p999: number; mean: number } | undefined {
  const common = [...addressArgs, '-p', String(sockperfPort++)];
  let server: ChildProcess;
  try {
    server = spawn('taskset', ['-c', o.serverCpu, 'sockperf', 'server', ...common], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  sleepMs(300);
  const r = spawnSync('taskset', ['-c', o.clientCpu, 'sockperf', 'ping-pong', ...common, '-t', String(o.seconds), '-m', String(o.size)], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  stopServer(server);
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const figures = parseSockperf(out);
  if (!figures) process.stderr.write(`${tag}: sockperf ping-pong failed:\n${out}\n`);
  return figures;
}
