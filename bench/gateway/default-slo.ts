// The embedded default as `npm start` runs it (config/default.yaml: the soft
// backend on loopback, the synthetic source at 10k messages/s), measured by
// its own SLO: the tick_publish latency (JS enqueue -> posted on the wire)
// against the shipped objective tick-publish-p99 (p99 <= 50 us). Each run
// starts `qpgate serve` twice, interleaved, with engine.lendWhenParked true
// (the default) and false (the engine thread always woken), so the two are
// measured side by side:
//
//   lend    a parked engine runs the JS thread's publishes on the JS thread
//   wake    the JS thread rings the doorbell and the engine thread wakes
//
// After --seconds (default 75, so the 1m window holds no start-up) it asks
// POST /v1/slo/evaluate for the objective's 1m window (p99, slow events,
// burn rate) and GET /metrics for how the events fall in the histogram's
// buckets, and GET /v1/device for how the engine ran (lent cycles, parks,
// doorbell wakes). Reported as medians (min–max) over --runs (default 3).
//
//   npm run bench -- --only slo
//   node dist/bench/gateway/default-slo.js [--runs 3] [--seconds 75] [--quick]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, openSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Results, table, type Row } from '../feed/report.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

interface Args {
  readonly runs: number;
  readonly seconds: number;
}

function parseArgs(argv: string[]): Args {
  let quick = false;
  let runs = 3;
  let seconds = 75;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') quick = true;
    else if (a === '--runs' && i + 1 < argv.length) runs = Number(argv[++i]);
    else if (a === '--seconds' && i + 1 < argv.length) seconds = Number(argv[++i]);
    else throw new Error(`bench slo: unknown argument ${a}; expected --runs N, --seconds S, --quick`);
  }
  if (!(runs >= 1) || !(seconds >= 1)) throw new Error('bench slo: --runs and --seconds must be >= 1');
  return quick ? { runs: 1, seconds: 6 } : { runs, seconds };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `qpgate serve` on a fresh state directory, as `npm start` runs it, with one engine setting changed. */
class Gateway {
  readonly #child: ChildProcess;
  readonly #dir: string;
  readonly #base: string;
  #token = '';  // the generated admin token, read once the gateway is healthy

  private constructor(child: ChildProcess, dir: string, port: number) {
    this.#child = child;
    this.#dir = dir;
    this.#base = `http://127.0.0.1:${port}`;
  }

  static async start(lendWhenParked: boolean): Promise<Gateway> {
    const dir = mkdtempSync(path.join(tmpdir(), 'qpgate-slo-'));
    const port = await freePort();
    const log = openSync(path.join(dir, 'gateway.log'), 'w');
    const child = spawn(
      process.execPath,
      [path.join(root, 'bin/qpgate.js'), 'serve', '--set', `state.dir=${dir}`, '--set', `control.port=${port}`,
        '--set', `engine.lendWhenParked=${lendWhenParked}`],
      { cwd: root, stdio: ['ignore', log, log] },
    );
    closeSync(log);
    const gateway = new Gateway(child, dir, port);
    await gateway.#waitHealthy();
    return gateway;
  }

  async #waitHealthy(): Promise<void> {
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      if (this.#child.exitCode !== null) break;
      const ok = await fetch(`${this.#base}/healthz`).then((r) => r.ok, () => false);
      if (ok) {
        this.#token = readFileSync(path.join(this.#dir, 'admin.token'), 'utf8').trim();
        return;
      }
      await sleep(100);
    }
    const log = readFileSync(path.join(this.#dir, 'gateway.log'), 'utf8');
    this.#child.kill('SIGKILL');
    throw new Error(`bench slo: the gateway did not become healthy\n${log.slice(-2000)}`);
  }

  async #get(route: string, method = 'GET'): Promise<Response> {
    const r = await fetch(`${this.#base}${route}`, { method, headers: { authorization: `Bearer ${this.#token}` } });
    if (!r.ok) throw new Error(`bench slo: ${method} ${route}: ${r.status} ${await r.text()}`);
    return r;
  }

  /** What the run measured: the objective's 1m window, the histogram's buckets, the engine's counters. */
  async measure(seconds: number): Promise<Row> {
    const slo = (await (await this.#get('/v1/slo/evaluate', 'POST')).json()) as SloReport;
    const objective = slo.objectives.find((o) => o.name === 'tick-publish-p99');
    const window = objective?.windows.find((w) => w.window === '1m');
    if (window === undefined) throw new Error('bench slo: no tick-publish-p99 1m window in /v1/slo');
    const buckets = tickPublishBuckets(await (await this.#get('/metrics')).text());
    const device = (await (await this.#get('/v1/device')).json()) as { engine: { stats: Record<string, number> } };
    const s = device.engine.stats;
    return {
      p99: window.observedUs,
      slowPct: window.events > 0 ? (100 * window.slowEvents) / window.events : NaN,
      burn: window.burnRate,
      eventsPerSec: window.events / Math.min(window.coveredSeconds, 60),
      under10: buckets.fractionUnder(10e-6) * 100,
      under20: buckets.fractionUnder(20e-6) * 100,
      over100: (1 - buckets.fractionUnder(100e-6)) * 100,
      lentPerSec: (s['lentCycles'] ?? 0) / seconds,
      doorbellPerSec: (s['doorbellWakes'] ?? 0) / seconds,
      parksPerSec: (s['parks'] ?? 0) / seconds,
    };
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (this.#child.exitCode === null) this.#child.kill('SIGKILL');
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

interface SloReport {
  objectives: Array<{ name: string; windows: Array<{ window: string; events: number; slowEvents: number; observedUs: number; burnRate: number; coveredSeconds: number }> }>;
}

/** The cumulative buckets of qpgate_tick_publish_latency_seconds in a /metrics text. */
function tickPublishBuckets(metrics: string): { fractionUnder(seconds: number): number } {
  const buckets: Array<[number, number]> = [];
  for (const m of metrics.matchAll(/^qpgate_tick_publish_latency_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) {
    buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  }
  const total = buckets.find(([le]) => le === Infinity)?.[1] ?? 0;
  return {
    fractionUnder(seconds: number): number {
      const at = buckets.find(([le]) => Math.abs(le - seconds) < 1e-12);
      return at === undefined || total === 0 ? NaN : at[1] / total;
    },
  };
}

async function measureOnce(lendWhenParked: boolean, seconds: number): Promise<Row> {
  const gateway = await Gateway.start(lendWhenParked);
  try {
    await sleep(seconds * 1000);
    return await gateway.measure(seconds);
  } finally {
    await gateway.stop();
  }
}

const loadText = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');

async function main(): Promise<void> {
  const { runs, seconds } = parseArgs(process.argv.slice(2));
  const res = new Results();
  const load0 = loadText();
  const started = Date.now();
  for (let r = 0; r < runs; r++) {
    process.stdout.write(`slo: run ${r + 1}/${runs}, ${seconds} s each (load ${loadText()})\n`);
    res.keep('lend', await measureOnce(true, seconds));
    res.keep('wake', await measureOnce(false, seconds));
  }
  process.stdout.write(
    `\nslo: ${runs} run(s) in ${((Date.now() - started) / 1000).toFixed(0)} s; medians (min–max) over runs; ` +
      `load average before ${load0}, after ${loadText()}\n`,
  );
  const fields = ['p99', 'slowPct', 'burn', 'under10', 'under20', 'over100', 'eventsPerSec', 'lentPerSec', 'doorbellPerSec', 'parksPerSec'];
  table(
    'The embedded default (npm start): tick_publish, the 1m window of tick-publish-p99 (p99 <= 50 us)',
    ['engine', 'p99 µs', 'slow %', 'burn rate', '<= 10 µs %', '<= 20 µs %', '> 100 µs %', 'events/s', 'lent cycles/s', 'doorbell wakes/s', 'parks/s'],
    [
      ['lend', ...fields.map((f) => res.cell('lend', f))],
      ['wake', ...fields.map((f) => res.cell('wake', f))],
    ],
  );
  const p99 = res.median('lend', 'p99');
  process.stdout.write(
    `\ntick-publish-p99 as shipped (lend): p99 ${p99.toFixed(1)} µs against 50: ${p99 <= 50 ? 'MET' : 'MISSED'}` +
      `; wake: ${res.median('wake', 'p99').toFixed(1)} µs\n`,
  );
}

await main();
