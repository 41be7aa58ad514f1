// Debian's Prometheus server scrapes a live gateway with the shipped
// config/prometheus/alerts.yaml loaded, as a user deploys it: the target is
// up through bearer-token auth, the burn-rate recording rules evaluate, and
// the gateway-window alert fires for an objective violated on purpose (a
// threshold no tick can meet) and not for one no tick can miss. Asserted
// through Prometheus's own HTTP API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { READ_TOKEN, startTestGateway } from '../support/in-process-gateway.js';
import { REPO_ROOT } from '../support/paths.js';

const PROMETHEUS = '/usr/bin/prometheus';
const ALERT = 'QpgateSloGatewayWindowBurn';

const SLO_YAML = `feeds: {}
slo:
  evaluationInterval: 1s
  objectives:
    - {name: violated, latency: tick_publish, percentile: 99, thresholdUs: 0.001, windows: [1m, 10m]}
    - {name: healthy, latency: tick_publish, percentile: 99, thresholdUs: 10000000, windows: [1m, 10m]}
`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface PromApi {
  get<T>(path: string): Promise<T>;
}

function promApi(base: string): PromApi {
  return {
    async get<T>(path: string): Promise<T> {
      const res = await fetch(`${base}${path}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      assert.equal(body.status, 'success', `${path}: ${body.error}`);
      return body.data;
    },
  };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(500);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

type Alert = { labels: Record<string, string>; state: 'pending' | 'firing' };

test(
  'Prometheus scrapes the gateway with a token, evaluates the shipped rules, and fires the SLO alert only for the violated objective',
  { timeout: 240_000, skip: existsSync(PROMETHEUS) || process.env['CI'] ? false : 'prometheus not installed (bash scripts/setup.sh --with-tests)' },
  async () => {
    const gw = await startTestGateway(SLO_YAML);
    const dir = mkdtempSync(join(tmpdir(), 'qpgate-prom-'));
    const tokenFile = join(dir, 'qpgate.token');
    writeFileSync(tokenFile, READ_TOKEN, { mode: 0o600 });
    const target = new URL(gw.url).host;
    writeFileSync(
      join(dir, 'prometheus.yaml'),
      [
        'global: {scrape_interval: 1s, evaluation_interval: 1s}',
        `rule_files: ["${join(REPO_ROOT, 'config/prometheus/alerts.yaml')}"]`,
        'scrape_configs:',
        '  - job_name: qpgate',
        '    metrics_path: /metrics',
        `    authorization: {type: Bearer, credentials_file: "${tokenFile}"}`,
        `    static_configs: [{targets: ["${target}"]}]`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const prom = spawn(
      PROMETHEUS,
      [`--config.file=${join(dir, 'prometheus.yaml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let promLog = '';
    prom.stderr.on('data', (d: Buffer) => (promLog += d.toString()));
    const api = promApi(`http://127.0.0.1:${port}/api/v1`);
    try {
      // The target answers through the token (an unauthorised scrape would be 'down' with a 401).
      const health = await until('the gateway target to be up', 60_000, async () => {
        const t = await api.get<{ activeTargets: Array<{ health: string; lastError: string }> }>('/targets');
        const first = t.activeTargets[0];
        return first?.health === 'up' ? first : undefined;
      });
      assert.equal(health.lastError, '');

      // The recording rules (a 30 s group) evaluate without error and see the violation.
      const burn = await until('qpgate_slo:burn_rate5m for both objectives', 90_000, async () => {
        const r = await api.get<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
          `/query?query=${encodeURIComponent('qpgate_slo:burn_rate5m')}`,
        );
        const by = new Map(r.result.map((s) => [s.metric['slo'], Number(s.value[1])]));
        return by.has('violated') && by.has('healthy') ? by : undefined;
      });
      assert.ok(burn.get('violated')! > 14.4, `violated burns at ${burn.get('violated')}`);
      assert.ok(burn.get('healthy')! < 1, `healthy burns at ${burn.get('healthy')}`);
      const rules = await api.get<{ groups: Array<{ name: string; rules: Array<{ name: string; health: string; lastError?: string }> }> }>('/rules');
      for (const g of rules.groups) {
        for (const r of g.rules) assert.notEqual(r.health, 'err', `${g.name}/${r.name}: ${r.lastError}`);
      }

      // The alert on the gateway's own 1m/10m windows goes pending at once, then
      // fires after its `for: 1m`, for the violated objective alone.
      const firing = await until(`${ALERT} firing for slo=violated`, 120_000, async () => {
        const a = await api.get<{ alerts: Alert[] }>('/alerts');
        return a.alerts.find((x) => x.labels['alertname'] === ALERT && x.labels['slo'] === 'violated' && x.state === 'firing');
      });
      assert.equal(firing.labels['severity'], 'page');
      const all = await api.get<{ alerts: Alert[] }>('/alerts');
      assert.deepEqual(
        all.alerts.filter((x) => x.labels['slo'] === 'healthy' || x.labels['alertname'] === 'QpgateDown' || x.labels['alertname'] === 'QpgateEngineStopped'),
        [],
        'nothing fires for the healthy objective, and the gateway is up',
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\nprometheus log:\n${promLog}`);
    } finally {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
      await gw.close();
    }
  },
);
