// The live feed end to end in one process: a publisher and subscribers on
// soft devices (loopback addresses 127.78.x.y, groups 239.78.x.y), through
// the TS APIs, the engine rings and the native feed agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { encodeFrame, type MessageInput } from '../../src/feed/frame.js';
import { MessageType, toBigInt } from '../../src/feed/messages.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { createPublisher, type FeedPublisher } from '../../src/feed/publisher.js';
import { subscribe, type FeedGap, type FeedMessage, type FeedSessionChange, type FeedSubscriber } from '../../src/feed/subscriber.js';
import { SyntheticSource } from '../../src/feed/sources/synthetic.js';
import { FeedService } from '../../src/feed/service.js';
import { startFeedEngine, until } from '../support/feed-engine.js';

const QKEY = 0x0feed001;

function quote(i: number): { type: typeof MessageType.MESSAGE_TYPE_QUOTE; value: { instrumentId: number; bidPrice: number; askPrice: number; bidSize: number } } {
  return { type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + (i % 50), bidPrice: 10_000 + i, askPrice: 10_002 + i, bidSize: i } };
}

interface Collected {
  messages: FeedMessage[];
  gaps: FeedGap[];
  sessions: FeedSessionChange[];
}

async function collect(e: Engine, address: string, channels: Array<{ id: number; groupA: string; groupB?: string; maxWaitUs?: number }>): Promise<[FeedSubscriber, Collected]> {
  const got: Collected = { messages: [], gaps: [], sessions: [] };
  const sub = await subscribe({
    engine: e,
    device: { address },
    channels,
    maxFrameSize: 1024,
    onMessage: (m) => got.messages.push(m),
    onGap: (g) => got.gaps.push(g),
    onSession: (s) => got.sessions.push(s),
  });
  return [sub, got];
}

test('every message published arrives once, in order, decoded right (A and B lines)', async () => {
  const e = await startFeedEngine();
  try {
    const pubDev = openFeedDevice(e, { address: '127.78.1.1' });
    const pub = createPublisher(e, pubDev, { channels: [{ id: 1, groupA: '239.78.1.1', groupB: '239.78.1.2' }], instruments: { 1: 1 } });
    const [sub, got] = await collect(e, '127.78.1.3', [{ id: 1, groupA: '239.78.1.1', groupB: '239.78.1.2' }]);
    await sleep(10);
    const N = 5000;
    for (let i = 0; i < N; i += 100) pub.publish(1, Array.from({ length: 100 }, (_, k) => quote(i + k)));
    await until(() => got.messages.length >= N);
    await sleep(20);
    assert.equal(got.messages.length, N);
    got.messages.forEach((m, i) => {
      assert.equal(m.seq, BigInt(i + 1));
      assert.equal(m.channel, 1);
      assert.equal(m.session, pub.session);
      const d = m.decode();
      assert.ok(d !== undefined && d.type === MessageType.MESSAGE_TYPE_QUOTE);
      assert.equal(toBigInt(d.value.bidPrice), BigInt(10_000 + i));
      assert.equal(d.value.instrumentId, 1 + (i % 50));
    });
    assert.deepEqual(got.gaps, []);
    assert.equal(got.sessions.length, 1);
    const s = sub.stats().channels[0]!;
    assert.equal(s.received, N);
    assert.equal(s.gaps, 0);
    assert.equal(s.unrecoverable, 0);
    assert.equal(s.recovered, 0);
    assert.equal(s.lineAFrames, s.frames);
    assert.equal(s.lineBFrames, s.frames);
    assert.equal(s.duplicates, s.frames);
    assert.ok(s.latency.count === s.frames && s.latency.p50Ns > 0 && s.latency.p99Ns >= s.latency.p50Ns);
    const ps = pub.stats();
    assert.equal(ps.channels[0]!.messages, N);
    assert.equal(ps.publishLatency.count, ps.records);
    console.log(
      `publish latency p50 ${(ps.publishLatency.p50Ns / 1000).toFixed(1)} us p99 ${(ps.publishLatency.p99Ns / 1000).toFixed(1)} us; ` +
        `e2e p50 ${(s.latency.p50Ns / 1000).toFixed(1)} us p99 ${(s.latency.p99Ns / 1000).toFixed(1)} us; ${s.frames} frames`,
    );
    pub.close();
    await sub.close();
  } finally {
    await e.stop();
  }
});

test('line A lost for a range: the A-only subscriber reports the gap, B fills it for the A+B subscriber', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.2.1' }), { channels: [{ id: 2, groupA: '239.78.2.1', groupB: '239.78.2.2' }] });
    const [both, gotBoth] = await collect(e, '127.78.2.3', [{ id: 2, groupA: '239.78.2.1', groupB: '239.78.2.2' }]);
    const [aOnly, gotA] = await collect(e, '127.78.2.4', [{ id: 2, groupA: '239.78.2.1', maxWaitUs: 500 }]);
    await sleep(10);
    const send = async (from: number, n: number): Promise<void> => {
      pub.publish(2, Array.from({ length: n }, (_, k) => quote(from + k)));
      await until(() => gotBoth.messages.length >= from + n - 1);
    };
    await send(1, 20);
    pub.setLines({ a: false, b: true });
    await send(21, 30);
    pub.setLines({ a: true, b: true });
    await send(51, 10);
    await until(() => gotA.gaps.length > 0 && gotA.messages.length >= 30);
    await sleep(20);
    assert.deepEqual(gotBoth.messages.map((m) => Number(m.seq)), Array.from({ length: 60 }, (_, i) => i + 1));
    assert.deepEqual(gotBoth.gaps, []);
    assert.deepEqual(gotA.gaps, [{ channel: 2, fromSeq: 21n, count: 30n, recoverable: false }]);
    assert.deepEqual(gotA.messages.map((m) => Number(m.seq)), [...Array.from({ length: 20 }, (_, i) => i + 1), ...Array.from({ length: 10 }, (_, i) => 51 + i)]);
    const sa = aOnly.stats().channels[0]!;
    assert.equal(sa.gaps, 1);
    assert.equal(sa.unrecoverable, 30);
    assert.equal(sa.recovered, 0);
    assert.ok(gotBoth.messages.slice(20, 50).every((m) => m.line === 'B'));
    pub.close();
    await both.close();
    await aOnly.close();
  } finally {
    await e.stop();
  }
});

test('a publisher restart is reported as a session change', async () => {
  const e = await startFeedEngine();
  try {
    const dev = openFeedDevice(e, { address: '127.78.3.1' });
    const cfg = { channels: [{ id: 3, groupA: '239.78.3.1' }] };
    let pub: FeedPublisher = createPublisher(e, dev, cfg);
    const [sub, got] = await collect(e, '127.78.3.3', [{ id: 3, groupA: '239.78.3.1' }]);
    await sleep(10);
    pub.publish(3, [quote(1), quote(2)]);
    await until(() => got.messages.length >= 2);
    const first = pub.session;
    pub.close();
    pub = createPublisher(e, dev, cfg);
    assert.notEqual(pub.session, first);
    pub.publish(3, [quote(3)]);
    await until(() => got.messages.length >= 3);
    assert.equal(got.sessions.length, 2);
    assert.deepEqual(got.sessions[1], { channel: 3, oldSession: first, newSession: pub.session, nextSeq: 1n });
    assert.deepEqual(got.messages.map((m) => Number(m.seq)), [1, 2, 1]);
    assert.equal(sub.stats().channels[0]!.sessionChanges, 1);
    pub.close();
    await sub.close();
  } finally {
    await e.stop();
  }
});

test('garbage on the group (plain UDP junk, and valid UD packets with bad frames) is counted and never crashes', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.4.1' }), { channels: [{ id: 4, groupA: '239.78.4.1' }] });
    const [sub, got] = await collect(e, '127.78.4.3', [{ id: 4, groupA: '239.78.4.1' }]);
    await sleep(10);
    // Plain UDP junk to group:4791: the RoCEv2 decoder drops it before the feed.
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.78.4.9', () => r()));
    sock.setMulticastInterface('127.78.4.9');
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => sock.send(Buffer.alloc(60, i), 4791, '239.78.4.1', () => r()));
    sock.close();
    // Valid UD packets from another device, with bad frame bodies.
    const jd = openDevice(e, { address: '127.78.4.5' });
    const pd = jd.allocPd();
    const cq = jd.createCq(64);
    const buf = Buffer.alloc(4096);
    const mr = pd.regMr(buf, ['LOCAL_WRITE']);
    const qp = pd.createQp({ type: 'UD', sendCq: cq, recvCq: cq, cap: { maxSendWr: 16, maxRecvWr: 1 } });
    qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qkey: QKEY });
    qp.modify({ state: 'RTR' });
    qp.modify({ state: 'RTS', sqPsn: 0 });
    const ah = pd.createAh({ dgid: '239.78.4.1' });
    const good: MessageInput = { type: MessageType.MESSAGE_TYPE_QUOTE, instrumentId: 1, body: new Uint8Array([8, 1]) };
    const frame = encodeFrame({ channel: 4, session: 77, firstSeq: 1n, sendTimeNs: 1n }, [good, good]);
    const wrongCount = frame.slice();
    wrongCount[24] = 3;
    const badVersion = frame.slice();
    badVersion[0] = 9;
    const junk = [Buffer.from([1, 2, 3]), Buffer.from(badVersion), Buffer.from(wrongCount), Buffer.alloc(100, 0xee)];
    for (const [i, j] of junk.entries()) {
      j.copy(buf, 0);
      qp.postSend([{ wrId: BigInt(i), sgList: [mr.sge(0, j.length)], ah, remoteQpn: 0xffffff, remoteQkey: QKEY }]);
      await sleep(5);
    }
    await sleep(20);
    pub.publish(4, [quote(1), quote(2), quote(3)]);
    await until(() => got.messages.length >= 3);
    assert.deepEqual(got.messages.map((m) => Number(m.seq)), [1, 2, 3]);
    const s = sub.stats().channels[0]!;
    assert.equal(s.rejectedFrames, 4);
    assert.equal(s.frameCounters['truncated_header'], 1);
    assert.equal(s.frameCounters['bad_version'], 2);
    assert.equal(s.frameCounters['count_mismatch'], 1);
    assert.equal(got.sessions.length, 1, 'no session was taken from a bad frame');
    qp.destroy();
    pub.close();
    await sub.close();
  } finally {
    await e.stop();
  }
});

test('the synthetic source publishes definitions first, then ticks at the configured rate (±10% over 2 s)', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.5.1' }), { channels: [{ id: 5, groupA: '239.78.5.1' }] });
    const [sub, got] = await collect(e, '127.78.5.3', [{ id: 5, groupA: '239.78.5.1' }]);
    await sleep(10);
    const src = new SyntheticSource(pub, { instruments: 100, ratePerSec: 10_000, seed: 42 });
    src.start();
    await until(() => got.messages.length >= 200);
    const defs = got.messages.slice(0, 200);
    assert.ok(defs.filter((_, i) => i % 2 === 0).every((m) => m.type === MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION));
    await sleep(200);
    const n0 = got.messages.length;
    const t0 = performance.now();
    await sleep(2000);
    const rate = ((got.messages.length - n0) * 1000) / (performance.now() - t0);
    src.stop();
    assert.ok(Math.abs(rate - 10_000) <= 1000, `rate ${rate.toFixed(0)} msgs/s`);
    const types = new Set(got.messages.slice(200).map((m) => m.type));
    for (const t of [MessageType.MESSAGE_TYPE_QUOTE, MessageType.MESSAGE_TYPE_TRADE, MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE]) assert.ok(types.has(t));
    assert.equal(sub.stats().channels[0]!.gaps, 0);
    const s = sub.stats().channels[0]!;
    const ps = pub.stats();
    console.log(
      `synthetic ${rate.toFixed(0)} msgs/s; publish latency p50 ${(ps.publishLatency.p50Ns / 1000).toFixed(1)} us p99 ${(ps.publishLatency.p99Ns / 1000).toFixed(1)} us; ` +
        `e2e p50 ${(s.latency.p50Ns / 1000).toFixed(1)} us p99 ${(s.latency.p99Ns / 1000).toFixed(1)} us`,
    );
    pub.close();
    await sub.close();
  } finally {
    await e.stop();
  }
});

test('FeedService starts from the default config and subscribers get its feed', async () => {
  const e = await startFeedEngine();
  try {
    const svc = new FeedService(e, openFeedDevice(e, { address: '127.78.6.1' }), {
      channels: [{ id: 1, groupA: '239.78.6.1', groupB: '239.78.6.2' }],
      synthetic: { ratePerSec: 2000, seed: 1 },
    });
    assert.equal(svc.config.instruments.count, 100);
    assert.equal(svc.config.channels[0]!.frameSize, 1024);
    const [sub, got] = await collect(e, '127.78.6.3', [{ id: 1, groupA: '239.78.6.1', groupB: '239.78.6.2' }]);
    await sleep(10);
    svc.start();
    await until(() => got.messages.length >= 400);
    const st = svc.stats();
    assert.ok(st.running && st.publisher !== undefined && st.publisher.channels[0]!.messages >= 400);
    svc.stop();
    await sleep(20);
    await sub.close();
  } finally {
    await e.stop();
  }
});
