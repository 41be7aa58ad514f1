// Every /v1 route: happy path, bad inputs, auth — with exact status codes and messages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../../src/gateway/service.js';
import { QP_COUNTERS } from '../../src/declared/qp-counters.js';
import { startTestGateway, client, READ_TOKEN, ADMIN_TOKEN } from '../support/in-process-gateway.js';

let gw: Gateway;
let api: ReturnType<typeof client>;

before(async () => {
  gw = await startTestGateway();
  api = client(gw);
});
after(async () => {
  await gw.close('test done');
});

// A /v1/qps row: the QP's attributes, then its counters (under `counters` only).
const QP_ROW_FIELDS = ['qpn', 'device', 'type', 'state', 'owner', 'label', 'sqPsn', 'rqPsn', 'destQpNum', 'destGid', 'pathMtu', 'qkey', 'outstandingWrs', 'recvWrsPosted', 'cap', 'timeout', 'retryCnt', 'rnrRetry', 'createdAt', 'counters'];
const NO_TOKEN = { error: 'unauthorized', message: 'missing bearer token: send "Authorization: Bearer <token>"' };
const READ_ON_ADMIN = { error: 'forbidden', message: 'token "viewer" has scope read; this route needs admin' };

test('GET /v1/device: the open soft device, its port, GIDs, MTU and the engine threads', async () => {
  const r = await api.get('/v1/device', READ_TOKEN);
  assert.equal(r.status, 200);
  const b = r.json as any;
  const address = gw.state.config.backend.address;
  assert.equal(b.backend, 'soft');
  assert.equal(b.rdma.open, true);
  assert.equal(b.rdma.name, `qpgate_soft_${address}`);
  assert.equal(b.rdma.gid, `::ffff:${address}`);
  assert.equal(b.rdma.ports.length, 1);
  assert.equal(b.rdma.ports[0].state, 'PORT_ACTIVE');
  assert.equal(b.rdma.ports[0].stateName, 'Active');
  assert.equal(b.rdma.ports[0].activeMtu, 4096); // lo's MTU carries the largest IB MTU
  assert.deepEqual(b.rdma.ports[0].gids, [{ index: 0, gid: `::ffff:${address}`, type: 'RoCE v2' }]);
  assert.match(b.rdma.nodeGuid, /^0x[0-9a-f]{16}$/);
  assert.equal(typeof b.numaNode, 'number');
  assert.equal(b.engine.threads.length, 1);
  assert.equal(b.engine.threads[0].role, 'engine');
  assert.ok(b.engine.threads[0].tid > 0);
  assert.match(b.engine.threads[0].idleStrategy, /^(spin|yield|backoff)$/);
  assert.equal(b.net.receiveMode, 'plain-udp');
  assert.equal(typeof b.counters.wire.icrc_mismatch, 'number');
  assert.equal(typeof b.counters.ingress.bad_qkey, 'number');
});

test('GET /v1/device without a token is 401', async () => {
  const r = await api.get('/v1/device');
  assert.equal(r.status, 401);
  assert.deepEqual(r.json, NO_TOKEN);
});

test('GET /v1/qps lists the QPs the gateway made, with PSNs and counters; gone once destroyed', async () => {
  const empty = await api.get('/v1/qps', READ_TOKEN);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.json, { device: gw.state.device!.name, alternateDevice: null, count: 0, qps: [] });

  const device = gw.state.device!;
  const pd = device.allocPd();
  const cq = device.createCq(16);
  const rc = gw.state.qps.createQp(pd, { type: 'RC', sendCq: cq, cap: { maxSendWr: 8, maxRecvWr: 8 } }, { owner: 'test', label: 'rc under test' });
  const ud = gw.state.qps.createQp(pd, { type: 'UD', sendCq: cq }, { owner: 'test' });
  rc.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: ['REMOTE_WRITE'] });
  const mr = pd.regMr(Buffer.alloc(256), ['LOCAL_WRITE']);
  // Three receive WRs posted: the "outstanding WRs" columns of /v1/qps count them.
  rc.postRecv([0, 1, 2].map((i) => ({ wrId: BigInt(i), sgList: [mr.sge(i * 64, 64)] })));
  try {
    const r = await api.get('/v1/qps', READ_TOKEN);
    assert.equal(r.status, 200);
    const b = r.json as any;
    assert.equal(b.count, 2);
    const row = b.qps.find((q: any) => q.qpn === rc.qpNum);
    assert.equal(row.type, 'RC');
    assert.equal(row.device, 'primary');
    assert.equal(row.state, 'INIT');
    assert.equal(row.owner, 'test');
    assert.equal(row.label, 'rc under test');
    assert.equal(row.sqPsn, 0);
    assert.equal(row.rqPsn, 0);
    assert.equal(row.outstandingWrs, 0);
    assert.equal(row.recvWrsPosted, 3);
    // One name per counter: the row's counters are qp_counters.def's, in its
    // order, and no other field of the row re-spells one of them.
    assert.deepEqual(Object.keys(row.counters), QP_COUNTERS.map((c) => c.name));
    for (const c of QP_COUNTERS) assert.equal(row.counters[c.name], 0, c.name);
    assert.deepEqual(Object.keys(row), QP_ROW_FIELDS);
    assert.equal(b.qps.find((q: any) => q.qpn === ud.qpNum).state, 'RESET');

    const one = await api.get(`/v1/qps/${rc.qpNum}`, READ_TOKEN);
    assert.equal(one.status, 200);
    assert.equal((one.json as any).qpn, rc.qpNum);
    assert.equal(typeof (one.json as any).counters.retransmitted_pkts, 'number');
    const hex = await api.get(`/v1/qps/0x${rc.qpNum.toString(16)}`, READ_TOKEN);
    assert.equal((hex.json as any).qpn, rc.qpNum);
  } finally {
    gw.state.qps.destroy(rc.qpNum);
    gw.state.qps.destroy(ud.qpNum);
    mr.dereg();
    cq.destroy();
    pd.dealloc();
  }
  assert.equal(((await api.get('/v1/qps', READ_TOKEN)).json as any).count, 0);
});

test('GET /v1/qps/:qpn: unknown QP 404, not a number 400, too large 400', async () => {
  const unknown = await api.get('/v1/qps/12345', READ_TOKEN);
  assert.equal(unknown.status, 404);
  assert.deepEqual(unknown.json, { error: 'not_found', message: 'no QP 12345 on this gateway\'s primary device' });
  const bad = await api.get('/v1/qps/abc', READ_TOKEN);
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.json, { error: 'bad_request', message: 'params/qpn must match pattern "^(0x[0-9a-fA-F]{1,6}|[0-9]{1,8})$"' });
  const big = await api.get('/v1/qps/16777216', READ_TOKEN);
  assert.equal(big.status, 400);
  assert.deepEqual(big.json, { error: 'bad_request', message: 'params/qpn must be at most 0xffffff (24 bits), got 16777216' });
  assert.equal((await api.get('/v1/qps')).status, 401);
});

test('GET /v1/slo lists the default objectives as "no data source" until a latency is registered', async () => {
  const r = await api.get('/v1/slo', READ_TOKEN);
  assert.equal(r.status, 200);
  const b = r.json as any;
  assert.deepEqual(
    b.objectives.map((o: any) => [o.name, o.latency, o.status, o.compliant]),
    [
      ['tick-publish-p99', 'tick_publish', 'no data source', null],
      ['order-ack-p99', 'order_ack', 'no data source', null],
    ],
  );
  assert.deepEqual(b.latencySources, []);
  assert.equal(b.evaluationIntervalSeconds, 5);
});

test('POST /v1/slo/evaluate: admin evaluates now; read token 403; no token 401', async () => {
  const before = ((await api.get('/v1/slo', READ_TOKEN)).json as any).evaluations as number;
  const r = await api.post('/v1/slo/evaluate', ADMIN_TOKEN);
  assert.equal(r.status, 200);
  assert.equal((r.json as any).evaluations, before + 1);
  assert.ok((r.json as any).evaluatedAt);
  const ro = await api.post('/v1/slo/evaluate', READ_TOKEN);
  assert.equal(ro.status, 403);
  assert.deepEqual(ro.json, READ_ON_ADMIN);
  const none = await api.post('/v1/slo/evaluate');
  assert.equal(none.status, 401);
  assert.deepEqual(none.json, NO_TOKEN);
});

test('PUT /v1/log-level: admin changes the pino level; bad bodies are 400 naming the field', async () => {
  assert.deepEqual((await api.get('/v1/log-level', READ_TOKEN)).json, { level: 'silent' });
  const ok = await api.put('/v1/log-level', ADMIN_TOKEN, { level: 'error' });
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.json, { level: 'error', previous: 'silent' });
  assert.equal(gw.state.logger.level, 'error');
  assert.deepEqual((await api.get('/v1/log-level', READ_TOKEN)).json, { level: 'error' });

  const cases: Array<[unknown, string]> = [
    [{ level: 5 }, 'body/level must be string'],
    [{ level: 'loud' }, 'body/level must be equal to one of the allowed values'],
    [{}, "body must have required property 'level'"],
    [{ level: 'info', extra: 1 }, 'body must NOT have additional properties'],
    [[], 'body must be object'],
  ];
  for (const [body, message] of cases) {
    const r = await api.put('/v1/log-level', ADMIN_TOKEN, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.deepEqual(r.json, { error: 'bad_request', message }, JSON.stringify(body));
  }
  const notJson = await api.put('/v1/log-level', ADMIN_TOKEN, '{"level":');
  assert.equal(notJson.status, 400);
  assert.equal(notJson.json.error, 'bad_request');

  const ro = await api.put('/v1/log-level', READ_TOKEN, { level: 'info' });
  assert.equal(ro.status, 403);
  assert.deepEqual(ro.json, READ_ON_ADMIN);
  assert.equal((await api.put('/v1/log-level', undefined, { level: 'info' })).status, 401);
  await api.put('/v1/log-level', ADMIN_TOKEN, { level: 'silent' });
});

test('/v1/sessions is 404 "not enabled" until its service exists', async () => {
  for (const [path, message] of [
    ['/v1/sessions', 'order sessions are not enabled in this gateway yet'],
    ['/v1/sessions/42', 'order sessions are not enabled in this gateway yet'],
  ] as const) {
    const r = await api.get(path, READ_TOKEN);
    assert.equal(r.status, 404, path);
    assert.deepEqual(r.json, { error: 'not_enabled', message }, path);
  }
  assert.equal((await api.post('/v1/sessions', ADMIN_TOKEN, { name: 'x' })).status, 404);
  assert.equal((await api.post('/v1/sessions', READ_TOKEN, { name: 'x' })).status, 403);
  assert.equal((await api.get('/v1/sessions')).status, 401);
});

test('GET /v1/status: one document for the page and the CLI', async () => {
  const r = await api.get('/v1/status', READ_TOKEN);
  assert.equal(r.status, 200);
  const b = r.json as any;
  assert.equal(b.ready, true);
  assert.equal(b.device.rdma.open, true);
  // The feed service is there without feeds.enabled: it just has no feed yet.
  assert.deepEqual(b.feeds, { enabled: true, summary: { count: 0, feeds: [] } });
  assert.deepEqual(b.sessions, { enabled: false, summary: null });
  assert.deepEqual(b.latencies, []);
  assert.ok(Array.isArray(b.qps));
  assert.equal((await api.get('/v1/status')).status, 401);
});

test('an extension registered in GatewayState serves its routes under /v1/<feature>', async () => {
  const ext = await startTestGateway('', {
    attach: (state) => {
      state.feeds = {
        routes: async (app) => {
          app.get('/', async () => ({ feeds: ['md-a'] }));
        },
        summary: () => ({ feeds: 1 }),
      };
    },
  });
  try {
    const c = client(ext);
    assert.deepEqual((await c.get('/v1/feeds', READ_TOKEN)).json, { feeds: ['md-a'] });
    assert.deepEqual(((await c.get('/v1/status', READ_TOKEN)).json as any).feeds, { enabled: true, summary: { feeds: 1 } });
    assert.equal((await c.get('/v1/sessions', READ_TOKEN)).status, 404);
  } finally {
    await ext.close();
  }
});
