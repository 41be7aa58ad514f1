// /v1/feeds create, list, read and delete on a gateway that starts without
// its default feed: exact status codes and messages for every bad input, the
// created feed's UD QP in /v1/qps while it lives, and its stats.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../../src/gateway/service.js';
import { MAX_FEEDS } from '../../src/gateway/feed-registry.js';
import { ADMIN_TOKEN, READ_TOKEN, client, startTestGateway } from '../support/in-process-gateway.js';

let gw: Gateway;
let api: ReturnType<typeof client>;

const NO_TOKEN = { error: 'unauthorized', message: 'missing bearer token: send "Authorization: Bearer <token>"' };
const READ_ON_ADMIN = { error: 'forbidden', message: 'token "viewer" has scope read; this route needs admin' };
const NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,62}$';

// Groups of their own per run, so parallel runs on this host do not cross-feed.
const base = `239.${81 + Math.floor(Math.random() * 10)}.${Math.floor(Math.random() * 250)}`;
const group = (n: number) => `${base}.${n}`;
// Small rings: these feeds only need to exist.
const small = { ring: { frames: 64, bytes: 65536 }, snapshotSlots: 64 };
const feed = (name: string, id: number, a: number, b?: number) => ({
  name,
  channels: [{ id, groupA: group(a), ...(b === undefined ? {} : { groupB: group(b) }), ...small }],
  synthetic: { enabled: false },
});

before(async () => {
  gw = await startTestGateway();
  api = client(gw);
});
after(async () => {
  await gw.close('test done');
});

test('without feeds.enabled the gateway starts with no feed and lists none', async () => {
  const r = await api.get('/v1/feeds', READ_TOKEN);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { count: 0, feeds: [] });
  assert.equal((await api.get('/v1/feeds')).status, 401);
});

test('POST /v1/feeds starts a feed: 201 with its session, channels and UD QP, listed in /v1/qps while it lives', async () => {
  const r = await api.post('/v1/feeds', ADMIN_TOKEN, { ...feed('md-a', 5, 1, 2), synthetic: { enabled: true, ratePerSec: 200, seed: 3 } });
  assert.equal(r.status, 201, r.text);
  const b = r.json as any;
  assert.equal(b.name, 'md-a');
  assert.equal(b.origin, 'api');
  assert.equal(b.running, true);
  assert.ok(b.session > 0);
  assert.equal(b.channels.length, 1);
  assert.deepEqual(
    { id: b.channels[0].id, groupA: b.channels[0].groupA, groupB: b.channels[0].groupB, frameSize: b.channels[0].frameSize },
    { id: 5, groupA: group(1), groupB: group(2), frameSize: 1024 },
  );
  assert.deepEqual(b.synthetic.enabled, true);
  assert.equal(b.qp.type, 'UD');
  assert.equal(b.qp.state, 'RTS');
  assert.equal(b.qp.qkey, 0x0feed001);

  const qps = (await api.get('/v1/qps', READ_TOKEN)).json as any;
  const row = qps.qps.find((q: any) => q.qpn === b.qp.qpn);
  assert.ok(row, 'the feed QP is in /v1/qps');
  assert.equal(row.owner, 'feed:md-a');
  assert.equal(row.type, 'UD');
  assert.equal(row.state, 'RTS');
  assert.equal(row.qkey, 0x0feed001);
  assert.equal(typeof row.counters.sent_pkts, 'number');
  assert.equal((await api.get(`/v1/qps/${b.qp.qpn}`, READ_TOKEN)).status, 200);

  // Per-feed stats move while the synthetic source runs.
  const deadline = Date.now() + 5000;
  let one: any;
  do {
    await new Promise((res) => setTimeout(res, 100));
    one = (await api.get('/v1/feeds/md-a', READ_TOKEN)).json;
  } while (one.channels[0].stats.messages < 50 && Date.now() < deadline);
  assert.ok(one.channels[0].stats.messages >= 50, `messages ${one.channels[0].stats.messages}`);
  assert.ok(one.channels[0].stats.frames > 0);
  assert.ok(one.publisher.records > 0);
  assert.ok(one.publishLatency.count > 0);
  assert.ok(one.synthetic.stats.messages > 0);
  const list = (await api.get('/v1/feeds', READ_TOKEN)).json as any;
  assert.equal(list.count, 1);
  assert.equal(list.feeds[0].name, 'md-a');
  const channel = await api.get('/v1/feeds/md-a/channels/5', READ_TOKEN);
  assert.equal(channel.status, 200);
  assert.equal((channel.json as any).groupA, group(1));
  assert.ok((channel.json as any).stats.nextSeq > 1);
  // And /v1/status carries it for the page and `qpgate status`.
  const status = (await api.get('/v1/status', READ_TOKEN)).json as any;
  assert.equal(status.feeds.enabled, true);
  assert.equal(status.feeds.summary.feeds[0].name, 'md-a');
});

test('POST /v1/feeds refuses a taken name or a group another feed publishes: 409', async () => {
  const again = await api.post('/v1/feeds', ADMIN_TOKEN, feed('md-a', 6, 9));
  assert.equal(again.status, 409);
  assert.deepEqual(again.json, { error: 'conflict', message: 'feed "md-a" already exists' });
  const taken = await api.post('/v1/feeds', ADMIN_TOKEN, feed('md-b', 6, 9, 2));
  assert.equal(taken.status, 409);
  assert.deepEqual(taken.json, { error: 'conflict', message: `body/channels/0/groupB ${group(2)} is already published by feed "md-a" (channel 5)` });
  assert.equal(((await api.get('/v1/feeds', READ_TOKEN)).json as any).count, 1, 'nothing was started');
});

test('POST /v1/feeds: bad bodies are 400 with a message naming the field', async () => {
  const ok = feed('md-x', 1, 20);
  const ch = ok.channels[0]!;
  const cases: Array<[unknown, string]> = [
    [{}, "body must have required property 'name'"],
    [{ ...ok, name: 5 }, 'body/name must be string'],
    [{ ...ok, name: 'MD A' }, `body/name must match pattern "${NAME_PATTERN}"`],
    [{ name: 'md-x' }, "body must have required property 'channels'"],
    [{ ...ok, channels: [] }, 'body/channels must NOT have fewer than 1 items'],
    [{ ...ok, channels: [{ id: 1 }] }, "body/channels/0 must have required property 'groupA'"],
    [{ ...ok, channels: [{ ...ch, id: '1' }] }, 'body/channels/0/id must be integer'],
    [{ ...ok, channels: [{ ...ch, id: 70000 }] }, 'body/channels/0/id must be <= 65535'],
    [{ ...ok, channels: [{ ...ch, groupA: 'md.example' }] }, 'body/channels/0/groupA must match pattern'],
    [{ ...ok, channels: [{ ...ch, frameSize: 8192 }] }, 'body/channels/0/frameSize must be <= 4096'],
    [{ ...ok, channels: [{ ...ch, groupA: '10.1.2.3' }] }, 'body/channels/0/groupA must be an IPv4 multicast address (224.0.0.0/4), got 10.1.2.3'],
    [{ ...ok, channels: [{ ...ch, groupB: ch.groupA }] }, `body/channels/0/groupB ${ch.groupA} is also body/channels/0/groupA`],
    [{ ...ok, channels: [ch, { ...ch, groupA: group(21) }] }, 'body: channel 1 is configured twice'],
    [{ ...ok, synthetic: { ratePerSec: 0 } }, 'body/synthetic/ratePerSec must be > 0'],
    [{ ...ok, hopLimit: 0 }, 'body/hopLimit must be >= 1'],
    [{ ...ok, instruments: { map: [{ from: 1, to: 5, channel: 9 }] } }, 'body: instruments 1..5 map to unknown channel 9'],
    [{ ...ok, enabled: true }, 'body must NOT have additional properties'],
    [[], 'body must be object'],
  ];
  for (const [body, message] of cases) {
    const r = await api.post('/v1/feeds', ADMIN_TOKEN, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.error, 'bad_request', JSON.stringify(body));
    if (message.endsWith('must match pattern')) assert.ok(r.json.message?.startsWith(message), r.json.message);
    else assert.equal(r.json.message, message, JSON.stringify(body));
  }
  const notJson = await api.post('/v1/feeds', ADMIN_TOKEN, '{"name":');
  assert.equal(notJson.status, 400);
  assert.equal(notJson.json.error, 'bad_request');
  assert.equal(((await api.get('/v1/feeds', READ_TOKEN)).json as any).count, 1, 'no bad body started a feed');
});

test('/v1/feeds auth: no token 401, a read token on create and delete 403', async () => {
  for (const r of [await api.post('/v1/feeds', undefined, feed('md-z', 1, 30)), await api.delete('/v1/feeds/md-a')]) {
    assert.equal(r.status, 401);
    assert.deepEqual(r.json, NO_TOKEN);
  }
  for (const r of [await api.post('/v1/feeds', READ_TOKEN, feed('md-z', 1, 30)), await api.delete('/v1/feeds/md-a', READ_TOKEN)]) {
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, READ_ON_ADMIN);
  }
  assert.equal((await api.get('/v1/feeds/md-a', READ_TOKEN)).status, 200, 'md-a is still there');
});

test('GET /v1/feeds/:name and its channels: unknown 404, bad names 400', async () => {
  const cases: Array<[string, number, string]> = [
    ['/v1/feeds/md-q', 404, 'no feed named "md-q"'],
    ['/v1/feeds/md-q/channels/1', 404, 'no feed named "md-q"'],
    ['/v1/feeds/md-a/channels/9', 404, 'feed "md-a" has no channel 9'],
    ['/v1/feeds/md-a/channels/x', 400, 'params/id must match pattern "^[0-9]{1,5}$"'],
    ['/v1/feeds/MD_A', 400, `params/name must match pattern "${NAME_PATTERN}"`],
  ];
  for (const [path, status, message] of cases) {
    const r = await api.get(path, READ_TOKEN);
    assert.equal(r.status, status, path);
    assert.deepEqual(r.json, { error: status === 404 ? 'not_found' : 'bad_request', message }, path);
  }
});

test('DELETE /v1/feeds/:name stops the feed, answers its final stats, drops its QP; 404 after', async () => {
  const qpn = ((await api.get('/v1/feeds/md-a', READ_TOKEN)).json as any).qp.qpn as number;
  const r = await api.delete('/v1/feeds/md-a', ADMIN_TOKEN);
  assert.equal(r.status, 200);
  const b = r.json as any;
  assert.equal(b.name, 'md-a');
  assert.equal(b.deleted, true);
  assert.equal(b.running, false);
  assert.ok(b.channels[0].stats.messages > 0, 'final counters');
  assert.deepEqual((await api.get('/v1/feeds/md-a', READ_TOKEN)).json, { error: 'not_found', message: 'no feed named "md-a"' });
  assert.deepEqual((await api.get('/v1/feeds', READ_TOKEN)).json, { count: 0, feeds: [] });
  assert.equal((await api.get(`/v1/qps/${qpn}`, READ_TOKEN)).status, 404);
  assert.equal(((await api.get('/v1/qps', READ_TOKEN)).json as any).count, 0);
  const again = await api.delete('/v1/feeds/md-a', ADMIN_TOKEN);
  assert.equal(again.status, 404);
  assert.deepEqual(again.json, { error: 'not_found', message: 'no feed named "md-a"' });
  const bad = await api.delete('/v1/feeds/-x', ADMIN_TOKEN);
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.json, { error: 'bad_request', message: `params/name must match pattern "${NAME_PATTERN}"` });

  // The name and its groups are free again: a new feed gets a new session.
  const re = await api.post('/v1/feeds', ADMIN_TOKEN, feed('md-a', 5, 1, 2));
  assert.equal(re.status, 201);
  assert.notEqual((re.json as any).session, b.session);
  assert.equal((await api.delete('/v1/feeds/md-a', ADMIN_TOKEN)).status, 200);
});

test(`at most ${MAX_FEEDS} feeds: the next create is 409 and starts nothing`, async () => {
  const names = Array.from({ length: MAX_FEEDS }, (_, i) => `f${i}`);
  try {
    for (const [i, name] of names.entries()) {
      const r = await api.post('/v1/feeds', ADMIN_TOKEN, feed(name, 1, 100 + i));
      assert.equal(r.status, 201, r.text);
    }
    const over = await api.post('/v1/feeds', ADMIN_TOKEN, feed('one-more', 1, 99));
    assert.equal(over.status, 409);
    assert.deepEqual(over.json, { error: 'conflict', message: `this gateway already runs ${MAX_FEEDS} feeds, the most it takes; delete one first` });
    assert.equal(((await api.get('/v1/qps', READ_TOKEN)).json as any).count, MAX_FEEDS);
  } finally {
    for (const name of names) await api.delete(`/v1/feeds/${name}`, ADMIN_TOKEN);
  }
  assert.equal(((await api.get('/v1/feeds', READ_TOKEN)).json as any).count, 0);
});

test('once shutdown has begun (feeds stopped), POST /v1/feeds is 503 and starts nothing', async () => {
  assert.equal((await api.post('/v1/feeds', ADMIN_TOKEN, feed('late', 1, 40))).status, 201);
  // What shutdown's first step does (ControlExtension.stopAccepting), without closing the control plane yet.
  gw.state.feeds!.stopAccepting!();
  assert.deepEqual((await api.get('/v1/feeds', READ_TOKEN)).json, { count: 0, feeds: [] }, 'every feed stopped');
  const r = await api.post('/v1/feeds', ADMIN_TOKEN, feed('later', 1, 41));
  assert.equal(r.status, 503);
  assert.deepEqual(r.json, { error: 'unavailable', message: 'the gateway is shutting down: no new feeds' });
  assert.equal(((await api.get('/v1/qps', READ_TOKEN)).json as any).count, 0);
});
