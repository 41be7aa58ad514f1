// The soft device's fault injector through its test-only module
// (src/native/testing/faults.ts): off by default and not reachable from
// openDevice options; with drops on both devices an RC stream still arrives
// exactly once, in order and intact, and every fault is counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { openDevice } from '../../src/native/verbs.js';
import { faultCounters, setFaults, type FaultCounters } from '../../src/native/testing/faults.js';
import { connectPair, node, pollN, startEngine } from './verbs-helpers.js';

const total = (c: FaultCounters): number => Object.values(c).reduce((s: number, v: number) => s + v, 0);

test('the fault injector is off by default and no openDevice option turns it on', () => {
  const engine = startEngine();
  try {
    const device = openDevice(engine, { address: '127.63.40.1', faults: { tx: { drop: 1 } } } as never);
    const c = faultCounters(device);
    assert.equal(c.tx_dropped, 0);
    assert.equal(total(c), 0);
    assert.throws(() => setFaults(device, { tx: { drop: 2 } }), /probability/);
    assert.throws(() => setFaults(device, 'everything' as never), TypeError);
    device.close();
  } finally {
    engine.stop();
  }
});

test('RC SENDs survive 5% drop on both devices, and the drops are counted', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.41.1', 1 << 20);
    const b = node(engine, '127.63.41.2', 1 << 20);
    const [qa, qb] = connectPair(a, b);
    setFaults(a.device, { seed: 11, tx: { drop: 0.05 } });
    setFaults(b.device, { seed: 12, tx: { drop: 0.05 } });
    const n = 120;
    const size = 2500; // 3 packets at MTU 1024
    for (let i = 0; i < n; i++) {
      a.buf.fill(i & 0xff, i * size, (i + 1) * size);
      a.buf.writeUInt32LE(i, i * size);
    }
    const received: number[] = [];
    let sendsDone = 0;
    for (let start = 0; start < n; start += 30) {
      const batch = Math.min(30, n - start);
      qb.postRecv(Array.from({ length: batch }, (_, k) => ({ wrId: BigInt(start + k), sgList: [b.mr.sge(512 * 1024 + (start + k) * size, size)] })));
      qa.postSend(
        Array.from({ length: batch }, (_, k) => ({ wrId: BigInt(start + k), opcode: 'SEND' as const, sgList: [a.mr.sge((start + k) * size, size)], sendFlags: ['SIGNALED' as const] })),
      );
      const wcs = await pollN(a.cq, batch, 20_000);
      for (const wc of wcs) assert.equal(wc.status, 'IBV_WC_SUCCESS');
      sendsDone += wcs.length;
      for (const wc of await pollN(b.cq, batch, 5000)) {
        assert.equal(wc.status, 'IBV_WC_SUCCESS');
        assert.equal(wc.byteLen, size);
        received.push(Number(wc.wrId));
      }
    }
    assert.equal(sendsDone, n);
    assert.deepEqual(received, Array.from({ length: n }, (_, i) => i));
    for (let i = 0; i < n; i++) {
      const at = 512 * 1024 + i * size;
      assert.equal(b.buf.readUInt32LE(at), i);
      assert.ok(b.buf.subarray(at + 4, at + size).every((x) => x === (i & 0xff)), `message ${i} intact`);
    }
    const ca = faultCounters(a.device);
    const cb = faultCounters(b.device);
    assert.ok(ca.tx_dropped + cb.tx_dropped > 0, 'some packets were dropped');
    assert.ok(ca.tx_seen > n);
    assert.equal(ca.rx_seen, 0);
    setFaults(a.device, null);
    setFaults(b.device, null);
  } finally {
    engine.stop();
  }
});
