// The embedded default publishes the synthetic feed: a trading app on another
// soft device subscribes with the client library and receives it, and the
// control plane shows the feed and its publish latency.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { subscribe, type FeedMessage, type FeedSubscriber } from '../../src/feed/subscriber.js';
import { MessageType } from '../../src/feed/messages.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { ADMIN_TOKEN, READ_TOKEN, client, startTestGateway } from '../support/in-process-gateway.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import type { Gateway } from '../../src/gateway/service.js';

let gw: Gateway;
let sub: FeedSubscriber;
const received: FeedMessage[] = [];

before(async () => {
  // Distinct groups per run, so parallel gateways on this host do not cross-feed.
  const a = `239.78.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const b = a.replace(/^239\.78\./, '239.79.');
  gw = await startTestGateway(
    `feeds:\n  channels:\n    - id: 1\n      groupA: ${a}\n      groupB: ${b}\n  synthetic:\n    ratePerSec: 2000\n    seed: 7\n`,
  );
  sub = await subscribe({
    engineOptions: {},
    device: { address: freeLoopbackAddress() },
    channels: [{ id: 1, groupA: a, groupB: b }],
    onMessage: (m) => received.push(m),
  });
});

after(async () => {
  await sub?.close();
  await gw?.close('test done');
});

test('a subscriber receives the gateway\'s synthetic feed in order, A/B arbitrated, with decodable bodies', async () => {
  const deadline = Date.now() + 10_000;
  while (received.length < 500 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.ok(received.length >= 500, `received ${received.length} messages in 10 s`);
  for (let i = 1; i < received.length; i++) {
    assert.equal(received[i]!.seq, received[i - 1]!.seq + 1n, `message ${i} follows ${i - 1}`);
  }
  const stats = sub.stats().channels[0]!;
  assert.ok(stats.duplicates > 0, 'line B copies were dropped as duplicates');
  assert.equal(stats.gaps, 0);
  const quote = received.find((m) => m.type === MessageType.MESSAGE_TYPE_QUOTE);
  assert.ok(quote, 'quotes are published');
  const decoded = quote.decode();
  assert.equal(decoded?.type, MessageType.MESSAGE_TYPE_QUOTE);
});

test('/v1/feeds lists the default feed with its channel\'s sequence, and /metrics exports the publish latency', async () => {
  const api = client(gw);
  const feeds = await api.get('/v1/feeds', READ_TOKEN);
  assert.equal(feeds.status, 200);
  const list = feeds.json as unknown as { count: number; feeds: Array<{ name: string; origin: string; channels: Array<{ id: number; stats: { nextSeq: number } }> }> };
  assert.equal(list.count, 1);
  assert.equal(list.feeds[0]!.name, 'default');
  assert.equal(list.feeds[0]!.origin, 'config');
  const channel = list.feeds[0]!.channels[0]!;
  assert.equal(channel.id, 1);
  assert.ok(channel.stats.nextSeq > 1);
  assert.equal((await api.get('/v1/feeds/default/channels/9', READ_TOKEN)).status, 404);
  assert.equal((await api.get('/v1/feeds/default/channels/x', READ_TOKEN)).status, 400);

  const metrics = parsePrometheusText((await api.get('/metrics', READ_TOKEN)).text);
  const family = metrics.get('qpgate_tick_publish_latency_seconds');
  assert.equal(family?.type, 'histogram');
  const count = family!.samples.find((s) => s.name === 'qpgate_tick_publish_latency_seconds_count');
  assert.ok(count && count.value > 0, 'publish latencies were recorded by the engine');
  const slo = await api.post('/v1/slo/evaluate', ADMIN_TOKEN);
  const tick = (slo.json as { objectives: Array<{ name: string; status: string }> }).objectives.find((o) => o.name === 'tick-publish-p99');
  assert.ok(tick && tick.status !== 'no data source', `tick-publish SLO is evaluated (${tick?.status})`);
});

test('the default feed\'s UD QP is in /v1/qps (RTS, the feed Q_Key) with packet counters that grow', async () => {
  const api = client(gw);
  const qps = (await api.get('/v1/qps', READ_TOKEN)).json as unknown as { qps: Array<{ qpn: number; owner: string; type: string; state: string; qkey: number; counters: { sent_pkts: number } }> };
  const row = qps.qps.find((q) => q.owner === 'feed:default');
  assert.ok(row, JSON.stringify(qps));
  assert.equal(row.type, 'UD');
  assert.equal(row.state, 'RTS');
  assert.equal(row.qkey, 0x0feed001);
  await new Promise((r) => setTimeout(r, 300));
  const later = (await api.get(`/v1/qps/${row.qpn}`, READ_TOKEN)).json as unknown as { counters: { sent_pkts: number } };
  assert.ok(later.counters.sent_pkts > row.counters.sent_pkts, `${later.counters.sent_pkts} > ${row.counters.sent_pkts}`);
  const metrics = parsePrometheusText((await api.get('/metrics', READ_TOKEN)).text);
  assert.equal(sampleValue(metrics, 'qpgate_qp_state', { qpn: String(row.qpn), type: 'UD', owner: 'feed:default', state: 'RTS' }), 3);
  assert.ok(sampleValue(metrics, 'qpgate_feed_messages_total', { feed: 'default', channel: '1' })! > 0);
});
