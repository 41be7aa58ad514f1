// Issue 4's volume test: one publisher, three subscribers on loopback,
// 1,000,000 ticks over two channels. Every subscriber gets every message
// exactly once and in order per channel, byte for byte. The test paces the
// publisher to the slowest subscriber (a window of messages in flight):
// UD multicast has no flow control, and this test is about delivery, not
// about how fast a subscriber can fall behind (that is slow-consumer.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { encodeMessage, MessageType } from '../../src/feed/messages.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { createPublisher } from '../../src/feed/publisher.js';
import { subscribe, type FeedSubscriber } from '../../src/feed/subscriber.js';
import { freeLoopbackAddress } from '../support/loopback.js';

const TOTAL = 1_000_000;
const CHANNELS = [1, 2];
const WINDOW = 20_000;  // messages published and not yet received by the slowest subscriber
const BATCH = 200;

// FNV-1a over a body: a cheap fingerprint to compare every message byte for byte.
function fingerprint(body: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < body.length; i++) h = Math.imul(h ^ body[i]!, 0x01000193);
  return h >>> 0;
}

interface Tally {
  received: number;
  perChannel: Map<number, { next: bigint; index: number }>;
  errors: string[];
}

test('1,000,000 ticks to three subscribers: each gets every message once, in order per channel, byte for byte', { timeout: 600_000 }, async () => {
  const g = `239.80.${Math.floor(Math.random() * 250)}`;
  const channels = CHANNELS.map((id) => ({ id, groupA: `${g}.${id}` }));
  const e = new Engine({ toEngineCapacity: 1 << 22, fromEngineCapacity: 1 << 24, hugePages: false, idle: 'backoff' });
  await e.start();
  const subs: FeedSubscriber[] = [];
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: freeLoopbackAddress() }), {
      channels: channels.map((c) => ({ ...c, frameBytes: 1024 })),
      instruments: (id) => (id % 2 === 0 ? 2 : 1),
    });
    // What each channel carries, in order: the fingerprint of every body.
    const expected = new Map<number, number[]>(CHANNELS.map((c) => [c, []]));
    const tallies: Tally[] = [];
    for (let s = 0; s < 3; s++) {
      const t: Tally = { received: 0, perChannel: new Map(CHANNELS.map((c) => [c, { next: 1n, index: 0 }])), errors: [] };
      tallies.push(t);
      subs.push(
        await subscribe({
          engine: e,
          device: { address: freeLoopbackAddress() },
          channels,
          maxFrameSize: 1024,
          recvSlots: 2048,
          onMessage: (m) => {
            t.received++;
            const c = t.perChannel.get(m.channel)!;
            if (m.seq !== c.next && t.errors.length < 5) t.errors.push(`subscriber ${s} channel ${m.channel}: seq ${m.seq}, expected ${c.next}`);
            c.next = m.seq + 1n;
            const want = expected.get(m.channel)![c.index++];
            if (fingerprint(m.body) !== want && t.errors.length < 5) t.errors.push(`subscriber ${s} channel ${m.channel} #${c.index}: body differs`);
          },
          onGap: (gap) => t.errors.push(`subscriber ${s}: gap on channel ${gap.channel} at ${gap.fromSeq} (${gap.count})`),
        }),
      );
    }
    await sleep(20);
    const started = performance.now();
    for (let i = 0; i < TOTAL; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, TOTAL - i) }, (_, k) => {
        const n = i + k;
        return encodeMessage({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + (n % 100), bidPrice: 10_000 + n, askPrice: 10_002 + n, bidSize: n % 1000, askSize: 7 } });
      });
      for (const m of batch) expected.get(m.instrumentId % 2 === 0 ? 2 : 1)!.push(fingerprint(m.body));
      pub.publishByInstrument(batch);
      // Pace to the slowest subscriber.
      while (i + BATCH - Math.min(...tallies.map((t) => t.received)) > WINDOW) await sleep(1);
    }
    const deadline = Date.now() + 60_000;
    while (tallies.some((t) => t.received < TOTAL) && Date.now() < deadline) await sleep(10);
    await sleep(50);  // nothing more may arrive
    const seconds = (performance.now() - started) / 1000;
    for (const [s, t] of tallies.entries()) {
      assert.deepEqual(t.errors, [], `subscriber ${s}`);
      assert.equal(t.received, TOTAL, `subscriber ${s} received ${t.received}`);
      for (const c of CHANNELS) assert.equal(t.perChannel.get(c)!.index, expected.get(c)!.length, `subscriber ${s} channel ${c}`);
      const st = subs[s]!.stats();
      assert.equal(st.ringFullDrops, 0);
      for (const ch of st.channels) {
        assert.equal(ch.gaps, 0);
        assert.equal(ch.unrecoverable, 0);
      }
    }
    console.log(`1,000,000 ticks to 3 subscribers in ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)} ticks/s per subscriber, paced to the slowest)`);
    pub.close();
  } finally {
    for (const s of subs) await s.close();
    await e.stop();
  }
});
