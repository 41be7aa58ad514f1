// config/prometheus/alerts.yaml through promtool (check + its unit tests), and
// config/grafana/dashboard.json: valid dashboard JSON whose queries name only
// metrics the gateway exports (or the recording rules).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import { client, READ_TOKEN, startTestGateway } from '../support/in-process-gateway.js';
import { parsePrometheusText } from '../support/prometheus-text.js';

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
const PROM_DIR = join(REPO_ROOT, 'config/prometheus');

test('promtool accepts alerts.yaml', { skip: promtool ? false : 'promtool not installed (Debian package prometheus)' }, () => {
  const r = spawnSync('promtool', ['check', 'rules', 'alerts.yaml'], { cwd: PROM_DIR, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS: \d+ rules found/);
});

test('the alert rules fire as their promtool unit tests expect: fast burn at 20x, not on too few events; the control-plane certificate alerts two weeks before expiry and at it', { skip: promtool ? false : 'promtool not installed' }, () => {
  const r = spawnSync('promtool', ['test', 'rules', 'alerts.test.yaml'], { cwd: PROM_DIR, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('promtool accepts prometheus.yaml, which scrapes /metrics with a bearer token file', { skip: promtool ? false : 'promtool not installed' }, () => {
  const text = readFileSync(join(PROM_DIR, 'prometheus.yaml'), 'utf8');
  assert.match(text, /authorization:\n\s+type: Bearer\n\s+credentials_file: \/etc\/prometheus\/qpgate\.token/);
  // promtool checks that the credentials file exists: point it at one of ours.
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-prom-'));
  writeFileSync(join(dir, 'qpgate.token'), 'read-token-0123456789\n', { mode: 0o600 });
  writeFileSync(join(dir, 'prometheus.yaml'), text.replace('/etc/prometheus/qpgate.token', join(dir, 'qpgate.token')));
  copyFileSync(join(PROM_DIR, 'alerts.yaml'), join(dir, 'alerts.yaml'));
  const r = spawnSync('promtool', ['check', 'config', 'prometheus.yaml'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the alert rules use the multi-window burn rates: 1h/5m at 14.4x and 6h/30m at 6x', () => {
  const text = readFileSync(join(PROM_DIR, 'alerts.yaml'), 'utf8');
  assert.match(text, /qpgate_slo:burn_rate1h > 14\.4 and qpgate_slo:burn_rate5m > 14\.4/);
  assert.match(text, /qpgate_slo:burn_rate6h > 6 and qpgate_slo:burn_rate30m > 6/);
});

test('dashboard.json is a Grafana dashboard whose panels query exported metrics', async () => {
  const d = JSON.parse(readFileSync(join(REPO_ROOT, 'config/grafana/dashboard.json'), 'utf8')) as {
    uid: string;
    title: string;
    schemaVersion: number;
    panels: Array<{ id: number; type: string; title: string; gridPos: object; targets?: Array<{ expr: string }> }>;
  };
  assert.equal(d.uid, 'qpgate');
  assert.ok(d.schemaVersion >= 30);
  const ids = d.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  const exprs = d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const metrics = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(qpgate_[a-z0-9_:]+)/g)].map((m) => m[1]!)));
  // What a live gateway with a feed and order entry exports (histograms as
  // their series names) and the recording rules.
  const gw = await startTestGateway('feeds:\n  channels:\n    - id: 1\n      groupA: 239.96.0.1\n  synthetic:\n    enabled: false\norders:\n  enabled: true\n');
  let exported: Set<string>;
  try {
    const families = parsePrometheusText((await client(gw).get('/metrics', READ_TOKEN)).text);
    exported = new Set([...families.values()].flatMap((f) => [f.name, ...f.samples.map((s) => s.name)]));
  } finally {
    await gw.close('test done');
  }
  const rules = readFileSync(join(PROM_DIR, 'alerts.yaml'), 'utf8');
  for (const m of metrics) {
    assert.ok(exported.has(m) || rules.includes(`record: ${m}`), `${m} is not a metric the gateway exports`);
  }
  for (const want of ['qpgate_feed_subscriber_lag_messages', 'qpgate_order_rejects_total', 'qpgate_order_sessions', 'histogram_quantile', 'qpgate_slo_compliant', 'qpgate_slo_burn_rate', 'qpgate_qp_state', 'qpgate_packet_drops_total', 'qpgate_net_packets_total', 'qpgate_feed_messages_total']) {
    assert.ok(exprs.some((e) => e.includes(want)), `a panel uses ${want}`);
  }
});
