// The TS side of the SPSC ring, on ordinary ArrayBuffers: order, wrap-around
// with variable lengths, back-pressure, and agreement with the addon's layout.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon } from '../../src/native/addon.js';
import { RING_LAYOUT, RingConsumer, RingProducer, createRingBuffer } from '../../src/native/spsc-ring.js';

const lengthOf = (seq: number, max: number): number => (seq * 37) % (max + 1);
const byteOf = (seq: number, i: number): number => (seq + i * 7) & 0xff;

function payload(seq: number, max: number): Uint8Array {
  const len = lengthOf(seq, max);
  const p = new Uint8Array(len);
  for (let i = 0; i < len; i++) p[i] = byteOf(seq, i);
  return p;
}

function intact(bytes: Uint8Array, offset: number, length: number, seq: number, max: number): boolean {
  if (length !== lengthOf(seq, max)) return false;
  for (let i = 0; i < length; i++) if (bytes[offset + i] !== byteOf(seq, i)) return false;
  return true;
}

test('the ring layout constants match the ones compiled into the addon', () => {
  const native = loadAddon().ringLayout;
  assert.equal(RING_LAYOUT.tailOffset, native.tailOffset);
  assert.equal(RING_LAYOUT.headOffset, native.headOffset);
  assert.equal(RING_LAYOUT.waitingOffset, native.waitingOffset);
  assert.equal(RING_LAYOUT.trailerLength, native.trailerLength);
  assert.equal(RING_LAYOUT.headerLength, native.headerLength);
  assert.equal(RING_LAYOUT.paddingType, native.paddingType);
  assert.equal(RING_LAYOUT.minCapacity, native.minCapacity);
  assert.equal(RING_LAYOUT.maxCapacity, native.maxCapacity);
});

test('many records make the round trip in order, with their types and bytes', () => {
  const buffer = createRingBuffer(1 << 16);
  const producer = new RingProducer(buffer, 1 << 16);
  const consumer = new RingConsumer(buffer, 1 << 16);
  const total = 100_000;
  let written = 0;
  let read = 0;
  let bad = 0;
  while (read < total) {
    while (written < total && producer.write(1 + (written % 5), payload(written, 100))) written++;
    assert.equal(consumer.isEmpty(), true, 'nothing is visible before publish()');
    producer.publish();
    consumer.read((type, bytes, offset, length) => {
      if (type !== 1 + (read % 5) || !intact(bytes, offset, length, read, 100)) bad++;
      read++;
    });
  }
  assert.equal(bad, 0);
  assert.equal(read, total);
  assert.equal(consumer.isEmpty(), true);
});

test('wrap-around with variable lengths goes through a padding record and loses nothing', () => {
  const capacity = 1024;
  const buffer = createRingBuffer(capacity);
  const producer = new RingProducer(buffer, capacity);
  const consumer = new RingConsumer(buffer, capacity);
  const i32 = new Int32Array(buffer);
  let written = 0;
  let read = 0;
  let paddings = 0;
  for (let round = 0; round < 2000; round++) {
    for (;;) {
      const p = payload(written, 120);
      // Look at where the record would go: a padding record is written at the end.
      if (!producer.write(3, p)) break;
      written++;
    }
    producer.publish();
    consumer.read(
      (type, bytes, offset, length) => {
        assert.equal(type, 3);
        assert.ok(intact(bytes, offset, length, read, 120), `record ${read}`);
        read++;
      },
      1 + (round % 7),
    );
    // Count padding headers in the data area (type -1 at an 8-aligned slot).
    for (let i = 0; i < capacity / 4; i += 2) if (i32[i + 1] === RING_LAYOUT.paddingType) paddings++;
  }
  consumer.read((_type, bytes, offset, length) => {
    assert.ok(intact(bytes, offset, length, read, 120));
    read++;
  });
  assert.equal(read, written);
  assert.ok(paddings > 10, `the test must wrap many times (saw ${paddings} padding headers)`);
});

test('a full ring refuses further records, and nothing already written is lost', () => {
  const capacity = 1024;
  const buffer = createRingBuffer(capacity);
  const producer = new RingProducer(buffer, capacity);
  const consumer = new RingConsumer(buffer, capacity);
  let accepted = 0;
  while (producer.write(1, new Uint8Array(24).fill(accepted & 0xff))) accepted++;
  assert.equal(accepted, capacity / 32);
  assert.equal(producer.write(1, new Uint8Array(0)), false, 'not even an empty record fits');
  producer.publish();
  assert.equal(producer.used(), capacity);
  // The consumer takes half and refuses the rest (back-pressure).
  let taken = 0;
  consumer.read(() => ++taken <= accepted / 2);
  assert.equal(producer.write(1, new Uint8Array(24).fill(0xee)), true, 'freed space is reusable');
  producer.publish();
  const seen: number[] = [];
  consumer.read((_t, bytes, offset) => {
    seen.push(bytes[offset]!);
  });
  assert.deepEqual(seen, [...Array.from({ length: accepted / 2 }, (_, i) => (i + accepted / 2) & 0xff), 0xee]);
});

test('oversized records and non-positive types are refused with a RangeError', () => {
  const producer = new RingProducer(createRingBuffer(1024), 1024);
  assert.equal(producer.maxPayloadLength, 120);
  assert.throws(() => producer.claim(1, 121), RangeError);
  assert.throws(() => producer.claim(0, 1), RangeError);
  assert.throws(() => producer.claim(-1, 1), RangeError);
});

test('the wake-up protocol: an announced consumer is woken exactly once', () => {
  const buffer = createRingBuffer(1024);
  const producer = new RingProducer(buffer, 1024);
  const consumer = new RingConsumer(buffer, 1024);
  assert.equal(consumer.announceWaiting(), true);
  producer.write(1, new Uint8Array(1));
  producer.publish();
  assert.equal(producer.consumerWaiting(), true);
  assert.equal(producer.takeWakeDuty(), true);
  assert.equal(producer.takeWakeDuty(), false);
  assert.equal(consumer.announceWaiting(), false, 'records are waiting: do not sleep');
});
