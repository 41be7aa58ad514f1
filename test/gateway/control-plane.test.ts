import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';

const READ_TOKEN = 'read-token-0123456789';
const ADMIN_TOKEN = 'admin-token-0123456789';
let gw: Gateway;

before(async () => {
  const config = loadConfig({
    env: {},
    overrides: [
      'control.port=0',
      `backend.address=${freeLoopbackAddress()}`,
      `state.dir=${mkdtempSync(join(tmpdir(), 'qpgate-cp-'))}`,
      `control.tokens=[{name: viewer, scope: read, token: ${READ_TOKEN}}, {name: ops, scope: admin, token: ${ADMIN_TOKEN}}]`,
    ],
  });
  gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
});

after(async () => {
  await gw.close('test done');
});

const get = (path: string, token?: string) =>
  fetch(`${gw.url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

test('/healthz and /readyz answer 200 while the engine runs', async () => {
  assert.equal((await get('/healthz')).status, 200);
  const ready = await get('/readyz');
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: 'ready' });
});

test('/v1 without a token is 401 with a bearer challenge', async () => {
  const res = await get('/v1/device');
  assert.equal(res.status, 401);
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="qpgate"/);
  assert.deepEqual(await res.json(), {
    error: 'unauthorized',
    message: 'missing bearer token: send "Authorization: Bearer <token>"',
  });
});

test('/v1 with an unknown token is 401', async () => {
  const res = await get('/v1/device', 'not-a-configured-token');
  assert.equal(res.status, 401);
  assert.equal(((await res.json()) as { message: string }).message, 'unknown bearer token');
});

test('/v1/device with a read token reports the backend and where the engine thread runs', async () => {
  const res = await get('/v1/device', READ_TOKEN);
  assert.equal(res.status, 200);
  const body = (await res.json()) as {
    backend: string;
    device: string;
    engine: { running: boolean; placement: { tid: number; idleStrategy: string; numaSource: string } };
    features: { crc: string };
  };
  assert.equal(body.backend, 'soft');
  assert.equal(body.device, 'lo');
  assert.equal(body.engine.running, true);
  assert.ok(body.engine.placement.tid > 0);
  assert.match(body.features.crc, /^(isal|zlib)$/);
  // On a 2-CPU machine the default idle strategy is backoff.
  if ((await import('node:os')).availableParallelism() < 4) assert.equal(body.engine.placement.idleStrategy, 'backoff');
});

test('an unknown route is a 404 that names the route', async () => {
  const res = await get('/v1/nothing-here', ADMIN_TOKEN);
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { error: 'not_found', message: 'no route GET /v1/nothing-here' });
});

test('/metrics is Prometheus text with the engine counters', async () => {
  const res = await get('/metrics', READ_TOKEN);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const value = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    assert.ok(line, `${name} missing from /metrics`);
    return Number(line.split(' ')[1]);
  };
  assert.ok(value('qpgate_engine_duty_cycles_total') > 0, 'the engine has run duty cycles');
  assert.equal(value('qpgate_engine_running'), 1);
  assert.match(text, /# TYPE qpgate_engine_ring_records_total counter/);
  assert.match(text, /qpgate_engine_ring_records_total\{ring="to_engine"\} \d+/);
});
