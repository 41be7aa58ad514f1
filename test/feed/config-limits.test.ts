// The feed's integer settings are declared once
// (native/src/feed/feed_config_limits.def): the config schema, the addon and
// the native validators take the same values at each declared bound and
// refuse them just outside it, naming the setting; the defaults are the
// declared ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FEED_LIMITS } from '../../src/declared/feed-config.js';
import { resolveFeedsConfig } from '../../src/feed/config.js';
import { nativeDeviceOf, nativeFeed, openFeedDevice } from '../../src/feed/native.js';
import { Engine } from '../../src/native/engine.js';
import { freeLoopbackAddress } from '../support/loopback.js';

type Limit = { minimum: number; maximum: number; default: number };
const bounds = (l: Limit) => [l.minimum, l.maximum];
const outside = (l: Limit) => [l.minimum - 1, l.maximum + 1];

const CHANNEL = { id: 1, groupA: '239.78.10.1' };
// Where each setting is, in the config and in the addon's options (ring.frames and ring.bytes nest).
const PUBLISHER: Record<string, (v: number) => Record<string, unknown>> = {
  sendSlots: (v) => ({ channels: [CHANNEL], sendSlots: v }),
  frameSize: (v) => ({ channels: [{ ...CHANNEL, frameSize: v }] }),
  heartbeatMs: (v) => ({ channels: [{ ...CHANNEL, heartbeatMs: v }] }),
  ringFrames: (v) => ({ channels: [{ ...CHANNEL, ring: { frames: v } }] }),
  ringBytes: (v) => ({ channels: [{ ...CHANNEL, ring: { bytes: v } }] }),
  snapshotSlots: (v) => ({ channels: [{ ...CHANNEL, snapshotSlots: v }] }),
};
const SUBSCRIBER: Record<string, (v: number) => Record<string, unknown>> = {
  maxFrameSize: (v) => ({ channels: [CHANNEL], maxFrameSize: v }),
  recvSlots: (v) => ({ channels: [CHANNEL], recvSlots: v }),
};
const name = (key: string) => ({ ringFrames: 'ring.frames', ringBytes: 'ring.bytes' })[key] ?? key;

test('every declared feed setting is placed by this test, and the config takes its default', () => {
  assert.deepEqual(Object.keys(FEED_LIMITS).sort(), [...Object.keys(PUBLISHER), ...Object.keys(SUBSCRIBER)].sort());
  const cfg = resolveFeedsConfig({ channels: [CHANNEL] });
  const ch = cfg.channels[0]!;
  assert.deepEqual(
    [cfg.sendSlots, ch.frameSize, ch.heartbeatMs, ch.ring.frames, ch.ring.bytes, ch.snapshotSlots],
    ['sendSlots', 'frameSize', 'heartbeatMs', 'ringFrames', 'ringBytes', 'snapshotSlots'].map((k) => FEED_LIMITS[k as keyof typeof FEED_LIMITS].default),
  );
});

test('the feeds config takes each publisher setting at its declared bounds and refuses it just outside, naming it', () => {
  for (const [key, place] of Object.entries(PUBLISHER)) {
    const limit = FEED_LIMITS[key as keyof typeof FEED_LIMITS];
    for (const v of bounds(limit)) assert.doesNotThrow(() => resolveFeedsConfig(place(v)), `${key}=${v}`);
    for (const v of outside(limit)) {
      const path = name(key).replace('.', '/');
      assert.throws(() => resolveFeedsConfig(place(v)), (e: Error) => e instanceof TypeError && e.message.includes(path), `${key}=${v}`);
    }
  }
});

test('the addon takes the same values and refuses the same ones, naming the setting and its declared bounds', async () => {
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openFeedDevice(engine, { address: freeLoopbackAddress() });
  const feed = nativeFeed();
  try {
    const sides = [
      ['createPublisher', PUBLISHER, (o: Record<string, unknown>) => feed.createPublisher(engine.native, nativeDeviceOf(device), o).close()],
      ['createSubscriber', SUBSCRIBER, (o: Record<string, unknown>) => feed.createSubscriber(engine.native, nativeDeviceOf(device), o).close()],
    ] as const;
    for (const [what, settings, create] of sides) {
      for (const [key, place] of Object.entries(settings)) {
        const limit = FEED_LIMITS[key as keyof typeof FEED_LIMITS];
        // The largest ring (2 GiB) and snapshot store (1.3 GiB) are not reserved here: their upper bounds are checked by the refusal above them.
        const costly = (v: number) => (key === 'ringBytes' || key === 'snapshotSlots') && v === limit.maximum;
        for (const v of bounds(limit).filter((v) => !costly(v))) assert.doesNotThrow(() => create(place(v)), `${what} ${key}=${v}`);
        for (const v of outside(limit)) {
          assert.throws(
            () => create(place(v)),
            (e: Error) => e instanceof RangeError && e.message.includes(`${name(key)} must be an integer in ${limit.minimum}..${limit.maximum}, got ${v}`),
            `${what} ${key}=${v}`,
          );
        }
      }
    }
  } finally {
    device.close();
    await engine.stop();
  }
});

test("a subscriber's largest frame must fit the engine's fromEngine records, or it is refused naming both settings", async () => {
  // 32 KiB of fromEngine: records of at most 4,096 bytes with their 8-byte header, so frames of at most 4,048 bytes.
  const engine = new Engine({ hugePages: false, fromEngineCapacity: 1 << 15 });
  await engine.start();
  const device = openFeedDevice(engine, { address: freeLoopbackAddress() });
  const create = (maxFrameSize: number) => nativeFeed().createSubscriber(engine.native, nativeDeviceOf(device), { channels: [CHANNEL], maxFrameSize }).close();
  try {
    assert.doesNotThrow(() => create(4048));
    assert.throws(
      () => create(4049),
      (e: Error) => e instanceof RangeError && e.message === "feed.createSubscriber: maxFrameSize 4049 does not fit the engine's fromEngine records (at most 4048 frame bytes with fromEngineCapacity 32768): raise fromEngineCapacity or lower maxFrameSize",
    );
  } finally {
    device.close();
    await engine.stop();
  }
});
