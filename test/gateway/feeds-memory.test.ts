// The feeds' memory budgets: a config whose feed would reserve more than
// feeds.feedMemoryBudgetBytes (or feeds.memoryBudgetBytes) is refused at
// load with a message naming the key; a POST /v1/feeds over either budget is
// a 400 / 409 with nothing allocated; what each feed reserved is in its
// status and on /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../../src/gateway/service.js';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';
import { channelReservedBytes, feedReservedBytes } from '../../src/feed/memory.js';
import { resolveFeedsConfig } from '../../src/feed/config.js';
import { ADMIN_TOKEN, READ_TOKEN, client, startTestGateway } from '../support/in-process-gateway.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';

const MiB = 2 ** 20;

function problemsOf(overrides: string[]): string[] {
  try {
    loadConfig({ env: {}, overrides });
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
  assert.fail('expected the configuration to be rejected');
}

const defaultChannels = (n: number) => `feeds.channels=[${Array.from({ length: n }, (_, i) => `{id: ${i + 1}, groupA: 239.77.1.${i + 1}}`).join(', ')}]`;

test('a channel over the per-feed budget alone is refused at load, naming the channel and the budget key', () => {
  const set = 'feeds.channels=[{id: 1, groupA: 239.77.0.1}, {id: 2, groupA: 239.77.0.3, ring: {frames: 65536, bytes: 1073741824}}]';
  assert.deepEqual(problemsOf([set]), [
    `feeds.channels[1] (from --set ${set}): ring 1.0 GiB + snapshots 4.5 MiB exceeds the per-feed budget of 512.0 MiB (feeds.feedMemoryBudgetBytes)`,
  ]);
});

test('8 channels of the default size (556 MiB) are over the default per-feed budget; raising it lets them load', () => {
  assert.deepEqual(problemsOf([defaultChannels(8)]), [
    `feeds.channels (from --set ${defaultChannels(8)}): 8 channels reserve 556.0 MiB + send slots 256.0 KiB = 556.3 MiB, which exceeds the per-feed budget of 512.0 MiB (feeds.feedMemoryBudgetBytes)`,
  ]);
  const cfg = loadConfig({ env: {}, overrides: [defaultChannels(8), 'feeds.feedMemoryBudgetBytes=1073741824'] });
  assert.equal(cfg.feeds.channels.length, 8);
});

test('a per-feed budget above the gateway budget is refused, and so is a budget below 1 MiB', () => {
  assert.deepEqual(problemsOf(['feeds.feedMemoryBudgetBytes=2147483648']), [
    'feeds.feedMemoryBudgetBytes (from --set feeds.feedMemoryBudgetBytes=2147483648): expected at most feeds.memoryBudgetBytes (1.0 GiB), got 2.0 GiB',
  ]);
  assert.match(problemsOf(['feeds.memoryBudgetBytes=1000'])[0]!, /^feeds\.memoryBudgetBytes \(from --set feeds\.memoryBudgetBytes=1000\): expected integer to be greater or equal to 1048576, got 1000$/);
});

let gw: Gateway;
let api: ReturnType<typeof client>;
const base = `239.${91 + Math.floor(Math.random() * 5)}.${Math.floor(Math.random() * 250)}`;
// 3 MiB of ring + 16 KiB of index + 72 KiB of snapshots: two of these do not fit a 5 MiB gateway budget.
const channel = (id: number, bytes = 3 * MiB) => ({ id, groupA: `${base}.${id}`, ring: { frames: 1024, bytes }, snapshotSlots: 256 });
const feed = (name: string, ch: object) => ({ name, channels: [ch], synthetic: { enabled: false } });

before(async () => {
  gw = await startTestGateway(`feeds:\n  enabled: false\n  feedMemoryBudgetBytes: ${4 * MiB}\n  memoryBudgetBytes: ${5 * MiB}\n`);
  api = client(gw);
});
after(async () => {
  await gw.close('test done');
});

test('POST /v1/feeds over the per-feed budget is 400 naming the channel; nothing is started', async () => {
  const r = await api.post('/v1/feeds', ADMIN_TOKEN, feed('big', channel(1, 8 * MiB)));
  assert.equal(r.status, 400, r.text);
  assert.deepEqual(r.json, {
    error: 'bad_request',
    message: 'body/channels/0: ring 8.0 MiB + snapshots 72.3 KiB exceeds the per-feed budget of 4.0 MiB (feeds.feedMemoryBudgetBytes)',
  });
  assert.equal(((await api.get('/v1/feeds', READ_TOKEN)).json as { count: number }).count, 0);
});

test('a feed shows what it reserved; the next one over the gateway budget is 409; deleting the first makes room', async () => {
  const a = await api.post('/v1/feeds', ADMIN_TOKEN, feed('first', channel(2)));
  assert.equal(a.status, 201, a.text);
  const view = a.json as { reservedBytes: number; channels: Array<{ stats: { reservedBytes: number } }> };
  const cfg = resolveFeedsConfig({ channels: [channel(2)] });
  assert.equal(view.reservedBytes, feedReservedBytes(cfg));
  assert.equal(view.channels[0]!.stats.reservedBytes, channelReservedBytes(cfg.channels[0]!));

  const metrics = parsePrometheusText((await api.get('/metrics', READ_TOKEN)).text);
  assert.equal(sampleValue(metrics, 'qpgate_feed_reserved_bytes', { feed: 'first', channel: '2' }), channelReservedBytes(cfg.channels[0]!));
  assert.equal(sampleValue(metrics, 'qpgate_feed_send_slot_bytes', { feed: 'first' }), 256 * 1024);
  assert.equal(sampleValue(metrics, 'qpgate_feeds_memory_budget_bytes'), 5 * MiB);
  assert.equal(sampleValue(metrics, 'qpgate_engine_task_errors_total'), 0);

  const b = await api.post('/v1/feeds', ADMIN_TOKEN, feed('second', channel(3)));
  assert.equal(b.status, 409, b.text);
  assert.deepEqual(b.json, {
    error: 'conflict',
    message: 'body: feed "second" would reserve 3.3 MiB, but the gateway\'s feeds already reserve 3.3 MiB of its budget of 5.0 MiB (feeds.memoryBudgetBytes): 1.7 MiB left',
  });
  assert.equal((await api.delete('/v1/feeds/first', ADMIN_TOKEN)).status, 200);
  const again = await api.post('/v1/feeds', ADMIN_TOKEN, feed('second', channel(3)));
  assert.equal(again.status, 201, again.text);
  assert.equal((await api.delete('/v1/feeds/second', ADMIN_TOKEN)).status, 200);
});

test('a feed body cannot raise the budgets: they are the gateway config\'s', async () => {
  const r = await api.post('/v1/feeds', ADMIN_TOKEN, { ...feed('sneaky', channel(4, 8 * MiB)), feedMemoryBudgetBytes: 64 * MiB });
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.message!, /must NOT have additional properties/);
});
