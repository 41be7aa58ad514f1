// The control plane against hostile input and a sick engine (issue 13):
// /healthz and /readyz follow the engine's duty-cycle heartbeat (item 8);
// replay files are confined to feeds.replay.dir, regular files only, read
// without blocking the event loop (item 6); /metrics needs a token and an
// unknown /v1 path is 401 before it is 404 (item 10).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Gateway } from '../../src/gateway/service.js';
import { TickFileWriter } from '../../src/feed/recording.js';
import { journalProblem } from '../../src/gateway/orders.js';
import { ADMIN_TOKEN, client, READ_TOKEN, startTestGateway } from '../support/in-process-gateway.js';

let gw: Gateway;
before(async () => {
  gw = await startTestGateway('control:\n  health: {engineStaleMs: 300}\n');
});
after(async () => {
  await gw?.close('test done');
});

const stall = (ms: number): void => (gw.state.engine.native as unknown as { __testing_stall(ms: number): void }).__testing_stall(ms);

test('/healthz and /readyz turn 503 with the reason while the engine is stuck in a duty cycle, and 200 again after', async () => {
  const api = client(gw);
  assert.equal((await api.get('/healthz')).status, 200);
  stall(1500);
  let sick;
  for (const end = Date.now() + 1400; Date.now() < end; await sleep(20)) {
    sick = await api.get('/healthz');
    if (sick.status === 503) break;
  }
  assert.equal(sick?.status, 503, 'a stalled engine is not healthy');
  assert.match(String(sick?.json.status), /^engine stalled: no duty cycle completed for \d+ ms \(limit 300 ms\)$/);
  const ready = await api.get('/readyz');
  assert.equal(ready.status, 503);
  assert.match(String(ready.json.reason), /^engine stalled/);
  let well;
  for (const end = Date.now() + 5000; Date.now() < end; await sleep(20)) {
    well = await api.get('/healthz');
    if (well.status === 200) break;
  }
  assert.equal(well?.status, 200, 'healthy again once the cycle completes');
  assert.equal((await api.get('/readyz')).status, 200);
});

test('a replay feed reads only regular files inside feeds.replay.dir: "..", absolute, symlinked and FIFO paths are 400, /healthz answers meanwhile', async () => {
  const api = client(gw);
  const dir = join(gw.state.config.state.dir, 'replay');
  mkdirSync(dir, { recursive: true });
  const good = new TickFileWriter(join(dir, 'good.ticks'));
  good.append({ channel: 1, type: 3, instrumentId: 7, key: 0, action: 0, body: Uint8Array.of(1), snapshot: false }, 0n);
  good.close();
  writeFileSync(join(gw.state.config.state.dir, 'outside.ticks'), 'x');
  symlinkSync('/etc/passwd', join(dir, 'link.ticks'));
  mkdirSync(join(dir, 'sub'));
  symlinkSync('/etc', join(dir, 'sub', 'etc'));
  execFileSync('mkfifo', [join(dir, 'pipe.ticks')]);

  const body = (name: string, file: string, group: number) => ({
    name,
    channels: [{ id: 1, groupA: `239.97.0.${group}` }],
    source: 'replay',
    replay: { file, speed: 0, loop: false },
  });
  const refusals: Array<[string, RegExp]> = [
    ['../../../../etc/passwd', /^body\/replay\/file: replay file "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" is outside the replay directory .*\/replay \(feeds\.replay\.dir\)$/],
    ['../outside.ticks', /is outside the replay directory/],
    ['/etc/passwd', /is outside the replay directory/],
    ['link.ticks', /^body\/replay\/file: replay file "link\.ticks" is a symbolic link; replay files must be regular files$/],
    ['sub/etc/passwd', /^body\/replay\/file: replay file "sub\/etc\/passwd" leaves the replay directory .* through a symbolic link$/],
    ['pipe.ticks', /^body\/replay\/file: replay file "pipe\.ticks" is not a regular file \(a FIFO\)$/],
    ['missing.ticks', /^body\/replay\/file: replay file "missing\.ticks": no such file or directory$/],
  ];
  let group = 1;
  for (const [file, message] of refusals) {
    const health = api.get('/healthz');
    const r = await api.post('/v1/feeds', ADMIN_TOKEN, body(`bad-${group}`, file, group++));
    assert.equal(r.status, 400, `${file}: ${r.status} ${r.text}`);
    assert.equal(r.json.error, 'bad_request');
    assert.match(String(r.json.message), message);
    assert.equal((await health).status, 200);
  }
  // The directory is the gateway's, not the request's.
  const escape = await api.post('/v1/feeds', ADMIN_TOKEN, { ...body('bad-dir', 'passwd', 50), replay: { dir: '/etc', file: 'passwd' } });
  assert.equal(escape.status, 400);
  assert.match(String(escape.json.message), /additional properties/);

  const ok = await api.post('/v1/feeds', ADMIN_TOKEN, body('good', 'good.ticks', 60));
  assert.equal(ok.status, 201, ok.text);
  assert.equal((ok.json as { replay: { stats: { records: number } } }).replay.stats.records, 1);
  assert.equal((await api.delete('/v1/feeds/good', ADMIN_TOKEN)).status, 200);
});

test('/metrics needs a token (any scope) by default; an unknown /v1 path is 401 before it is 404', async () => {
  const api = client(gw);
  const open = await api.get('/metrics');
  assert.equal(open.status, 401);
  assert.equal(open.json.error, 'unauthorized');
  const scraped = await api.get('/metrics', READ_TOKEN);
  assert.equal(scraped.status, 200);
  const age = /^qpgate_engine_heartbeat_age_seconds ([0-9.e-]+)$/m.exec(scraped.text);
  assert.ok(age && Number(age[1]) < 0.3, `heartbeat age ${age?.[1]}`);
  for (const path of ['/v1/nothing-here', '/v1/sessions/x/y', '/v1']) {
    const r = await api.get(path);
    assert.equal(r.status, 401, path);
    assert.deepEqual(r.json, { error: 'unauthorized', message: 'missing bearer token: send "Authorization: Bearer <token>"' });
  }
  assert.equal((await api.get('/v1/nothing-here', READ_TOKEN)).status, 404);
});

test('control.metricsAuth none leaves /metrics open', async () => {
  const open = await startTestGateway('control:\n  metricsAuth: none\n');
  try {
    assert.equal((await client(open).get('/metrics')).status, 200);
  } finally {
    await open.close('test done');
  }
});

test('/readyz is 503 with the reason while a readiness check fails (the order journal), /healthz stays 200', async () => {
  const api = client(gw);
  const failed = { running: true, stats: () => ({ journalFailed: 1, journalFailure: 'journal /x/orders.journal: write: No space left on device' }) };
  const problem = journalProblem(failed as unknown as Parameters<typeof journalProblem>[0]);
  assert.equal(problem, 'order journal failed: journal /x/orders.journal: write: No space left on device');
  assert.equal(journalProblem({ running: true, stats: () => ({ journalFailed: 0, journalFailure: '' }) } as unknown as Parameters<typeof journalProblem>[0]), undefined);
  gw.state.readinessChecks.push(() => problem);
  try {
    const r = await api.get('/readyz');
    assert.equal(r.status, 503);
    assert.deepEqual(r.json, { status: 'not ready', reason: problem });
    assert.equal((await api.get('/healthz')).status, 200);
  } finally {
    gw.state.readinessChecks.pop();
  }
  assert.equal((await api.get('/readyz')).status, 200);
});
