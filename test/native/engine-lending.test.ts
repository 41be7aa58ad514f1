// A threaded engine that parks lends its duty cycle to the JS thread
// (native engine/engine.h, "Lending"): a publish made while the engine
// thread is parked is run by the JS thread at once, so it does not wait for
// the engine thread to wake (13-23 us on a 2-CPU host: the embedded
// default's tick-publish objective, bench/gateway/default-slo.ts). With
// engine.lendWhenParked false the engine thread is woken instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Engine } from '../../src/native/engine.js';
import { createPublisher } from '../../src/feed/publisher.js';
import { subscribe } from '../../src/feed/subscriber.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { MessageType, encodeMessage } from '../../src/feed/messages.js';
import { freeLoopbackAddress } from '../support/loopback.js';

// Parks at once when idle, for up to a second: nothing but a doorbell, a
// socket or a deadline ends a park within the test's waits.
const parking = (lendWhenParked: boolean) => ({
  toEngineCapacity: 1 << 16,
  fromEngineCapacity: 1 << 16,
  hugePages: false,
  idle: 'backoff' as const,
  backoff: { maxSpins: 0, maxYields: 0, minParkNs: 1_000_000_000, maxParkNs: 1_000_000_000 },
  lendWhenParked,
});

async function feedOn(engine: Engine, group: string) {
  const pub = createPublisher(engine, openFeedDevice(engine, { address: freeLoopbackAddress() }), { channels: [{ id: 1, groupA: group, heartbeatMs: 3_600_000 }] });
  const got: number[] = [];
  const sub = await subscribe({ engine, device: { address: freeLoopbackAddress() }, channels: [{ id: 1, groupA: group }], onMessage: (m) => got.push(m.instrumentId) });
  // Settle: the join, the first frames (snapshot, heartbeat) and their deliveries.
  await sleep(200);
  return { pub, sub, got };
}

const quote = (instrumentId: number) => encodeMessage({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId, bidPrice: 1, askPrice: 2 } });

test('a publish on a parked engine runs its duty cycles on the JS thread: the frame is sent and taken in when publish() returns', async () => {
  const engine = new Engine(parking(true));
  await engine.start();
  const { pub, sub, got } = await feedOn(engine, '239.78.98.1');
  try {
    for (let i = 1; i <= 3; i++) {
      await sleep(50); // the engine thread goes back to its park
      const before = engine.stats();
      const framesBefore = sub.stats().channels[0]!.frames;
      pub.publish(1, [quote(100 + i)]);
      const after = engine.stats();
      assert.ok(after.lentCycles > before.lentCycles, 'the JS thread ran the cycles');
      assert.equal(after.doorbellWakes, before.doorbellWakes, 'the engine thread was not rung');
      assert.equal(after.notifies, before.notifies);
      assert.equal(sub.stats().channels[0]!.frames, framesBefore + 1, 'publish() returned with the frame sent and taken in');
      assert.equal(got.includes(100 + i), false, 'no callback runs inside publish()');
      const end = Date.now() + 5_000;
      while (!got.includes(100 + i) && Date.now() < end) await sleep(1);
      assert.ok(got.includes(100 + i), `message ${i} delivered (got ${JSON.stringify(got)})`);
    }
  } finally {
    pub.close();
    await sub.close();
    await engine.stop();
  }
});

test('with lendWhenParked false a publish rings the doorbell and the engine thread sends it', async () => {
  const engine = new Engine(parking(false));
  await engine.start();
  const { pub, sub, got } = await feedOn(engine, '239.78.98.2');
  try {
    await sleep(50);
    const before = engine.stats();
    pub.publish(1, [quote(201)]);
    const end = Date.now() + 5_000;
    while (!got.includes(201) && Date.now() < end) await sleep(1);
    assert.ok(got.includes(201), 'delivered');
    const after = engine.stats();
    assert.equal(after.lentCycles, 0, 'never lent');
    assert.ok(after.doorbellWakes > before.doorbellWakes, 'the doorbell woke the engine thread');
  } finally {
    pub.close();
    await sub.close();
    await engine.stop();
  }
});
