// Slow consumers (issue 4): the iterator's bounded queue and its declared
// policy, alone and end to end with an iterator slowed on purpose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { MessageType, toBigInt } from '../../src/feed/messages.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { createPublisher } from '../../src/feed/publisher.js';
import { SlowConsumerError, SlowConsumerQueue } from '../../src/feed/slow-consumer.js';
import { subscribe, type FeedMessage } from '../../src/feed/subscriber.js';

const m = (instrumentId: number, n: number) => ({ channel: 1, type: 3, instrumentId, key: 0, n });

test('drop-oldest keeps the newest maxQueued and counts what it dropped', () => {
  const q = new SlowConsumerQueue<ReturnType<typeof m>>({ policy: 'drop-oldest', maxQueued: 3 });
  for (let i = 0; i < 10; i++) assert.equal(q.push(m(i, i)), true);
  assert.deepEqual([q.shift()?.n, q.shift()?.n, q.shift()?.n, q.shift()], [7, 8, 9, undefined]);
  assert.deepEqual(q.stats(), { policy: 'drop-oldest', maxQueued: 3, queued: 0, highWater: 3, dropped: 7, conflated: 0 });
});

test('conflate keeps the latest message per (channel, type, instrument, key), in the order first queued', () => {
  const q = new SlowConsumerQueue<ReturnType<typeof m>>({ policy: 'conflate', maxQueued: 4 });
  for (let i = 0; i < 12; i++) q.push(m(i % 3, i)); // instruments 0,1,2 repeating
  assert.deepEqual(q.stats().conflated, 9);
  assert.deepEqual([q.shift(), q.shift(), q.shift()].map((x) => [x?.instrumentId, x?.n]), [[0, 9], [1, 10], [2, 11]]);
  q.push(m(0, 12)); // a key whose earlier entry was consumed is queued anew
  assert.equal(q.shift()?.n, 12);
  for (let i = 0; i < 6; i++) q.push(m(100 + i, i)); // distinct keys beyond maxQueued: oldest dropped
  assert.equal(q.stats().queued, 4);
  assert.equal(q.stats().dropped, 2);
  assert.equal(q.shift()?.instrumentId, 102);
});

test('disconnect trips at maxQueued and refuses everything after', () => {
  const q = new SlowConsumerQueue<ReturnType<typeof m>>({ policy: 'disconnect', maxQueued: 2 });
  assert.equal(q.push(m(1, 1)), true);
  assert.equal(q.push(m(1, 2)), true);
  assert.equal(q.push(m(1, 3)), false);
  assert.equal(q.tripped, true);
  assert.equal(q.push(m(1, 4)), false);
  assert.throws(() => new SlowConsumerQueue({ maxQueued: 0 }), /maxQueued must be a positive integer, got 0/);
});

async function rig(address: number) {
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  const pub = createPublisher(e, openFeedDevice(e, { address: `127.78.98.${address}` }), { channels: [{ id: 1, groupA: `239.78.98.${address}` }], instruments: { 1: 1 } });
  return { e, pub };
}

test('an iterator slowed on purpose with policy conflate: bounded queue, conflation counted, the latest quote of every instrument delivered', async () => {
  const { e, pub } = await rig(1);
  try {
    const sub = await subscribe({ engine: e, device: { address: '127.78.98.101' }, channels: [{ id: 1, groupA: '239.78.98.1' }], slowConsumer: { policy: 'conflate', maxQueued: 50 } });
    const latest = new Map<number, bigint>();
    let seen = 0;
    const reader = (async () => {
      for await (const msg of sub) {
        seen++;
        const d = msg.decode();
        if (d?.type === MessageType.MESSAGE_TYPE_QUOTE) latest.set(d.value.instrumentId ?? 0, toBigInt(d.value.bidPrice ?? 0));
        await sleep(1); // the slow application
      }
    })();
    await sleep(10);
    const N = 4000;
    for (let i = 0; i < N; i += 100) {
      pub.publish(1, Array.from({ length: 100 }, (_, k) => ({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + ((i + k) % 20), bidPrice: i + k, askPrice: i + k + 1 } }) as const));
    }
    const expected = new Map<number, bigint>();
    for (let i = N - 20; i < N; i++) expected.set(1 + (i % 20), BigInt(i));
    const end = Date.now() + 10_000;
    while (Date.now() < end && [...expected].some(([k, v]) => latest.get(k) !== v)) await sleep(5);
    assert.deepEqual(latest, expected);
    const s = sub.stats();
    assert.equal(s.consumer.policy, 'conflate');
    assert.ok(s.consumer.highWater <= 50, `high water ${s.consumer.highWater}`);
    assert.ok(s.consumer.conflated > 1000, `conflated ${s.consumer.conflated}`);
    assert.equal(seen + s.consumer.conflated + s.consumer.dropped, N);
    await sub.close();
    await reader;
  } finally {
    pub.close();
    await e.stop();
  }
});

test('policy disconnect: the slow iterator gets SlowConsumerError and the subscriber closes', async () => {
  const { e, pub } = await rig(2);
  try {
    const sub = await subscribe({ engine: e, device: { address: '127.78.98.102' }, channels: [{ id: 1, groupA: '239.78.98.2' }], slowConsumer: { policy: 'disconnect', maxQueued: 20 } });
    const got: FeedMessage[] = [];
    const reader = (async () => {
      for await (const msg of sub) {
        got.push(msg);
        await sleep(5);
      }
    })();
    await sleep(10);
    pub.publish(1, Array.from({ length: 200 }, (_, k) => ({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1, bidPrice: k } }) as const));
    await assert.rejects(reader, (err: unknown) => err instanceof SlowConsumerError && /more than 20 messages queued/.test(err.message));
    assert.ok(got.length <= 21, `delivered before the disconnect: ${got.length}`);
    got.forEach((msg, i) => assert.equal(msg.seq, BigInt(i + 1)));
  } finally {
    pub.close();
    await e.stop();
  }
});

test('a callback that holds the JS thread fills fromEngine: without recovery every message is delivered or reported by onGap, in order', async () => {
  // 64 KiB of fromEngine holds a dozen full frames; the burst is ~80 of them.
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 16, hugePages: false, idle: 'backoff' });
  await e.start();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.98.3' }), { channels: [{ id: 1, groupA: '239.78.98.3' }], instruments: { 1: 1 } });
  try {
    const met: Array<{ from: bigint; to: bigint; gap: boolean }> = []; // each message and gap, [from, to), in the order the app met them
    let stalled = false;
    const sub = await subscribe({
      engine: e,
      device: { address: '127.78.98.103' },
      channels: [{ id: 1, groupA: '239.78.98.3' }],
      onMessage: (msg) => {
        if (!stalled) {
          stalled = true;
          const until = Date.now() + 100; // the slow application, on the JS thread
          while (Date.now() < until);
        }
        met.push({ from: msg.seq, to: msg.seq + 1n, gap: false });
      },
      onGap: (g) => met.push({ from: g.fromSeq, to: g.fromSeq + g.count, gap: true }),
    });
    await sleep(10);
    const N = 5000;
    for (let i = 0; i < N; i += 100) {
      pub.publish(1, Array.from({ length: 100 }, (_, k) => ({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + ((i + k) % 20), bidPrice: i + k } }) as const));
    }
    const end = Date.now() + 10_000;
    while (Date.now() < end && (met.at(-1)?.to ?? 0n) < BigInt(N + 1)) await sleep(5);
    let next = 1n;
    let gapMessages = 0n;
    for (const { from, to, gap } of met) {
      assert.equal(from, next, `the app met ${from} where it expected ${next}: a silent hole`);
      if (gap) gapMessages += to - from;
      next = to;
    }
    assert.equal(next, BigInt(N + 1));
    const s = sub.stats();
    assert.ok(s.ringFullDrops > 0, 'fromEngine never filled: the test proves nothing');
    assert.ok(gapMessages > 0n, 'no gap was reported');
    assert.equal(BigInt(s.channels[0]?.unrecoverable ?? -1), gapMessages);
    await sub.close();
  } finally {
    pub.close();
    await e.stop();
  }
});
