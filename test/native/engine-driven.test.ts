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
