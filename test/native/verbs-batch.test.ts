// The allocation-free verbs calls of the clients' hot path, cq.pollInto and
// qp.postRecvBatch, against the soft backend over real UDP: they carry the
// same work as poll() and postRecv(), and refuse bad arguments by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { RECV_WR_WORDS, WC_STATUS_NAMES, WC_WORDS, WcWord, type CompletionQueue } from '../../src/native/verbs.js';
import { connectPair, node, startEngine } from './verbs-helpers.js';

interface Completion {
  wrIdLow: number;
  wrIdHigh: number;
  status: number;
  opcode: number;
  byteLen: number;
  qpNum: number;
}

async function pollIntoN(cq: CompletionQueue, n: number, ms = 3000): Promise<Completion[]> {
  const words = new Uint32Array(4 * WC_WORDS);
  const out: Completion[] = [];
  const end = Date.now() + ms;
  while (out.length < n && Date.now() < end) {
    const got = cq.pollInto(words);
    for (let o = 0; o < got * WC_WORDS; o += WC_WORDS) {
      out.push({
        wrIdLow: words[o + WcWord.wrIdLow]!,
        wrIdHigh: words[o + WcWord.wrIdHigh]!,
        status: words[o + WcWord.status]!,
        opcode: words[o + WcWord.opcode]!,
        byteLen: words[o + WcWord.byteLen]!,
        qpNum: words[o + WcWord.qpNum]!,
      });
    }
    if (out.length < n) await sleep(1);
  }
  return out;
}

test('pollInto and postRecvBatch carry RC SENDs: wr_ids, opcodes, lengths and the bytes where the WR said', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.40.1');
    const b = node(engine, '127.63.40.2');
    const [qa, qb] = connectPair(a, b);
    const words = new Uint32Array([7, 1024, 256, 0xfffffffe, 2048, 256]);
    assert.equal(qb.postRecvBatch(b.mr, words), 2);
    a.buf.fill(0xab, 0, 100);
    a.buf.fill(0xcd, 100, 160);
    qa.postSend([
      { wrId: (1n << 32n) | 5n, sgList: [a.mr.sge(0, 100)] },
      { wrId: 6n, sgList: [a.mr.sge(100, 60)] },
    ]);
    const sent = await pollIntoN(a.cq, 2);
    assert.deepEqual(
      sent.map((c) => [c.wrIdHigh, c.wrIdLow, c.status, c.opcode, c.qpNum]),
      [
        [1, 5, 0, 0, qa.qpNum],
        [0, 6, 0, 0, qa.qpNum],
      ],
    );
    const recv = await pollIntoN(b.cq, 2);
    assert.deepEqual(
      recv.map((c) => [c.wrIdHigh, c.wrIdLow, c.status, c.opcode, c.byteLen, c.qpNum]),
      [
        [0, 7, 0, 128, 100, qb.qpNum],
        [0, 0xfffffffe, 0, 128, 60, qb.qpNum],
      ],
    );
    assert.ok(b.buf.subarray(1024, 1124).every((x) => x === 0xab));
    assert.ok(b.buf.subarray(2048, 2108).every((x) => x === 0xcd));
    assert.equal(b.buf[1124], 0, 'nothing past the message');
  } finally {
    engine.stop();
  }
});

test('a completion in error gives its ibv_wc_status code, named by WC_STATUS_NAMES', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.41.1');
    const b = node(engine, '127.63.41.2');
    const [qa, qb] = connectPair(a, b);
    qb.postRecvBatch(b.mr, new Uint32Array([3, 0, 8]));
    qa.postSend([{ wrId: 1n, sgList: [a.mr.sge(0, 64)] }]);
    const [c] = await pollIntoN(b.cq, 1);
    assert.ok(c, 'the receive completed');
    assert.equal(c.wrIdLow, 3);
    assert.equal(WC_STATUS_NAMES[c.status], 'IBV_WC_LOC_LEN_ERR');
  } finally {
    engine.stop();
  }
});

test('bad arguments are refused by name and post nothing', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.42.1');
    const b = node(engine, '127.63.42.2');
    const [, qb] = connectPair(a, b);
    assert.throws(() => b.cq.pollInto(new Float64Array(6) as never), { name: 'TypeError', message: /cq\.pollInto: words.*Uint32Array/ });
    assert.throws(
      () => qb.postRecvBatch(b.mr, new Uint32Array([1, 0, 64, 2, 64 * 1024 - 8, 64])),
      { name: 'RangeError', message: 'qp.postRecvBatch: wr 1 (offset 65528, length 64) lies outside the 65536-byte region' },
    );
    assert.throws(() => qb.postRecvBatch(b.mr, new Uint32Array(RECV_WR_WORDS), 2), { message: /qp\.postRecvBatch: count/ });
    assert.equal(qb.query().recvWrsPosted ?? 0, 0, 'nothing of a refused batch was posted');
    const other = b.pd.regMr(Buffer.alloc(64), ['LOCAL_WRITE']);
    other.dereg();
    assert.throws(() => qb.postRecvBatch(other, new Uint32Array([1, 0, 64])), { name: 'TypeError', message: /live MemoryRegion/ });
  } finally {
    engine.stop();
  }
});
