// RC end to end through the TS API over real UDP between two soft devices
// in one engine: SEND, RDMA WRITE, RDMA READ, FETCH_ADD, CMP_SWAP, and a bad
// rkey answered with IBV_WC_REM_ACCESS_ERR.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connectPair, node, pollOne, startEngine } from './verbs-helpers.js';

test('RC SEND, WRITE, READ, FETCH_ADD and CMP_SWAP between two devices', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.10.1');
    const b = node(engine, '127.63.10.2');
    const [qa, qb] = connectPair(a, b);
    assert.equal(qa.state, 'RTS');
    assert.equal(qa.query().destQpNum, qb.qpNum);

    // SEND with immediate
    qb.postRecv([{ wrId: 100n, sgList: [b.mr.sge(0, 1024)] }]);
    a.buf.write('order #1', 0);
    qa.postSend([{ wrId: 1n, opcode: 'SEND_WITH_IMM', immData: 0xfeed, sgList: [a.mr.sge(0, 8)] }]);
    const recv = await pollOne(b.cq);
    assert.equal(recv.status, 'IBV_WC_SUCCESS');
    assert.equal(recv.wrId, 100n);
    assert.equal(recv.byteLen, 8);
    assert.equal(recv.immData, 0xfeed);
    assert.equal(b.buf.subarray(0, 8).toString(), 'order #1');
    assert.equal((await pollOne(a.cq)).status, 'IBV_WC_SUCCESS');

    // RDMA WRITE of 5000 bytes: five packets at MTU 1024
    for (let i = 0; i < 5000; i++) a.buf[2048 + i] = (i * 13) & 0xff;
    qa.postSend([{ wrId: 2n, opcode: 'RDMA_WRITE', sgList: [a.mr.sge(2048, 5000)], remoteAddr: b.mr.addr + 8192n, rkey: b.mr.rkey }]);
    const w = await pollOne(a.cq);
    assert.equal(w.status, 'IBV_WC_SUCCESS');
    assert.equal(w.opcode, 'IBV_WC_RDMA_WRITE');
    assert.ok(b.buf.subarray(8192, 13192).equals(a.buf.subarray(2048, 7048)));

    // RDMA READ it back
    qa.postSend([{ wrId: 3n, opcode: 'RDMA_READ', sgList: [a.mr.sge(16384, 5000)], remoteAddr: b.mr.addr + 8192n, rkey: b.mr.rkey }]);
    const r = await pollOne(a.cq);
    assert.equal(r.status, 'IBV_WC_SUCCESS');
    assert.equal(r.opcode, 'IBV_WC_RDMA_READ');
    assert.ok(a.buf.subarray(16384, 21384).equals(a.buf.subarray(2048, 7048)));

    // FETCH_ADD and CMP_SWAP on an aligned word of b
    b.buf.writeBigUInt64LE(1000n, 32768);
    qa.postSend([{ wrId: 4n, opcode: 'ATOMIC_FETCH_AND_ADD', sgList: [a.mr.sge(24576, 8)], remoteAddr: b.mr.addr + 32768n, rkey: b.mr.rkey, compareAdd: 25n }]);
    const fa = await pollOne(a.cq);
    assert.equal(fa.status, 'IBV_WC_SUCCESS');
    assert.equal(fa.opcode, 'IBV_WC_FETCH_ADD');
    assert.equal(a.buf.readBigUInt64LE(24576), 1000n);
    assert.equal(b.buf.readBigUInt64LE(32768), 1025n);
    qa.postSend([{ wrId: 5n, opcode: 'ATOMIC_CMP_AND_SWP', sgList: [a.mr.sge(24576, 8)], remoteAddr: b.mr.addr + 32768n, rkey: b.mr.rkey, compareAdd: 1025n, swap: 7n }]);
    const cs = await pollOne(a.cq);
    assert.equal(cs.status, 'IBV_WC_SUCCESS');
    assert.equal(cs.opcode, 'IBV_WC_COMP_SWAP');
    assert.equal(a.buf.readBigUInt64LE(24576), 1025n);
    assert.equal(b.buf.readBigUInt64LE(32768), 7n);
    assert.ok(qb.counters()['atomics_executed']! >= 2);
  } finally {
    engine.stop();
  }
});

test('an RDMA WRITE with a bad rkey completes with IBV_WC_REM_ACCESS_ERR and the QP goes to ERR', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.11.1');
    const b = node(engine, '127.63.11.2');
    const [qa] = connectPair(a, b);
    qa.postSend([{ wrId: 9n, opcode: 'RDMA_WRITE', sgList: [a.mr.sge(0, 64)], remoteAddr: b.mr.addr, rkey: (b.mr.rkey ^ 0x5a5a5a5a) >>> 0 }]);
    const wc = await pollOne(a.cq);
    assert.equal(wc.wrId, 9n);
    assert.equal(wc.status, 'IBV_WC_REM_ACCESS_ERR');
    assert.equal(qa.state, 'ERR');
    assert.ok(b.device.counters().ingress['delivered']! >= 1);
  } finally {
    engine.stop();
  }
});

test('a failed post names the WR and says how many were posted', () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.12.1');
    const b = node(engine, '127.63.12.2');
    const [qa] = connectPair(a, b);
    assert.throws(
      () => qa.postSend([{ wrId: 1n, sgList: [a.mr.sge(0, 8)] }, { wrId: 2n, sgList: [Buffer.alloc(500)], inline: true }]),
      (e: unknown) => (e as { code?: string; badWrIndex?: number }).code === 'EINVAL' && (e as { badWrIndex?: number }).badWrIndex === 1,
    );
    assert.throws(() => qa.postSend([{ sgList: [Buffer.alloc(8)] }]), /lies in no MemoryRegion/);
  } finally {
    engine.stop();
  }
});
