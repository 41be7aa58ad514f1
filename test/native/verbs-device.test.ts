// The soft device through the TS API: open, query, errors with errno codes,
// UD unicast and multicast between two devices in one engine over real UDP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { isVerbsError, openDevice } from '../../src/native/verbs.js';
import { QKEY, createQp, node, pollN, pollOne, startEngine, udQp } from './verbs-helpers.js';

test('a device opens on a loopback address and reports what ibv_devinfo would', () => {
  const engine = startEngine();
  try {
    const n = node(engine, '127.63.1.1');
    assert.equal(n.device.backend, 'soft');
    assert.equal(n.device.gid, '::ffff:127.63.1.1');
    assert.equal(n.device.interface.name, 'lo');
    assert.deepEqual(n.device.queryGidTable(), [{ index: 0, gid: '::ffff:127.63.1.1', type: 'RoCE v2' }]);
    const port = n.device.queryPort();
    assert.equal(port.state, 'PORT_ACTIVE');
    assert.equal(port.activeMtu, 4096);
    const attr = n.device.query();
    assert.equal(attr.maxMcastQpAttach, 56);
    assert.equal(typeof attr.nodeGuid, 'bigint');
    const report = n.device.netReport();
    assert.ok(report !== null, 'a soft device reports its receive path');
    assert.equal(report.receiveMode, 'plain-udp');
    assert.equal(report.icrcPolicy, 'strict');
    assert.ok(report.rcvbufGranted > 0);
    if (process.getuid?.() === 0) assert.equal(report.ipv4Id, 'zero', report.ipv4IdDetail);
    assert.equal(n.mr.length, 64 * 1024);
    assert.notEqual(n.mr.lkey, n.mr.rkey);
  } finally {
    engine.stop();
  }
});

test('opening a taken address or an unknown interface fails with the errno code', () => {
  const engine = startEngine();
  try {
    openDevice(engine, { address: '127.63.2.1' });
    assert.throws(() => openDevice(engine, { address: '127.63.2.1' }), (e: unknown) => isVerbsError(e) && e.code === 'EADDRINUSE');
    assert.throws(() => openDevice(engine, { name: 'nosuchif9' }), (e: unknown) => isVerbsError(e) && e.code === 'ENODEV');
    assert.throws(() => openDevice(engine, { address: '192.0.2.1' }), (e: unknown) => isVerbsError(e) && e.code === 'EADDRNOTAVAIL');
    assert.throws(() => openDevice(engine, {}), TypeError);
  } finally {
    engine.stop();
  }
});

test('the af-packet receive mode is reported, and an unknown mode is refused by name', () => {
  const engine = startEngine();
  try {
    if (process.getuid?.() === 0) {
      const d = openDevice(engine, { address: '127.63.2.9', receiveMode: 'af-packet' });
      assert.equal(d.netReport()?.receiveMode, 'af-packet');
      d.close();
    }
    assert.throws(
      () => openDevice(engine, { address: '127.63.2.10', receiveMode: 'raw' as never }),
      (e: unknown) => e instanceof TypeError && e.message === "openDevice: receiveMode must be 'plain-udp' or 'af-packet', got 'raw'",
    );
  } finally {
    engine.stop();
  }
});

test('an illegal modify throws EINVAL naming the transition or the attribute', () => {
  const engine = startEngine();
  try {
    const n = node(engine, '127.63.3.1');
    const qp = createQp(n, 'RC');
    assert.equal(qp.state, 'RESET');
    assert.throws(() => qp.modify({ state: 'RTS' }), (e: unknown) => isVerbsError(e) && e.code === 'EINVAL' && /RESET→RTS/.test(e.message));
    qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: [] });
    assert.throws(
      () => qp.modify({ state: 'RTR', pathMtu: 1024, rqPsn: 0, ahAttr: { dgid: '127.63.3.2' } }),
      (e: unknown) => isVerbsError(e) && e.code === 'EINVAL' && /IBV_QP_DEST_QPN/.test(e.message),
    );
    assert.throws(
      () => qp.modify({ state: 'RTR', pathMtu: 1024, rqPsn: 0, destQpNum: 5, ahAttr: { dgid: '127.63.3.2' }, maxDestRdAtomic: 1, minRnrTimer: 1, qkey: 7 }),
      (e: unknown) => isVerbsError(e) && /IBV_QP_QKEY/.test(e.message),
    );
    assert.throws(() => qp.modify({ state: 'RTR', bogus: 1 } as never), /unknown attribute 'bogus'/);
    assert.throws(() => qp.modify({ timeout: 300 }), { name: 'RangeError', message: 'qp.modify: timeout must be an integer in 0..255, got 300' });
    assert.equal(qp.query().state, 'INIT');
  } finally {
    engine.stop();
  }
});

test('UD SEND between two devices delivers the payload after the 40-byte GRH area', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.4.1');
    const b = node(engine, '127.63.4.2');
    const qa = udQp(a);
    const qb = udQp(b);
    qb.postRecv([{ wrId: 7n, sgList: [b.mr.sge(0, 40 + 512)] }]);
    a.buf.write('tick 1', 0);
    const ah = a.pd.createAh({ dgid: b.device.gid });
    qa.postSend([{ wrId: 1n, sgList: [a.mr.sge(0, 6)], ah, remoteQpn: qb.qpNum, remoteQkey: QKEY }]);
    const recv = await pollOne(b.cq);
    assert.equal(recv.status, 'IBV_WC_SUCCESS');
    assert.equal(recv.opcode, 'IBV_WC_RECV');
    assert.equal(recv.wrId, 7n);
    assert.equal(recv.byteLen, 46);
    assert.equal(recv.srcQp, qa.qpNum);
    assert.equal(b.buf.subarray(40, 46).toString(), 'tick 1');
    const sent = await pollOne(a.cq);
    assert.equal(sent.status, 'IBV_WC_SUCCESS');
    assert.equal(sent.opcode, 'IBV_WC_SEND');
    // An inline send from a plain Buffer, and a Buffer inside the MR as an SGE.
    qb.postRecv([{ wrId: 8n, sgList: [b.buf.subarray(1024, 1024 + 552)] }]);
    qa.postSend([{ wrId: 2n, sgList: [Buffer.from('inline!')], inline: true, ah, remoteQpn: qb.qpNum, remoteQkey: QKEY }]);
    const second = await pollOne(b.cq);
    assert.equal(second.wrId, 8n);
    assert.equal(b.buf.subarray(1064, 1071).toString(), 'inline!');
    assert.equal(b.device.counters().ingress['delivered'], 2);
  } finally {
    engine.stop();
  }
});

test('UD multicast: every attached QP in two devices gets one copy, a wrong Q_Key is dropped and counted', async () => {
  const engine = startEngine();
  try {
    const sender = node(engine, '127.63.5.1');
    const a = node(engine, '127.63.5.2');
    const b = node(engine, '127.63.5.3');
    const group = '239.63.5.1';
    const a1 = udQp(a);
    const a2 = udQp(a);
    const b1 = udQp(b);
    const bWrong = udQp(b, QKEY + 1);
    for (const qp of [a1, a2, b1, bWrong]) qp.attachMcast(group);
    a1.attachMcast(`::ffff:${group}`); // the MGID form, and a second attach: still one copy
    a1.postRecv([{ wrId: 1n, sgList: [a.mr.sge(0, 1024)] }]);
    a2.postRecv([{ wrId: 2n, sgList: [a.mr.sge(1024, 1024)] }]);
    b1.postRecv([{ wrId: 3n, sgList: [b.mr.sge(0, 1024)] }]);
    bWrong.postRecv([{ wrId: 4n, sgList: [b.mr.sge(1024, 1024)] }]);
    const tx = udQp(sender);
    const ah = sender.pd.createAh({ dgid: group });
    sender.buf.write('frame 1');
    tx.postSend([{ wrId: 9n, sgList: [sender.mr.sge(0, 7)], ah, remoteQpn: 0xffffff, remoteQkey: QKEY }]);
    const atA = await pollN(a.cq, 2);
    const atB = await pollN(b.cq, 1);
    await sleep(30);
    atA.push(...a.cq.poll(16));
    atB.push(...b.cq.poll(16));
    assert.deepEqual(atA.map((w) => w.qpNum).sort(), [a1.qpNum, a2.qpNum].sort());
    assert.deepEqual(atB.map((w) => w.qpNum), [b1.qpNum]);
    for (const wc of [...atA, ...atB]) {
      assert.equal(wc.status, 'IBV_WC_SUCCESS');
      assert.equal(wc.srcQp, tx.qpNum);
    }
    assert.equal(a.buf.subarray(40, 47).toString(), 'frame 1');
    assert.equal(b.device.counters().ingress['bad_qkey'], 1);
    assert.equal(b.device.queryPort().qkeyViolCntr, 1);
  } finally {
    engine.stop();
  }
});

test('async events: a CQ that overflows raises IBV_EVENT_CQ_ERR', async () => {
  const engine = startEngine();
  try {
    const a = node(engine, '127.63.6.1');
    const b = node(engine, '127.63.6.2');
    const tiny = b.device.createCq(1);
    const qb = b.pd.createQp({ type: 'UD', sendCq: tiny, recvCq: tiny, cap: { maxSendWr: 4, maxRecvWr: 4 } });
    qb.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qkey: QKEY });
    qb.modify({ state: 'RTR' });
    qb.postRecv([0, 1, 2].map((i) => ({ wrId: BigInt(i), sgList: [b.mr.sge(i * 1024, 1024)] })));
    const qa = udQp(a);
    const ah = a.pd.createAh({ dgid: b.device.gid });
    qa.postSend([0, 1, 2].map((i) => ({ wrId: BigInt(i), sgList: [a.mr.sge(0, 8)], ah, remoteQpn: qb.qpNum, remoteQkey: QKEY })));
    let event = null;
    for (let i = 0; i < 2000 && event === null; i++) {
      event = b.device.getAsyncEvent();
      if (event === null) await sleep(1);
    }
    assert.ok(event, 'an async event');
    assert.equal(event.type, 'IBV_EVENT_CQ_ERR');
    assert.equal(event.element, 'CQ');
    assert.equal(event.elementId, tiny.handle);
  } finally {
    engine.stop();
  }
});
