// /v1/sessions on a gateway with order entry (the real native order service):
// the handshake's happy paths, and every refusal with its exact status and
// message — 400 naming the field, 401, 403 naming the entitlement, 404, 409, 503.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gateway } from '../../src/gateway/service.js';
import { call, startOrdersGateway, TOKENS } from '../orders/support.js';

let gw: Gateway;
before(async () => {
  gw = await startOrdersGateway();
});
after(async () => {
  await gw?.close();
});

const post = (token: string | undefined, body: unknown) => call(gw.url, 'POST', '/v1/sessions', token, body);
const trading = (over: Record<string, unknown> = {}) => ({
  role: 'trading',
  name: 'desk-7',
  qpn: 0x1234,
  psn: 4567,
  gid: '::ffff:127.9.9.9',
  mtu: 1024,
  accounts: ['1'],
  ...over,
});

test('POST /v1/sessions opens a trading session: 201 with the gateway QP in RTS and the account page (REMOTE_READ only)', async () => {
  const r = await post(TOKENS.desk, trading());
  assert.equal(r.status, 201, JSON.stringify(r.json));
  const b = r.json;
  assert.equal(b.id, 1);
  assert.equal(b.role, 'trading');
  assert.equal(b.name, 'desk-7');
  assert.deepEqual(b.accounts, ['1']);
  assert.ok(Number.isInteger(b.qpn) && b.qpn > 0 && b.qpn <= 0xffffff);
  assert.ok(Number.isInteger(b.psn) && b.psn >= 0 && b.psn <= 0xffffff);
  assert.equal(b.gid, `::ffff:${gw.state.config.backend.address}`);
  assert.equal(b.mtu, 1024);
  assert.equal(b.regions.length, 1);
  assert.equal(b.regions[0].name, 'risk.local');
  assert.equal(b.regions[0].account, '1');
  assert.deepEqual(b.regions[0].access, ['REMOTE_READ']);
  assert.match(b.regions[0].addr, /^[1-9][0-9]*$/);
  assert.equal(b.regions[0].length, 4096);

  // Listed for the token that opened it (a read token sees only its own sessions).
  const list = await call(gw.url, 'GET', '/v1/sessions', TOKENS.desk);
  assert.equal(list.status, 200);
  assert.equal(list.json.count, 1);
  const s = list.json.sessions[0];
  assert.deepEqual([s.id, s.role, s.name, s.state, s.qpn, s.token, s.connected], [1, 'trading', 'desk-7', 'RTS', b.qpn, 'desk', true]);
  const one = await call(gw.url, 'GET', '/v1/sessions/1', TOKENS.desk);
  assert.equal(one.status, 200);
  assert.equal(one.json.name, 'desk-7');

  // The same name while connected: 409; another token may not close it; its owner may.
  const again = await post(TOKENS.desk, trading());
  assert.equal(again.status, 409);
  assert.deepEqual(again.json, { error: 'conflict', message: 'session "desk-7" (id 1) is connected already; close it first (DELETE /v1/sessions/1)' });
  const notOwner = await call(gw.url, 'DELETE', '/v1/sessions/1', TOKENS.desk2);
  assert.equal(notOwner.status, 404, 'another token\'s session is not found: its existence is not told');
  assert.deepEqual(notOwner.json, { error: 'not_found', message: 'no session 1 on this gateway' });
  const closed = await call(gw.url, 'DELETE', '/v1/sessions/1', TOKENS.desk);
  assert.equal(closed.status, 200, JSON.stringify(closed.json));
  assert.equal(closed.json.id, 1);
  assert.equal(closed.json.closed, true);

  // Reopened under the same name: the same id.
  const reopened = await post(TOKENS.desk, trading({ qpn: 0x4321 }));
  assert.equal(reopened.status, 201, JSON.stringify(reopened.json));
  assert.equal(reopened.json.id, 1);
  // Another name: the next id, persisted in sessions.json.
  const other = await post(TOKENS.desk, trading({ name: 'desk-8', accounts: ['2', '3'] }));
  assert.equal(other.status, 201);
  assert.equal(other.json.id, 2);
  assert.deepEqual(other.json.regions.map((g: { account: string }) => g.account), ['2', '3']);
  const file = JSON.parse(readFileSync(join(gw.state.config.state.dir, 'sessions.json'), 'utf8'));
  assert.deepEqual(file.sessions.map((e: { id: number; token: string; name: string }) => [e.id, e.token, e.name]), [
    [1, 'desk', 'desk-7'],
    [2, 'desk', 'desk-8'],
  ]);
  assert.equal((await call(gw.url, 'DELETE', '/v1/sessions/2', TOKENS.ops)).status, 200, 'an admin token closes any session');
});

test('a risk session gets, per account, the remote-owned page (atomics) and the local-owned page', async () => {
  const r = await post(TOKENS.risk, { ...trading({ role: 'risk', name: 'risk-1' }) });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  assert.deepEqual(
    r.json.regions.map((g: { name: string; account: string; access: string[] }) => [g.name, g.account, [...g.access].sort()]),
    [
      ['risk.remote', '1', ['REMOTE_ATOMIC', 'REMOTE_READ']],
      ['risk.local', '1', ['REMOTE_READ']],
    ],
  );
  // The words' layout comes with the answer, and on its own for any read token.
  const words = (l: { remoteOwned: Array<{ name: string; offset: number }>; localOwned: Array<{ name: string; offset: number }> }) => [
    l.remoteOwned.map((w) => `${w.name}@${w.offset}`),
    l.localOwned.map((w) => `${w.name}@${w.offset}`),
  ];
  const expected = [
    ['credit_limit@0', 'kill_switch@8'],
    ['version@0', 'position@8', 'open_notional@16', 'open_orders@24', 'traded_notional@32', 'durable_credit_limit@40', 'durable_kill_switch@48'],
  ];
  assert.deepEqual(words(r.json.layout), expected);
  const layout = await call(gw.url, 'GET', '/v1/sessions/risk-layout', TOKENS.viewer);
  assert.equal(layout.status, 200);
  assert.equal(layout.json.pageBytes, 4096);
  assert.deepEqual(words(layout.json), expected);
});

test('POST /v1/sessions: bad bodies are 400 naming the field, what was expected and what was given', async () => {
  const cases: Array<[unknown, string]> = [
    [[], 'body: expected a JSON object, got []'],
    [trading({ role: 'trader' }), `body/role: expected one of 'trading', 'risk', 'recovery', got "trader"`],
    [{ ...trading(), role: undefined }, `body/role: required; expected one of 'trading', 'risk', 'recovery'`],
    [trading({ qpn: 'x' }), 'body/qpn: expected the client QP number: an integer 1..16777215 (24 bits), got "x"'],
    [trading({ qpn: 1 << 24 }), 'body/qpn: expected the client QP number: an integer 1..16777215 (24 bits), got 16777216'],
    [trading({ psn: -1 }), 'body/psn: expected the client first send PSN: an integer 0..16777215 (24 bits), got -1'],
    [trading({ mtu: 1000 }), 'body/mtu: expected one of 256, 512, 1024, 2048, 4096, got 1000'],
    [trading({ gid: '127.0.0.1' }), `body/gid: expected an IPv6 address in text form, e.g. '::ffff:127.0.0.1', got "127.0.0.1"`],
    [trading({ name: '-x' }), 'body/name: expected a session name: 1..64 of A-Z a-z 0-9 _ . : - (not starting with a symbol), got "-x"'],
    [trading({ accounts: [1] }), 'body/accounts/0: expected an account: a decimal u64 string, e.g. "1001", got 1'],
    [trading({ accounts: ['99999999999999999999'] }), 'body/accounts: expected accounts of at most 2^64-1, got "99999999999999999999"'],
    [trading({ accounts: [] }), 'body/accounts: required for a trading session; expected at least one account, got []'],
    [trading({ channels: [1] }), 'body/channels: only for recovery sessions, got it on a trading session'],
    [trading({ extra: 1 }), 'body/extra: unknown field; expected one of role, name, qpn, psn, gid, mtu, alternateGid, ackHoldUs, device, accounts, feed, channels'],
    [trading({ alternateGid: '10.1.0.2' }), `body/alternateGid: expected an IPv6 address in text form, e.g. '::ffff:10.1.0.2', got "10.1.0.2"`],
    [trading({ alternateGid: '::ffff:127.9.9.9' }), 'body/alternateGid: expected a GID other than body/gid (a second address), got "::ffff:127.9.9.9" for both'],
    [trading({ device: 'backup' }), `body/device: expected which of the gateway's devices to open on: 'primary' (default) or 'alternate' (backend.alternateDevice). A client fails over with it: a name connected on the other device is closed first (docs/protocol.md §1.11), got "backup"`],
    // A soft gateway has one device: a client that asks for the alternate one is told so, and nothing is opened.
    [trading({ device: 'alternate' }), 'body/device: this gateway has no alternate device (backend.alternateDevice); leave device out or give "primary"'],
    [
      { role: 'recovery', name: 'rec-alt', qpn: 5, psn: 5, gid: '::ffff:127.9.9.9', mtu: 1024, feed: 'default', channels: [1], device: 'alternate' },
      'body/device: this gateway has no alternate device (backend.alternateDevice); leave device out or give "primary"',
    ],
  ];
  for (const [body, message] of cases) {
    const r = await post(TOKENS.ops, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.deepEqual(r.json, { error: 'bad_request', message }, JSON.stringify(body));
  }
  const id = await call(gw.url, 'GET', '/v1/sessions/abc', TOKENS.viewer);
  assert.equal(id.status, 400);
  assert.deepEqual(id.json, { error: 'bad_request', message: 'params/id: expected a session id (an integer 1..4294967295), got "abc"' });
});

test('POST /v1/sessions: 401 without a token, 403 naming the missing entitlement, 404 unknown account or session, 503 no service', async () => {
  const none = await post(undefined, trading());
  assert.equal(none.status, 401);
  assert.equal((await post('not-a-token-0123456789', trading())).status, 401);

  const forbidden: Array<[string, unknown, string]> = [
    [TOKENS.viewer, trading({ name: 'v' }), 'token "viewer" is not entitled to role trading'],
    [TOKENS.desk, trading({ role: 'risk', name: 'r' }), 'token "desk" is not entitled to role risk'],
    [TOKENS.desk2, trading({ name: 'd2', accounts: ['1', '2'] }), 'token "desk2" is not entitled to account 2'],
    [TOKENS.desk, { role: 'recovery', name: 'rec', qpn: 5, psn: 5, gid: '::ffff:127.9.9.9', mtu: 1024, channels: [1] }, 'token "desk" is not entitled to role recovery'],
  ];
  for (const [token, body, message] of forbidden) {
    const r = await post(token, body);
    assert.equal(r.status, 403, message);
    assert.deepEqual(r.json, { error: 'forbidden', message });
  }

  const unknownAccount = await post(TOKENS.ops, trading({ name: 'ops-1', accounts: ['99'] }));
  assert.equal(unknownAccount.status, 404);
  assert.deepEqual(unknownAccount.json, { error: 'not_found', message: 'no account 99 on this gateway (orders.accounts)' });
  const noSession = await call(gw.url, 'GET', '/v1/sessions/999', TOKENS.viewer);
  assert.equal(noSession.status, 404);
  assert.deepEqual(noSession.json, { error: 'not_found', message: 'no session 999 on this gateway' });
  assert.equal((await call(gw.url, 'DELETE', '/v1/sessions/999', TOKENS.ops)).status, 404);

  // This gateway runs no feed, so nothing serves recovery sessions.
  const recovery = await post(TOKENS.ops, { role: 'recovery', name: 'rec', qpn: 5, psn: 5, gid: '::ffff:127.9.9.9', mtu: 1024, feed: 'default', channels: [1] });
  assert.equal(recovery.status, 404);
  assert.deepEqual(recovery.json, { error: 'not_enabled', message: 'no recovery sessions: feed recovery is not enabled on this gateway' });
});

test('a session id survives a gateway restart: the same token and name get the same id', async () => {
  const first = await startOrdersGateway();
  const stateDir = first.state.config.state.dir;
  let id: number;
  try {
    await call(first.url, 'POST', '/v1/sessions', TOKENS.desk, trading({ name: 'a' }));
    const b = await call(first.url, 'POST', '/v1/sessions', TOKENS.desk, trading({ name: 'b' }));
    id = b.json.id;
    assert.equal(id, 2);
  } finally {
    await first.close();
  }
  const second = await startOrdersGateway(undefined, stateDir);
  try {
    const fresh = await call(second.url, 'POST', '/v1/sessions', TOKENS.desk, trading({ name: 'c' }));
    assert.equal(fresh.json.id, 3);
    const b = await call(second.url, 'POST', '/v1/sessions', TOKENS.desk, trading({ name: 'b' }));
    assert.equal(b.status, 201);
    assert.equal(b.json.id, id);
  } finally {
    await second.close();
  }
});
