// /metrics parsed strictly as Prometheus text: device counters, per-QP series
// that exist only while the QP does, and latency histograms whose counts are
// the events the test recorded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../../src/gateway/service.js';
import { startTestGateway, client, ADMIN_TOKEN, READ_TOKEN } from '../support/in-process-gateway.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { TestLatencyRecorder } from '../support/latency-recorder.js';
import { LATENCY_BUCKETS_SECONDS } from '../../src/gateway/metrics/latency-registry.js';

let gw: Gateway;
before(async () => {
  gw = await startTestGateway();
});
after(async () => {
  await gw.close('test done');
});

const scrape = async () => {
  const r = await client(gw).get('/metrics', READ_TOKEN);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(r.text);
};

test('the strict parser rejects malformed exposition', () => {
  assert.throws(() => parsePrometheusText('a{b="c} 1\n'), /unterminated/);
  assert.throws(() => parsePrometheusText('a 1\na 2\n'), /duplicate series/);
  assert.throws(() => parsePrometheusText('a one\n'), /bad value/);
  assert.throws(
    () => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 0\nh_count 1\n'),
    /not cumulative/,
  );
});

test('qpgate_build_info names the version, Node and the backend; Node metrics keep their usual names', async () => {
  const m = await scrape();
  const { version } = (await import('../../src/gateway/version.js')) as { version?: string; VERSION: string };
  assert.equal(sampleValue(m, 'qpgate_build_info', { node: process.version, backend: 'soft' }), 1);
  const info = [...m.values()].flatMap((f) => f.samples).find((s) => s.name === 'qpgate_build_info');
  assert.match(info?.labels['version'] ?? '', /^\d+\.\d+\.\d+/);
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    assert.ok(sampleValue(m, name) !== undefined, `${name} is exported`);
  }
  assert.equal(sampleValue(m, 'qpgate_process_cpu_seconds_total'), undefined, 'no qpgate_ prefix on the standard ones');
});

test('device, wire and ingress counters are exported with units and drop reasons', async () => {
  const m = await scrape();
  for (const [name, type] of [
    ['qpgate_net_packets_total', 'counter'],
    ['qpgate_net_bytes_total', 'counter'],
    ['qpgate_packet_drops_total', 'counter'],
    ['qpgate_wire_accepted_packets_total', 'counter'],
    ['qpgate_ingress_delivered_packets_total', 'counter'],
    ['qpgate_device_port_active', 'gauge'],
    ['qpgate_slo_compliant', 'gauge'],
    ['qpgate_engine_duty_cycles_total', 'counter'],
  ] as const) {
    assert.equal(m.get(name)?.type, type, name);
  }
  assert.equal(sampleValue(m, 'qpgate_net_packets_total', { direction: 'tx' }), 0);
  for (const reason of ['icrc_mismatch', 'unknown_opcode', 'truncated', 'bad_udp_length']) {
    assert.equal(sampleValue(m, 'qpgate_packet_drops_total', { stage: 'wire', reason }), 0, reason);
  }
  for (const reason of ['bad_qkey', 'unknown_qpn', 'bad_pkey']) {
    assert.equal(sampleValue(m, 'qpgate_packet_drops_total', { stage: 'ingress', reason }), 0, reason);
  }
  assert.equal(sampleValue(m, 'qpgate_device_port_active', { device: gw.state.device!.name, port: '1' }), 1);
  assert.equal(sampleValue(m, 'qpgate_device_info', { backend: 'soft', active_mtu: '4096' }), 1);
});

test('per-QP series carry qpn only while the QP exists', async () => {
  const device = gw.state.device!;
  const pd = device.allocPd();
  const cq = device.createCq(16);
  const qp = gw.state.qps.createQp(pd, { type: 'RC', sendCq: cq }, { owner: 'test' });
  const qpn = String(qp.qpNum);
  try {
    const m = await scrape();
    assert.equal(sampleValue(m, 'qpgate_qp_state', { qpn, device: 'primary', state: 'RESET', type: 'RC', owner: 'test' }), 0);
    assert.equal(sampleValue(m, 'qpgate_qps', { type: 'RC', state: 'RESET' }), 1);
    assert.equal(sampleValue(m, 'qpgate_qp_retransmitted_packets_total', { qpn }), 0);
    assert.equal(sampleValue(m, 'qpgate_qp_timeouts_total', { qpn }), 0);
    assert.equal(sampleValue(m, 'qpgate_qp_path_migrations_total', { qpn }), 0);
    for (const code of ['psn_seq_err', 'inv_req', 'rem_access', 'rem_op', 'other']) {
      assert.equal(sampleValue(m, 'qpgate_qp_naks_received_total', { qpn, code }), 0, code);
    }
    assert.equal(sampleValue(m, 'qpgate_qp_rnr_naks_total', { qpn, direction: 'received' }), 0);
    qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: [] });
    assert.equal(sampleValue(await scrape(), 'qpgate_qp_state', { qpn, state: 'INIT' }), 1);
  } finally {
    gw.state.qps.destroy(qp.qpNum);
    cq.destroy();
    pd.dealloc();
  }
  const after = await scrape();
  for (const f of after.values()) {
    for (const s of f.samples) assert.notEqual(s.labels['qpn'], qpn, `${s.name} still has qpn ${qpn}`);
  }
});

test('a registered latency source becomes a histogram whose counts are the recorded events', async () => {
  const rec = new TestLatencyRecorder();
  const unregister = gw.state.latency.registerLatency('tick_publish', 'Tick enqueue to on the wire.', rec.read);
  try {
    // Values well inside buckets (not near a bound): 3 µs ×100, 30 µs ×50, 300 µs ×7, 3 ms ×2, 20 s ×1 (overflow).
    const events: Array<[number, number]> = [[3_000, 100], [30_000, 50], [300_000, 7], [3_000_000, 2], [20e9, 1]];
    for (const [ns, n] of events) rec.record(ns, n);
    const m = await scrape();
    const f = m.get('qpgate_tick_publish_latency_seconds');
    assert.equal(f?.type, 'histogram');
    assert.equal(f?.help, 'Tick enqueue to on the wire.');
    assert.equal(sampleValue(m, 'qpgate_tick_publish_latency_seconds_count'), 160);
    const bucket = (le: string) => sampleValue(m, 'qpgate_tick_publish_latency_seconds_bucket', { le });
    assert.equal(bucket('0.000001'), 0);
    assert.equal(bucket('0.000002'), 0);
    assert.equal(bucket('0.000005'), 100);
    assert.equal(bucket('0.00002'), 100);
    assert.equal(bucket('0.00005'), 150);
    assert.equal(bucket('0.0005'), 157);
    assert.equal(bucket('0.005'), 159);
    assert.equal(bucket('10'), 159);
    assert.equal(bucket('+Inf'), 160);
    const buckets = f!.samples.filter((s) => s.name.endsWith('_bucket')).map((s) => s.labels['le']);
    assert.deepEqual(buckets, [...LATENCY_BUCKETS_SECONDS.map(String), '+Inf']);
    const sum = sampleValue(m, 'qpgate_tick_publish_latency_seconds_sum')!;
    const exact = events.reduce((a, [ns, n]) => a + (ns * n) / 1e9, 0);
    assert.ok(Math.abs(sum - exact) / exact < 0.01, `sum ${sum} vs ${exact}`);

    // More events show up on the next scrape; nothing is recorded per event in JS.
    rec.record(3_000, 40);
    assert.equal(sampleValue(await scrape(), 'qpgate_tick_publish_latency_seconds_count'), 200);
  } finally {
    unregister();
  }
  assert.equal((await scrape()).get('qpgate_tick_publish_latency_seconds'), undefined);
});

test('registerLatency refuses bad and duplicate names', () => {
  assert.throws(() => gw.state.latency.registerLatency('Tick-Publish', 'x', () => new TestLatencyRecorder().read()), /snake_case/);
  const off = gw.state.latency.registerLatency('order_ack', 'x', new TestLatencyRecorder().read);
  assert.throws(() => gw.state.latency.registerLatency('order_ack', 'x', new TestLatencyRecorder().read), /already registered/);
  off();
});

test('refused control-plane requests are counted by route and status, one for each the test sent', async () => {
  const api = client(gw);
  const count = (m: Map<string, unknown>, labels: Record<string, string>) =>
    sampleValue(m as Awaited<ReturnType<typeof scrape>>, 'qpgate_control_requests_total', labels) ?? 0;
  const badBody = { method: 'PUT', route: '/v1/log-level', status: '400' };
  const noToken = { method: 'GET', route: '/v1/device', status: '401' };
  const readOnAdmin = { method: 'PUT', route: '/v1/log-level', status: '403' };
  const unknownQp = { method: 'GET', route: '/v1/qps/:qpn', status: '404' };
  const noRoute = { method: 'GET', route: 'unmatched', status: '404' };
  const before = await scrape();
  for (const body of [{ level: 5 }, {}, []]) assert.equal((await api.put('/v1/log-level', ADMIN_TOKEN, body)).status, 400);
  for (let i = 0; i < 2; i++) assert.equal((await api.get('/v1/device')).status, 401);
  assert.equal((await api.put('/v1/log-level', READ_TOKEN, { level: 'info' })).status, 403);
  for (let i = 0; i < 4; i++) assert.equal((await api.get('/v1/qps/77777', READ_TOKEN)).status, 404);
  assert.equal((await api.get('/no/such/route')).status, 404);
  const m = await scrape();
  assert.equal(m.get('qpgate_control_requests_total')?.type, 'counter');
  assert.equal(count(m, badBody) - count(before, badBody), 3);
  assert.equal(count(m, noToken) - count(before, noToken), 2);
  assert.equal(count(m, readOnAdmin) - count(before, readOnAdmin), 1);
  assert.equal(count(m, unknownQp) - count(before, unknownQp), 4);
  assert.equal(count(m, noRoute) - count(before, noRoute), 1);
});
