// SLOs end to end: a latency source registered by the test, the evaluator on
// its timer and on demand, /v1/slo and the qpgate_slo_* metrics. The SLO goes
// red when the test injects latency beyond its threshold and green after.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Gateway } from '../../src/gateway/service.js';
import { startTestGateway, client, READ_TOKEN, ADMIN_TOKEN } from '../support/in-process-gateway.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { TestLatencyRecorder } from '../support/latency-recorder.js';
import { loadConfig, ConfigError } from '../../src/gateway/config/load.js';

const CONFIG = `
slo:
  evaluationInterval: 500ms
  objectives:
    - name: publish-p99
      latency: tick_publish
      percentile: 99
      thresholdUs: 100
      windows: [2s, 1m]
    - name: ack-p99
      latency: order_ack
      percentile: 99
      thresholdUs: 200
      windows: [10s]
`;

let gw: Gateway;
before(async () => {
  gw = await startTestGateway(CONFIG);
});
after(async () => {
  await gw.close('test done');
});

type Slo = { name: string; status: string; compliant: boolean | null; minEvents: number; windows: Array<{ window: string; judged: boolean; compliant: boolean; burnRate: number; observedUs: number; events: number; slowEvents: number }> };
const evaluate = async (): Promise<Slo[]> => {
  const r = await client(gw).post('/v1/slo/evaluate', ADMIN_TOKEN);
  assert.equal(r.status, 200);
  return (r.json as unknown as { objectives: Slo[] }).objectives;
};
const publish = (list: Slo[]) => list.find((o) => o.name === 'publish-p99')!;

test('an SLO goes red when latency beyond its threshold is injected, and green again after', async () => {
  const rec = new TestLatencyRecorder();
  const unregister = gw.state.latency.registerLatency('tick_publish', 'Tick enqueue to on the wire.', rec.read);
  try {
    let s = await evaluate();
    assert.equal(publish(s).status, 'too few events');
    assert.equal(s.find((o) => o.name === 'ack-p99')!.status, 'no data source');

    rec.record(20_000, 1000); // 20 µs: well under 100 µs
    s = await evaluate();
    assert.equal(publish(s).status, 'ok');
    assert.equal(publish(s).windows[0]!.window, '2s');
    assert.equal(publish(s).windows[0]!.events, 1000);

    rec.record(5_000_000, 100); // 5 ms: 100 of 1100 slow, p99 breached
    s = await evaluate();
    const red = publish(s);
    assert.equal(red.status, 'violated');
    assert.equal(red.compliant, false);
    assert.equal(red.windows[0]!.slowEvents, 100);
    assert.ok(red.windows[0]!.burnRate > 9, `burn ${red.windows[0]!.burnRate}`);
    assert.ok(red.windows[0]!.observedUs >= 4900);

    // /v1/slo (read token) and /metrics show the same.
    const shown = (await client(gw).get('/v1/slo', READ_TOKEN)).json as unknown as { objectives: Slo[] };
    assert.equal(publish(shown.objectives).status, 'violated');
    let m = parsePrometheusText((await client(gw).get('/metrics', READ_TOKEN)).text);
    assert.equal(sampleValue(m, 'qpgate_slo_compliant', { slo: 'publish-p99', window: '2s' }), 0);
    assert.ok(sampleValue(m, 'qpgate_slo_burn_rate', { slo: 'publish-p99', window: '2s' })! > 9);
    assert.ok(sampleValue(m, 'qpgate_slo_observed_seconds', { slo: 'publish-p99', window: '2s' })! >= 0.0049);
    assert.equal(sampleValue(m, 'qpgate_slo_slow_events_total', { slo: 'publish-p99' }), 100);
    assert.equal(sampleValue(m, 'qpgate_slo_events_total', { slo: 'publish-p99' }), 1100);
    assert.equal(sampleValue(m, 'qpgate_slo_objective_ratio', { slo: 'publish-p99' }), 0.99);
    assert.equal(sampleValue(m, 'qpgate_slo_data_source', { slo: 'ack-p99' }), 0);

    // Once the slow events are older than the 2 s window, it is green again (the 1 m window still remembers).
    await sleep(2200);
    rec.record(20_000, 1000);
    s = await evaluate();
    const w2 = publish(s).windows.find((w) => w.window === '2s')!;
    const w60 = publish(s).windows.find((w) => w.window === '1m')!;
    assert.equal(w2.compliant, true);
    assert.equal(w2.slowEvents, 0);
    assert.equal(w60.compliant, false);
    m = parsePrometheusText((await client(gw).get('/metrics', READ_TOKEN)).text);
    assert.equal(sampleValue(m, 'qpgate_slo_compliant', { slo: 'publish-p99', window: '2s' }), 1);
    assert.equal(sampleValue(m, 'qpgate_slo_compliant', { slo: 'publish-p99', window: '1m' }), 0);
  } finally {
    unregister();
  }
});

test('a window with fewer events than minEvents is not judged: one slow first order of three is "too few events", not a violation, and has no burn rate to page on', async () => {
  const rec = new TestLatencyRecorder();
  const unregister = gw.state.latency.registerLatency('order_ack', 'Order in to ack out.', rec.read);
  const ack = (list: Slo[]) => list.find((o) => o.name === 'ack-p99')!;
  try {
    await evaluate();
    rec.record(400_000, 1); // a cold first order: 400 µs against 200
    rec.record(30_000, 2);
    let a = ack(await evaluate());
    assert.equal(a.minEvents, 100, 'p99 wants 100 events');
    assert.equal(a.status, 'too few events');
    assert.deepEqual(a.windows.map((w) => [w.events, w.slowEvents, w.judged, w.compliant]), [[3, 1, false, true]]);
    let m = parsePrometheusText((await client(gw).get('/metrics', READ_TOKEN)).text);
    assert.equal(sampleValue(m, 'qpgate_slo_min_events', { slo: 'ack-p99' }), 100);
    assert.equal(sampleValue(m, 'qpgate_slo_compliant', { slo: 'ack-p99', window: '10s' }), 1);
    assert.equal(sampleValue(m, 'qpgate_slo_burn_rate', { slo: 'ack-p99', window: '10s' }), undefined);
    assert.equal(sampleValue(m, 'qpgate_slo_slow_events_total', { slo: 'ack-p99' }), 1, 'the raw totals are still exported');

    // With 100 events the window is judged: 1 slow of 100 is within p99, 2 are not.
    rec.record(30_000, 97);
    a = ack(await evaluate());
    assert.deepEqual([a.status, a.windows[0]!.judged, a.windows[0]!.events], ['ok', true, 100]);
    rec.record(400_000, 1);
    a = ack(await evaluate());
    assert.equal(a.status, 'violated');
    m = parsePrometheusText((await client(gw).get('/metrics', READ_TOKEN)).text);
    assert.ok(sampleValue(m, 'qpgate_slo_burn_rate', { slo: 'ack-p99', window: '10s' })! > 1);
  } finally {
    unregister();
  }
});

test('the evaluator also runs on its timer', async () => {
  const before = ((await client(gw).get('/v1/slo', READ_TOKEN)).json as { evaluations: number }).evaluations;
  await sleep(1200);
  const after = ((await client(gw).get('/v1/slo', READ_TOKEN)).json as { evaluations: number }).evaluations;
  assert.ok(after >= before + 2, `${before} -> ${after}`);
});

test('slo config: bad values exit with a message naming the key', () => {
  const bad = (set: string) => () => loadConfig({ env: {}, overrides: [set] });
  assert.throws(bad('slo.evaluationInterval=soon'), (e: unknown) => e instanceof ConfigError && /slo\.evaluationInterval/.test(e.message));
  assert.throws(
    bad('slo.objectives=[{name: x, latency: tick_fast, percentile: 99, thresholdUs: 5, windows: [1m]}]'),
    (e: unknown) => e instanceof ConfigError && /slo\.objectives\.0\.latency/.test(e.message) && /tick_publish/.test(e.message),
  );
  assert.throws(
    bad('slo.objectives=[{name: x, latency: order_ack, percentile: 100, thresholdUs: 5, windows: [1m]}]'),
    (e: unknown) => e instanceof ConfigError && /slo\.objectives\.0\.percentile/.test(e.message),
  );
  assert.throws(
    bad('slo.objectives=[{name: x, latency: order_ack, percentile: 99, thresholdUs: 5, windows: [1m], minEvents: 0}]'),
    (e: unknown) => e instanceof ConfigError && /slo\.objectives\.0\.minEvents/.test(e.message),
  );
});

test('a window shorter than the evaluation interval fails the start with the key named', async () => {
  await assert.rejects(
    startTestGateway('slo:\n  evaluationInterval: 10s\n  objectives:\n    - {name: x, latency: order_ack, percentile: 99, thresholdUs: 5, windows: [5s]}\n'),
    /slo\.objectives\.0\.windows\.0: 5s is shorter than slo\.evaluationInterval \(10s\)/,
  );
});
