// An engine driven by the JS thread (Engine.startDriven, native
// engine/engine.h and addon/engine_driver.h): no thread of its own, duty
// cycles run by doWork() or by the event loop when the engine's wait fd is
// readable: a socket, the protocol-deadline timer, or the doorbell that a
// control call from another thread rings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { freeLoopbackAddress } from '../support/loopback.js';

const options = { toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false };

test('a driven engine runs on the calling thread, unpinned, and says so', async () => {
  const engine = new Engine(options);
  const placement = await engine.startDriven();
  try {
    assert.equal(engine.driven, true);
    assert.equal(engine.running, true);
    assert.equal(placement.pinned, false);
    assert.match(placement.pinError, /driven on its owner's thread/);
    assert.equal(placement.tid, process.pid, 'the engine thread is the JS main thread');
    assert.equal(placement.idleStrategy, 'none');
    const before = engine.stats().dutyCycles;
    engine.doWork();
    assert.equal(engine.stats().dutyCycles, before + 1);
  } finally {
    await engine.stop();
  }
  assert.equal(engine.running, false);
  assert.equal(engine.driven, false);
});

test('doWork on a threaded engine is refused with a message that says why', async () => {
  const engine = new Engine(options);
  await engine.start();
  try {
    assert.throws(() => engine.doWork(), /doWork needs an engine started with startDriven/);
  } finally {
    await engine.stop();
  }
});

test('a packet wakes the event loop, which runs the cycles and then the work listeners', async () => {
  const engine = new Engine(options);
  await engine.startDriven();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  try {
    let calls = 0;
    const unsubscribe = engine.onWork(() => calls++);
    const { createSocket } = await import('node:dgram');
    const s = createSocket('udp4');
    // Not RoCEv2: the device's wire checks refuse it, counted; the point is the wake-up.
    await new Promise<void>((resolve) => s.send(Buffer.alloc(40, 1), 4791, device.gid.replace('::ffff:', ''), () => resolve()));
    const end = Date.now() + 10_000;
    while (calls === 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 5));
    s.close();
    unsubscribe();
    assert.ok(calls >= 1, 'the work listener ran after the datagram arrived');
    assert.ok(engine.stats().fdWakes >= 1, 'the wake-up was the socket');
    const { net, wire } = device.counters();
    assert.equal(net.rx_packets, 1, 'the duty cycle read the datagram');
    assert.ok(Object.values(wire).reduce((n, v) => n + v, 0) >= 1, 'and the wire checks counted it');
  } finally {
    device.close();
    await engine.stop();
  }
});

test('a control call from another thread rings the doorbell and the event loop runs it', async () => {
  const engine = new Engine(options);
  await engine.startDriven();
  try {
    // __testing_stall queues an engine task (a 1 ms sleep) from a helper thread.
    (engine.native as unknown as { __testing_stall(ms: number): void }).__testing_stall(1);
    const end = Date.now() + 10_000;
    while (engine.stats().doorbellWakes === 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok(engine.stats().doorbellWakes >= 1, 'the doorbell woke the event loop');
  } finally {
    await engine.stop();
  }
});

// A publish on a driven engine runs the cycles it needs there and then: the
// frame the feed agent posts is sent by the device agent in that cycle, and
// the feed's delivery agent, after the devices, takes it from the
// subscriber's CQ in the same cycle (gateway/engine_agents.cc). No socket is
// left readable to wake the event loop afterwards, so if publish() stopped
// short the message would wait for the next publish or a protocol timer
// (bench/feed/ts-path.ts --engine driven: a p50 of one publish interval).
// The record is handed to JS by the driver's idle handle, early in the next
// turn of the loop (addon/engine_driver.h).
test('a message published on a driven engine reaches a subscriber on it in the next turn of the event loop, with nothing else happening', async () => {
  const { createPublisher } = await import('../../src/feed/publisher.js');
  const { subscribe } = await import('../../src/feed/subscriber.js');
  const { openFeedDevice } = await import('../../src/feed/native.js');
  const { MessageType, encodeMessage } = await import('../../src/feed/messages.js');
  const engine = new Engine(options);
  await engine.startDriven();
  const group = '239.78.97.1';
  const pub = createPublisher(engine, openFeedDevice(engine, { address: freeLoopbackAddress() }), { channels: [{ id: 1, groupA: group, heartbeatMs: 3_600_000 }] });
  const got: number[] = [];
  const sub = await subscribe({ engine, device: { address: freeLoopbackAddress() }, channels: [{ id: 1, groupA: group }], onMessage: (m) => got.push(m.instrumentId) });
  try {
    // Settle: the join, the first frames (the publisher's snapshot and heartbeats) and their deliveries.
    await new Promise((resolve) => setTimeout(resolve, 200));
    got.length = 0;
    for (let i = 1; i <= 3; i++) {
      const cyclesBefore = engine.stats().dutyCycles;
      const framesBefore = sub.stats().channels[0]!.frames;
      pub.publish(1, [encodeMessage({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 100 + i, bidPrice: 1, askPrice: 2 } })]);
      assert.ok(engine.stats().dutyCycles - cyclesBefore >= 1, 'publish() ran the cycles');
      assert.equal(sub.stats().channels[0]!.frames, framesBefore + 1, 'publish() returned with the frame sent and taken in');
      assert.equal(got.includes(100 + i), false, 'no callback runs inside publish()');
      // The frame is in the fromEngine ring: its wake-up is delivered on the next turn.
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(got.includes(100 + i), `message ${i} delivered in the next turn (got ${JSON.stringify(got)})`);
    }
  } finally {
    pub.close();
    await sub.close();
    await engine.stop();
  }
});
