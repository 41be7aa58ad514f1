// The high-rate APIs of the feed: MessageBatch + publishBatch() on the
// publisher, onBatch (a frame's messages read in place) on the subscriber,
// end to end through one engine and two soft devices (127.78.9.x, groups
// 239.78.9.x), beside the message API they must agree with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { MessageType, encodeMessage, toBigInt } from '../../src/feed/messages.js';
import { MessageBatch, MAX_BATCH_BYTES } from '../../src/feed/message-batch.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { createPublisher } from '../../src/feed/publisher.js';
import { subscribe, type FeedMessage } from '../../src/feed/subscriber.js';
import { startFeedEngine, until } from '../support/feed-engine.js';

function quote(i: number) {
  return { type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + (i % 50), bidPrice: 10_000 + i, askPrice: 10_002 + i } } as const;
}

interface Seen {
  seq: bigint;
  type: number;
  instrumentId: number;
  bid: bigint;
}

test('publishBatch batches and onBatch batches carry every message once, in order, as publish() and onMessage do', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.9.1' }), { channels: [{ id: 3, groupA: '239.78.9.1', groupB: '239.78.9.2' }] });
    const inPlace: Seen[] = [];
    const kept: FeedMessage[] = [];
    const viaMessage: FeedMessage[] = [];
    let batches = 0;
    const sub = await subscribe({
      engine: e,
      device: { address: '127.78.9.3' },
      channels: [{ id: 3, groupA: '239.78.9.1', groupB: '239.78.9.2' }],
      onMessage: (m) => viaMessage.push(m),
      onBatch: (b) => {
        batches++;
        for (let i = 0; i < b.length; i++) {
          const d = b.decode(i);
          assert.ok(d !== undefined && d.type === MessageType.MESSAGE_TYPE_QUOTE);
          inPlace.push({ seq: b.seq(i), type: b.type(i), instrumentId: b.instrumentId(i), bid: toBigInt(d.value.bidPrice) });
          assert.equal(b.channel, 3);
          assert.equal(b.session, pub.session);
          assert.ok(b.line === 'A' || b.line === 'B');
        }
        if (b.length > 0) kept.push(b.message(0));
      },
    });
    await sleep(10);
    const N = 4000;
    const batch = new MessageBatch();
    for (let i = 0; i < N; i += 200) {
      batch.clear();
      for (let k = 0; k < 100; k++) assert.ok(batch.add(quote(i + k)));
      for (let k = 100; k < 200; k++) assert.ok(batch.addEncoded(encodeMessage(quote(i + k))));
      assert.equal(batch.count, 200);
      while (!pub.publishBatch(3, batch)) await sleep(1);
    }
    await until(() => inPlace.length >= N);
    await sleep(20);
    assert.equal(inPlace.length, N);
    inPlace.forEach((m, i) => {
      assert.equal(m.seq, BigInt(i + 1));
      assert.equal(m.type, MessageType.MESSAGE_TYPE_QUOTE);
      assert.equal(m.instrumentId, 1 + (i % 50));
      assert.equal(m.bid, BigInt(10_000 + i));
    });
    // One callback per delivered frame, and the message API saw the same messages.
    assert.equal(batches, sub.stats().channels[0]!.frames);
    assert.deepEqual(
      viaMessage.map((m) => m.seq),
      inPlace.map((m) => m.seq),
    );
    // Kept messages are copies: still right after the ring memory was reused by later frames.
    for (const m of kept) {
      const d = m.decode();
      assert.ok(d !== undefined && d.type === MessageType.MESSAGE_TYPE_QUOTE);
      assert.equal(toBigInt(d.value.bidPrice), BigInt(10_000) + m.seq - 1n);
    }
    assert.equal(pub.stats().rejectedRecords, 0);
    pub.close();
    await sub.close();
  } finally {
    await e.stop();
  }
});

test('publishBatch refuses what no frame of the channel can carry, before anything is written', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.9.5' }), { channels: [{ id: 1, groupA: '239.78.9.5', frameSize: 256 }] });
    const big = new MessageBatch();
    assert.ok(big.addEncoded({ type: MessageType.MESSAGE_TYPE_QUOTE, instrumentId: 1, body: new Uint8Array(300) }));
    assert.throws(() => pub.publishBatch(1, big), /300-byte body does not fit a frame of channel 1 \(max 212\)/);
    const ok = new MessageBatch();
    assert.ok(ok.add(quote(1)));
    assert.throws(() => pub.publishBatch(2, ok), /channel 2 is not one of this publisher's/);
    assert.equal(pub.publishBatch(1, new MessageBatch()), true); // nothing to publish
    assert.equal(pub.stats().records, 0);
    // The batch says when it is full instead of growing.
    const small = new MessageBatch(64);
    assert.ok(small.addEncoded({ type: 2, instrumentId: 1, body: new Uint8Array(40) }));
    assert.equal(small.addEncoded({ type: 2, instrumentId: 1, body: new Uint8Array(40) }), false);
    assert.equal(small.count, 1);
    assert.throws(() => small.addEncoded({ type: 0, instrumentId: 1, body: new Uint8Array(1) }), /type must be 1..65535, got 0/);
    assert.throws(() => new MessageBatch(MAX_BATCH_BYTES + 1), /capacity must be an integer/);
    pub.close();
  } finally {
    await e.stop();
  }
});

test('subscribers sharing an engine each get their own channels, and one closing leaves the others receiving', async () => {
  const e = await startFeedEngine();
  try {
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.9.7' }), {
      channels: [{ id: 1, groupA: '239.78.9.7' }, { id: 2, groupA: '239.78.9.8' }],
    });
    const got = { one: [] as number[], two: [] as number[], both: [] as number[] };
    const sub = (channels: Array<{ id: number; groupA: string }>, into: number[], address: string) =>
      subscribe({ engine: e, device: { address }, channels, onBatch: (b) => into.push(...Array.from({ length: b.length }, () => b.channel)) });
    const one = await sub([{ id: 1, groupA: '239.78.9.7' }], got.one, '127.78.9.9');
    const two = await sub([{ id: 2, groupA: '239.78.9.8' }], got.two, '127.78.9.10');
    const both = await sub([{ id: 1, groupA: '239.78.9.7' }, { id: 2, groupA: '239.78.9.8' }], got.both, '127.78.9.11');
    await sleep(10);
    pub.publish(1, [quote(1), quote(2)]);
    pub.publish(2, [quote(3)]);
    await until(() => got.one.length === 2 && got.two.length === 1 && got.both.length === 3);
    assert.deepEqual(got.one, [1, 1]);
    assert.deepEqual(got.two, [2]);
    await one.close();
    pub.publish(1, [quote(4)]);
    pub.publish(2, [quote(5)]);
    await until(() => got.two.length === 2 && got.both.length === 5);
    await sleep(20);
    assert.deepEqual(got.one, [1, 1]);
    pub.close();
    await two.close();
    await both.close();
  } finally {
    await e.stop();
  }
});
