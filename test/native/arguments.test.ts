// The addon reads every argument through one parser (native/src/addon/args.h):
// each wrap refuses a bad value in one shape, "<call>: <option> must be
// <expected>, got <value>", a RangeError for a number out of range and a
// TypeError for anything else, and never coerces a wrong type.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon } from '../../src/native/addon.js';
import { nativeFeed } from '../../src/feed/native.js';
import { nativeOrders } from '../../src/orders/native.js';
import { startEngine } from './verbs-helpers.js';

type Refusal = [() => unknown, ErrorConstructor, string];

function assertRefusals(cases: Refusal[]): void {
  for (const [call, kind, message] of cases) {
    assert.throws(call, (err: unknown) => {
      assert.ok(err instanceof kind, `${kind.name} expected for "${message}", got ${String(err)}`);
      assert.equal(err.message, message);
      return true;
    });
  }
}

interface LooseDevice {
  createCq(depth: unknown): unknown;
  close(): void;
}
interface LooseVerbs {
  openDevice(engine: unknown, options: unknown): LooseDevice;
}

test('openDevice and a device refuse wrong types and out-of-range numbers by option name, without coercing', () => {
  const engine = startEngine();
  const verbs = (loadAddon() as unknown as { verbs: LooseVerbs }).verbs;
  try {
    assertRefusals([
      [() => verbs.openDevice(engine, 'lo'), TypeError, "openDevice: options must be an object {kind, address | name, ...}, got 'lo'"],
      [() => verbs.openDevice(engine, { address: '127.63.40.1', kind: 'rdma' }), TypeError, "openDevice: kind must be 'soft' or 'ibv', got 'rdma'"],
      [() => verbs.openDevice(engine, { address: 7 }), TypeError, 'openDevice: address must be a string, got 7'],
      [() => verbs.openDevice(engine, { address: '127.63.40.1', rcvbuf: 2 ** 31 }), RangeError, 'openDevice: rcvbuf must be an integer in 0..1073741824, got 2147483648'],
      [() => verbs.openDevice(engine, { address: '127.63.40.1', sndbuf: 1.5 }), RangeError, 'openDevice: sndbuf must be an integer in 0..1073741824, got 1.5'],
      // Was coerced with ToBoolean: 'no' opened a device with per-flow source ports.
      [() => verbs.openDevice(engine, { address: '127.63.40.1', perFlowSourcePort: 'no' }), TypeError, "openDevice: perFlowSourcePort must be a boolean, got 'no'"],
      [() => verbs.openDevice({}, { address: '127.63.40.1' }), TypeError, 'openDevice: engine must be an Engine from this addon, got an object'],
    ]);
    const device = verbs.openDevice(engine, { address: '127.63.40.2', rcvbuf: undefined });
    assertRefusals([
      [() => device.createCq(-1), RangeError, 'device.createCq: depth must be an integer in 0..4294967295, got -1'],
      [() => device.createCq('8'), TypeError, "device.createCq: depth must be an integer in 0..4294967295, got '8'"],
    ]);
    device.close();
  } finally {
    engine.stop();
  }
});

test('the feed and order entry refuse in the same shape', () => {
  const engine = startEngine();
  const verbs = (loadAddon() as unknown as { verbs: LooseVerbs }).verbs;
  const device = verbs.openDevice(engine, { address: '127.63.40.3' });
  const feed = nativeFeed() as unknown as { createPublisher(e: unknown, d: unknown, c: unknown): unknown };
  const orders = nativeOrders() as unknown as { createService(e: unknown, d: unknown, c: unknown): unknown };
  const channel = { id: 1, groupA: '239.77.40.1' };
  try {
    assertRefusals([
      [() => feed.createPublisher(engine, device, { channels: [] }), TypeError, 'feed.createPublisher: config.channels must be a non-empty array, got an array'],
      [() => feed.createPublisher(engine, device, { channels: [{ ...channel, groupA: '10.0.0.1' }] }), TypeError,
        "feed.createPublisher: channels[0].groupA must be an IPv4 multicast address (224.0.0.0/4) like '239.77.0.1', got '10.0.0.1'"],
      [() => feed.createPublisher(engine, device, { channels: [{ ...channel, ring: 5 }] }), TypeError, 'feed.createPublisher: channels[0].ring must be an object {frames, bytes}, got 5'],
      [() => feed.createPublisher(engine, device, { channels: [channel], hopLimit: 256 }), RangeError, 'feed.createPublisher: hopLimit must be an integer in 0..255, got 256'],
      [() => feed.createPublisher(engine, {}, { channels: [channel] }), TypeError, 'feed.createPublisher: device must be an open Device from verbs.openDevice(), got an object'],
      [() => orders.createService(engine, device, { journal: {} }), TypeError, 'orders.createService: config.journal.path must be a non-empty string, got undefined'],
      [() => orders.createService(engine, device, { journal: { path: '/tmp/x', sync: 'always' } }), TypeError,
        "orders.createService: config.journal.sync must be 'every', 'group' or 'none', got 'always'"],
      [() => orders.createService(engine, device, { journal: { path: '/tmp/x', groupMaxRecords: 0 } }), RangeError,
        'orders.createService: config.journal.groupMaxRecords must be an integer in 1..1048576, got 0'],
    ]);
  } finally {
    device.close();
    engine.stop();
  }
});
