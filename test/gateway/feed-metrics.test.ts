// /metrics against what the test itself sent, parsed by the strict
// Prometheus text parser: a feed created over /v1/feeds publishes exactly
// the batches the test hands it (no synthetic source, heartbeats an hour apart), a
// subscriber receives them, and the message, record, frame and packet
// counters and the tick_publish histogram count equal those numbers. Then
// packets the gateway must drop (truncated datagrams, a UD SEND with the
// wrong Q_Key to the feed's QP) are counted by reason, one for one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import type { Gateway } from '../../src/gateway/service.js';
import type { FeedRegistry } from '../../src/gateway/feed-registry.js';
import type { FeedPublisher } from '../../src/feed/publisher.js';
import { subscribe, type FeedSubscriber } from '../../src/feed/subscriber.js';
import { MessageType, type MarketDataMessage } from '../../src/feed/messages.js';
import type { NativeEngine } from '../../src/native/addon.js';
import { ADMIN_TOKEN, READ_TOKEN, client, startTestGateway } from '../support/in-process-gateway.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { parsePrometheusText, sampleValue, type Family } from '../support/prometheus-text.js';
import { node, startEngine, udQp, QKEY } from '../native/verbs-helpers.js';

const BATCHES = 40;
const PER_BATCH = 5;
const CHANNEL = 3;

let gw: Gateway;
let api: ReturnType<typeof client>;
let sub: FeedSubscriber;
let publisher: FeedPublisher;
let received = 0;
const a = `239.94.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
const b = a.replace(/^239\.94\./, '239.95.');

before(async () => {
  gw = await startTestGateway();
  api = client(gw);
  const r = await api.post('/v1/feeds', ADMIN_TOKEN, {
    name: 'counted',
    // No heartbeats while the test runs: every frame on the wire is one the test caused.
    channels: [{ id: CHANNEL, groupA: a, groupB: b, heartbeatMs: 3_600_000, ring: { frames: 1024, bytes: 1 << 20 }, snapshotSlots: 256 }],
    synthetic: { enabled: false },
  });
  assert.equal(r.status, 201, r.text);
  const registry = (gw.state.feeds as unknown as { registry: FeedRegistry }).registry;
  publisher = registry.get('counted')!.service.publisher!;
  sub = await subscribe({
    engineOptions: {},
    device: { address: freeLoopbackAddress() },
    channels: [{ id: CHANNEL, groupA: a, groupB: b }],
    onMessage: () => received++,
  });
});

after(async () => {
  await sub?.close();
  await gw?.close('test done');
});

const scrape = async (): Promise<Map<string, Family>> => {
  const r = await api.get('/metrics', READ_TOKEN);
  assert.equal(r.status, 200);
  return parsePrometheusText(r.text);
};

const waitFor = async (what: string, done: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('feed counters and the tick_publish histogram count what the test published', async () => {
  const before = await scrape();
  assert.equal(sampleValue(before, 'qpgate_feed_messages_total', { feed: 'counted', channel: String(CHANNEL) }), 0);
  assert.equal(sampleValue(before, 'qpgate_tick_publish_latency_seconds_count'), 0);
  assert.equal(sampleValue(before, 'qpgate_feeds'), 1);

  for (let i = 0; i < BATCHES; i++) {
    const batch = Array.from({ length: PER_BATCH }, (_, k): MarketDataMessage => ({
      type: MessageType.MESSAGE_TYPE_QUOTE,
      value: { instrumentId: 1 + k, bidPrice: 100 + i, askPrice: 101 + i, bidSize: 10, askSize: 12 },
    }));
    assert.equal(publisher.publish(CHANNEL, batch), true);
    // One record per call, and a frame boundary now and then.
    if (i % 8 === 7) await new Promise((r) => setTimeout(r, 5));
  }
  const total = BATCHES * PER_BATCH;
  await waitFor(`${total} messages at the subscriber`, () => received >= total);
  await waitFor('the publish latency of every record', () => publisher.stats().publishLatency.count >= BATCHES);
  assert.equal(received, total);

  const m = await scrape();
  const labels = { feed: 'counted', channel: String(CHANNEL) };
  assert.equal(sampleValue(m, 'qpgate_feed_messages_total', labels), total);
  assert.equal(sampleValue(m, 'qpgate_feed_next_sequence', labels), total + 1);
  assert.equal(sampleValue(m, 'qpgate_feed_publish_records_total', { feed: 'counted' }), BATCHES);
  assert.equal(sampleValue(m, 'qpgate_feed_rejected_records_total', { feed: 'counted' }), 0);
  // At most the heartbeat that announces the session when the feed starts (then none for an hour).
  const heartbeats = sampleValue(m, 'qpgate_feed_heartbeats_total', labels)!;
  assert.ok(heartbeats <= 1, `heartbeats ${heartbeats}`);
  assert.equal(sampleValue(m, 'qpgate_tick_publish_latency_seconds_count'), BATCHES);
  assert.equal(sampleValue(m, 'qpgate_tick_publish_latency_seconds_bucket', { le: '+Inf' }), BATCHES);

  // Frames: what the subscriber delivered; each went out on both lines.
  const frames = sampleValue(m, 'qpgate_feed_frames_total', labels)!;
  const subStats = sub.stats().channels[0]!;
  assert.equal(frames, subStats.frames);
  assert.ok(frames >= 1 && frames <= BATCHES, `frames ${frames}`);
  assert.equal(sampleValue(m, 'qpgate_feed_retransmit_ring_frames', labels), frames);
  const qpn = String(((await api.get('/v1/feeds/counted', READ_TOKEN)).json as any).qp.qpn);
  assert.equal(sampleValue(m, 'qpgate_qp_packets_total', { qpn, direction: 'tx' }), 2 * (frames + heartbeats));
  assert.equal(sampleValue(m, 'qpgate_net_packets_total', { direction: 'tx' }), 2 * (frames + heartbeats));
  assert.equal(sampleValue(m, 'qpgate_qps', { type: 'UD', state: 'RTS' }), 1);
  // Bytes: the sum of the frames' sizes (counted once per frame).
  const bytes = sampleValue(m, 'qpgate_feed_bytes_total', labels)!;
  assert.ok(bytes > total * 10 && bytes < frames * 1024 + 1, `bytes ${bytes}`);
});

test('drops are counted by reason, one for each packet the test sent', async () => {
  const device = gw.state.device!;
  const drops = (m: Map<string, Family>, stage: string, reason: string) => sampleValue(m, 'qpgate_packet_drops_total', { stage, reason }) ?? 0;
  const before = await scrape();

  // Three datagrams too short for a BTH.
  const sock = createSocket('udp4');
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve, reject) => sock.send(Buffer.from([1, 2, 3, i]), 4791, device.address, (e) => (e ? reject(e) : resolve())));
  sock.close();

  // Four UD SENDs to the feed's QP with a Q_Key that is not the feed's.
  const qpn = ((await api.get('/v1/feeds/counted', READ_TOKEN)).json as any).qp.qpn as number;
  const engine: NativeEngine = startEngine();
  const peer = node(engine, freeLoopbackAddress());
  try {
    const qp = udQp(peer);
    const ah = peer.pd.createAh({ dgid: device.gid });
    qp.postSend([0, 1, 2, 3].map((i) => ({ wrId: BigInt(i), sgList: [peer.mr.sge(0, 16)], ah, remoteQpn: qpn, remoteQkey: QKEY })));
    await waitFor('the bad Q_Key drops', async () => drops(await scrape(), 'ingress', 'bad_qkey') - drops(before, 'ingress', 'bad_qkey') >= 4);
    await waitFor('the truncated drops', async () => drops(await scrape(), 'wire', 'truncated') - drops(before, 'wire', 'truncated') >= 3);
    const m = await scrape();
    assert.equal(drops(m, 'ingress', 'bad_qkey') - drops(before, 'ingress', 'bad_qkey'), 4);
    assert.equal(drops(m, 'wire', 'truncated') - drops(before, 'wire', 'truncated'), 3);
    // The port's Q_Key violation counter agrees (ibv_query_port's qkey_viol_cntr).
    assert.equal(device.queryPort(1).qkeyViolCntr, drops(m, 'ingress', 'bad_qkey'));
  } finally {
    engine.stop(); // with the peer's device and QP
  }
});
