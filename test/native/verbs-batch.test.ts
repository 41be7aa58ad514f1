// The allocation-free verbs calls of the clients' hot path, cq.pollInto,
// qp.postRecvBatch and qp.postSendBatch, against the soft backend over real
// UDP: they carry the same work as poll(), postRecv() and postSend(), and
// refuse bad arguments by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  RECV_WR_WORDS,
  SEND_WR_WORDS,
  SendFlagBit,
  WC_STATUS_NAMES,
  WC_WORDS,
  WcWord,
  type CompletionQueue,
} from '../../src/native/verbs.js';
import { loadAddon } from '../../src/native/addon.js';
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

test('postSendBatch sends what each WR says: its bytes, its 64-bit wr_id, a completion only when signaled', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.43.1');
    const b = node(engine, '127.63.43.2');
    const [qa, qb] = connectPair(a, b);
    qb.postRecvBatch(b.mr, new Uint32Array([10, 0, 256, 11, 256, 256, 12, 512, 256]));
    a.buf.fill(0x11, 4096, 4096 + 40);
    a.buf.fill(0x22, 8192, 8192 + 7);
    a.buf.fill(0x33, 9000, 9000 + 50);
    const { signaled } = SendFlagBit;
    // wr_id 0x00000002_00000001 signaled; 0x3 unsignaled; 0xffffffff_fffffff0 signaled and inline.
    const words = new Uint32Array([1, 2, 4096, 40, signaled, 3, 0, 8192, 7, 0, 0xfffffff0, 0xffffffff, 9000, 50, signaled | SendFlagBit.inline]);
    assert.equal(qa.postSendBatch(a.mr, words), 3);
    const sent = await pollIntoN(a.cq, 2);
    assert.deepEqual(
      sent.map((c) => [c.wrIdHigh, c.wrIdLow, c.status, c.opcode]),
      [
        [2, 1, 0, 0],
        [0xffffffff, 0xfffffff0, 0, 0],
      ],
      'two signaled SENDs completed, the unsignaled one did not',
    );
    const recv = await pollIntoN(b.cq, 3);
    assert.deepEqual(
      recv.map((c) => [c.wrIdLow, c.status, c.byteLen]),
      [
        [10, 0, 40],
        [11, 0, 7],
        [12, 0, 50],
      ],
    );
    assert.ok(b.buf.subarray(0, 40).every((x) => x === 0x11));
    assert.ok(b.buf.subarray(256, 263).every((x) => x === 0x22));
    assert.ok(b.buf.subarray(512, 562).every((x) => x === 0x33));
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
    assert.throws(
      () => qb.postSendBatch(b.mr, new Uint32Array([1, 0, 0, 64, SendFlagBit.signaled, 2, 0, 65500, 64, SendFlagBit.signaled])),
      { name: 'RangeError', message: 'qp.postSendBatch: wr 1 (offset 65500, length 64) lies outside the 65536-byte region' },
    );
    assert.throws(
      () => qb.postSendBatch(b.mr, new Uint32Array([1, 0, 0, 64, SendFlagBit.signaled | 0x30])),
      { name: 'RangeError', message: 'qp.postSendBatch: wr 0 has unknown send flag bits 48 (known: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8)' },
    );
    assert.throws(() => qb.postSendBatch(b.mr, new Uint32Array(SEND_WR_WORDS), 2), { message: /qp\.postSendBatch: count/ });
    assert.equal(qb.query().sendWrsOutstanding ?? 0, 0, 'nothing of a refused send batch was posted');
    assert.equal(qb.query().recvWrsPosted ?? 0, 0, 'nothing of a refused batch was posted');
    const other = b.pd.regMr(Buffer.alloc(64), ['LOCAL_WRITE']);
    other.dereg();
    assert.throws(() => qb.postRecvBatch(other, new Uint32Array([1, 0, 64])), { name: 'TypeError', message: /live MemoryRegion/ });
  } finally {
    engine.stop();
  }
});

test('busyPollInto drives a driven engine until a completion comes, returns 0 when its time is up, and refuses a threaded engine', () => {
  const engine = new (loadAddon().Engine)({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false });
  engine.startDriven(() => {});
  try {
    const a = node(engine, '127.63.44.1');
    const b = node(engine, '127.63.44.2');
    const [qa, qb] = connectPair(a, b);
    const words = new Uint32Array(4 * WC_WORDS);
    const t0 = process.hrtime.bigint();
    assert.equal(a.cq.busyPollInto(words, 2e6), 0, 'nothing posted: nothing completes');
    assert.ok(process.hrtime.bigint() - t0 >= 2_000_000n, 'it spun for its whole budget');
    qb.postRecvBatch(b.mr, new Uint32Array([9, 0, 64]));
    qa.postSendBatch(a.mr, new Uint32Array([4, 0, 0, 64, SendFlagBit.signaled]));
    // Nothing else drives the engine: the SEND, b's ACK and the completion all come from busyPollInto's cycles.
    assert.equal(a.cq.busyPollInto(words, 1e9), 1);
    assert.deepEqual([words[WcWord.wrIdLow], words[WcWord.status], words[WcWord.qpNum]], [4, 0, qa.qpNum]);
    assert.equal(b.cq.pollInto(words), 1, "b's receive completed in the same cycles");
    assert.throws(() => a.cq.busyPollInto(words, -1), { name: 'RangeError', message: /budgetNs/ });
  } finally {
    engine.stop();
  }
  const threaded = startEngine();
  try {
    const c = node(threaded, '127.63.45.1');
    assert.throws(() => c.cq.busyPollInto(new Uint32Array(WC_WORDS), 1000), { message: /not driven/ });
  } finally {
    threaded.stop();
  }
});
