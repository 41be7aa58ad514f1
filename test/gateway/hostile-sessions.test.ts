// POST /v1/sessions against a client that opens session after session
// (issue 13, item 4): per-token and gateway-wide caps answer 429 and are
// counted; listings show a read token only its own sessions (item 10);
// sessions.json is written off the event loop, coalesced, and still durable.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';
import { SessionIds } from '../../src/gateway/sessions/session-ids.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { call, ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from '../orders/support.js';

let gw: Gateway;
before(async () => {
  const { dir, file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  const config = loadConfig({
    env: {},
    file,
    overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`, 'control.sessions.maxPerToken=3', 'control.sessions.maxTotal=5'],
  });
  gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
});
after(async () => {
  await gw?.close();
});

const trading = (name: string, qpn: number, accounts = ['1']) => ({ role: 'trading', name, qpn, psn: 1, gid: '::ffff:127.9.9.9', mtu: 1024, accounts });
const post = (token: string, body: unknown) => call(gw.url, 'POST', '/v1/sessions', token, body);

test('sessions are capped per token and per gateway: 429 naming the cap, counted, and a closed session frees its place', async () => {
  // 20 at once from one read-scoped trading token: exactly maxPerToken (3) are opened.
  const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => post(TOKENS.desk, trading(`flood-${i}`, 100 + i))));
  const opened = burst.filter((r) => r.status === 201);
  const refused = burst.filter((r) => r.status === 429);
  assert.equal(opened.length, 3, burst.map((r) => `${r.status} ${r.json?.message}`).join('\n'));
  assert.equal(refused.length, 17);
  assert.deepEqual(refused[0]!.json, {
    error: 'too_many_requests',
    message: 'token "desk" holds 3 sessions, the most control.sessions.maxPerToken allows; close one first (DELETE /v1/sessions/:id)',
  });
  // Two more from another token reach maxTotal (5); the next one, even an admin's, is refused.
  assert.equal((await post(TOKENS.desk2, trading('d2-a', 200))).status, 201);
  assert.equal((await post(TOKENS.desk2, trading('d2-b', 201))).status, 201);
  const full = await post(TOKENS.ops, trading('ops-a', 300));
  assert.equal(full.status, 429);
  assert.deepEqual(full.json, { error: 'too_many_requests', message: 'the gateway holds 5 sessions, the most control.sessions.maxTotal allows; try again once some close' });

  const scraped = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TOKENS.viewer}` } });
  const metrics = parsePrometheusText(await scraped.text());
  assert.equal(sampleValue(metrics, 'qpgate_control_sessions_refused_total', { limit: 'maxPerToken' }), 17);
  assert.equal(sampleValue(metrics, 'qpgate_control_sessions_refused_total', { limit: 'maxTotal' }), 1);

  // Closing one frees a place; reopening a held name does not need one.
  const id = opened[0]!.json.id as number;
  assert.equal((await call(gw.url, 'DELETE', `/v1/sessions/${id}`, TOKENS.desk)).status, 200);
  assert.equal((await post(TOKENS.ops, trading('ops-a', 301))).status, 201);
  assert.equal((await post(TOKENS.desk, trading('flood-new', 400))).status, 429);
});

test('a read token lists and reads only its own sessions; an admin token sees every one', async () => {
  const all = await call(gw.url, 'GET', '/v1/sessions', TOKENS.ops);
  const owners = new Set((all.json.sessions as Array<{ token: string }>).map((s) => s.token));
  assert.deepEqual([...owners].sort(), ['desk', 'desk2', 'ops']);
  const mine = await call(gw.url, 'GET', '/v1/sessions', TOKENS.desk2);
  assert.equal(mine.status, 200);
  assert.deepEqual((mine.json.sessions as Array<{ token: string }>).map((s) => s.token), ['desk2', 'desk2']);
  assert.equal(mine.json.count, 2);
  assert.equal((await call(gw.url, 'GET', '/v1/sessions', TOKENS.viewer)).json.count, 0);
  const other = (all.json.sessions as Array<{ id: number; token: string }>).find((s) => s.token === 'desk')!;
  const peek = await call(gw.url, 'GET', `/v1/sessions/${other.id}`, TOKENS.desk2);
  assert.equal(peek.status, 404);
  assert.deepEqual(peek.json, { error: 'not_found', message: `no session ${other.id} on this gateway` });
  assert.equal((await call(gw.url, 'GET', `/v1/sessions/${other.id}`, TOKENS.desk)).status, 200);
});

test('sessions.json: 200 names acquired at once cost a few coalesced writes, all durable and restored after a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-ids-'));
  const ids = new SessionIds(dir);
  // The event loop stays free while they are written: a timer fires before the writes finish.
  let ticked = false;
  setImmediate(() => (ticked = true));
  const pending = Array.from({ length: 200 }, (_, i) => ids.acquire('desk', `s-${i}`, 'trading'));
  assert.equal(ticked, false);
  const entries = await Promise.all(pending);
  assert.equal(ticked, true, 'acquire() did not hold the event loop');
  assert.deepEqual(entries.map((e) => e.id), Array.from({ length: 200 }, (_, i) => i + 1));
  assert.ok(ids.writes <= 3, `${ids.writes} writes for 200 new names`);
  const file = JSON.parse(readFileSync(join(dir, 'sessions.json'), 'utf8')) as { sessions: Array<{ id: number; name: string }> };
  assert.equal(file.sessions.length, 200);
  const again = new SessionIds(dir);
  assert.equal((await again.acquire('desk', 's-137', 'trading')).id, 138);
  assert.equal((await again.acquire('desk', 'fresh', 'trading')).id, 201);
});

test('the order journal is created 0600 (an older 0644 one is tightened at open)', async () => {
  const journal = join(gw.state.config.state.dir, 'orders.journal');
  assert.equal(statSync(journal).mode & 0o777, 0o600);
  // The journal's state reaches /readyz: ready while it has not failed.
  const ready = await call(gw.url, 'GET', '/readyz');
  assert.equal(ready.status, 200, JSON.stringify(ready.json));
});

test('session names are kept for good and capped per token: a new name past maxNamesPerToken is 429, after a restart too; an old one reopens', async () => {
  const { dir, file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  const start = () =>
    startGateway(
      loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`, 'control.sessions.maxNamesPerToken=4'] }),
      createLogger('silent'),
      { handleSignals: false },
    );
  let g = await start();
  try {
    const open = (token: string, name: string, qpn: number) => call(g.url, 'POST', '/v1/sessions', token, trading(name, qpn));
    // One at a time, each closed before the next: the held-sessions caps never bite, the names cap does.
    for (let i = 0; i < 4; i++) {
      const r = await open(TOKENS.desk, `name-${i}`, 500 + i);
      assert.equal(r.status, 201, JSON.stringify(r.json));
      assert.equal((await call(g.url, 'DELETE', `/v1/sessions/${r.json.id}`, TOKENS.desk)).status, 200);
    }
    const fifth = await open(TOKENS.desk, 'name-4', 504);
    assert.equal(fifth.status, 429);
    assert.deepEqual(fifth.json, {
      error: 'too_many_requests',
      message:
        'token "desk" has used 4 session names, the most control.sessions.maxNamesPerToken allows; reuse one of them (a name is kept for good: its id holds the journal\'s state for it)',
    });
    assert.equal((await open(TOKENS.desk2, 'name-0', 600)).status, 201, "another token's names are its own");
    const metrics = parsePrometheusText(await (await fetch(`${g.url}/metrics`, { headers: { authorization: `Bearer ${TOKENS.viewer}` } })).text());
    assert.equal(sampleValue(metrics, 'qpgate_control_sessions_refused_total', { limit: 'maxNamesPerToken' }), 1);
    await g.close();

    g = await start();
    assert.equal((await open(TOKENS.desk, 'name-5', 505)).status, 429, 'the names used are counted from sessions.json');
    const again = await open(TOKENS.desk, 'name-2', 506);
    assert.equal(again.status, 201, JSON.stringify(again.json));
    assert.equal(again.json.id, 3, 'an old name keeps its id');
    const names = (JSON.parse(readFileSync(join(dir, 'sessions.json'), 'utf8')) as { sessions: Array<{ token: string }> }).sessions;
    assert.equal(names.filter((s) => s.token === 'desk').length, 4);
  } finally {
    await g.close();
  }
});
