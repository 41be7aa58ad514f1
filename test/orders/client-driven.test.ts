// The order and risk clients drive their QP from the JS thread (Engine.startDriven,
// src/orders/rc-endpoint.ts): no engine thread of their own, every verbs call
// inline, and the event loop watching the engine's sockets and protocol
// deadline. What a user relies on:
//   - a client starts no thread (a 2-CPU host keeps its second CPU);
//   - a SEND lost on the wire is retransmitted after the ACK timeout while JS
//     only awaits (nothing polls: the timer in the engine's epoll set wakes
//     the event loop);
//   - many orders in flight are all answered, with and without busy-polling;
//   - close() with orders in flight fails them and leaves the process sound;
//   - a peer flooding the client's port cannot hold the JS thread: timers run
//     and orders are still answered.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { faultCounters, setFaults } from '../../src/native/testing/faults.js';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startOrdersGateway, TOKENS } from './support.js';
import type { Gateway } from '../../src/gateway/service.js';

const order = (id: number, account = 1n) => ({
  clientOrderId: BigInt(id),
  instrumentId: 1,
  side: id % 2 === 0 ? Side.SIDE_BUY : Side.SIDE_SELL,
  price: 100 + (id % 7),
  quantity: 1,
  account,
});

let gw: Gateway;
before(async () => {
  gw = await startOrdersGateway();
});
after(() => gw.close());

const threadNames = (): string[] =>
  readdirSync('/proc/self/task').map((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
const engineThreads = (): number => threadNames().filter((n) => n === 'qpgate-engine').length;

test('an order client and a risk client start no engine thread: the JS thread drives their QPs', { timeout: 60_000 }, async () => {
  const before = engineThreads(); // the gateway's own
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'driven', accounts: [1n], device: { address: freeLoopbackAddress() } });
  const risk = await RiskClient.connect({ url: gw.url, token: TOKENS.risk, name: 'driven-risk', accounts: [1n], device: { address: freeLoopbackAddress() } });
  try {
    assert.equal(engineThreads(), before, 'no qpgate-engine thread was added');
    assert.equal((await client.newOrder(order(1))).kind, 'ack');
    assert.equal(typeof (await risk.fetchAdd(1n, 'creditLimit', 0n)), 'bigint');
  } finally {
    await client.close();
    await risk.close();
  }
});

test('a dropped SEND is retransmitted after the ACK timeout while JS only awaits', { timeout: 60_000 }, async () => {
  // busyPollUs 0: after the post nothing polls; only the event loop's watch can bring the answer.
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'retransmit', accounts: [1n], device: { address: freeLoopbackAddress() }, busyPollUs: 0 });
  try {
    // The next SEND (opcode 0x04, SEND_ONLY) we transmit is lost once.
    setFaults(client.device, { tx: { drop: 1 }, opcodes: [0x04], maxFaults: 1 });
    const answer = await client.newOrder(order(1));
    assert.equal(answer.kind, 'ack');
    assert.equal(faultCounters(client.device).tx_dropped, 1, 'the first transmission was dropped');
    setFaults(client.device, null);
    assert.equal((await client.newOrder(order(2))).kind, 'ack', 'the session goes on');
  } finally {
    await client.close();
  }
});

test('600 orders in flight are all answered, busy-polling or not', { timeout: 120_000 }, async () => {
  for (const busyPollUs of [0, 50]) {
    const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: `many-${busyPollUs}`, accounts: [2n], device: { address: freeLoopbackAddress() }, busyPollUs });
    try {
      const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => client.newOrder(order(i + 1, 2n))));
      assert.deepEqual(new Set(answers.map((a) => a.kind)), new Set(['ack']));
      assert.equal(client.stats().inFlight, 0);
    } finally {
      await client.close();
    }
  }
});

test('close() with orders in flight fails them, and a new client on the same name works', { timeout: 60_000 }, async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const options = { url: gw.url, token: TOKENS.desk, name: 'close-busy', accounts: [3n], busyPollUs: 0 };
    const client = await OrderClient.connect({ ...options, device: { address: freeLoopbackAddress() } });
    const pending = Array.from({ length: 200 }, (_, i) => client.newOrder(order(i + 1, 3n)).then((a) => a.kind, (e: Error) => e.message));
    await client.close();
    const outcomes = await Promise.all(pending);
    for (const o of outcomes) assert.ok(o === 'ack' || o === 'reject' || /closed/.test(o), `an order settled with ${o}`);
    assert.ok(outcomes.some((o) => /closed/.test(o)), 'orders still in flight at close() were failed');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the closed engine's fds are gone from the event loop
    const again = await OrderClient.connect({ ...options, device: { address: freeLoopbackAddress() }, takeover: true, lastAppSeq: client.lastAppSeq });
    try {
      assert.equal((await again.newOrder(order(1000, 3n))).kind, 'ack');
    } finally {
      await again.close();
    }
    assert.deepEqual(uncaught, []);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});

test("a peer flooding the client's port cannot hold the JS thread", { timeout: 60_000 }, async () => {
  const address = freeLoopbackAddress();
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'flooded', accounts: [4n], device: { address } });
  // Garbage datagrams to the client's RoCEv2 port from another process, up
  // to 64 every millisecond (tens of thousands a second: what a broken or
  // hostile peer could send without also filling the socket so that the
  // gateway's own packets are lost, which no driving mode could prevent).
  const flooder = spawn(process.execPath, [
    '-e',
    `const s = require('node:dgram').createSocket('udp4'); const b = Buffer.alloc(64, 0xab);
     setInterval(() => { for (let i = 0; i < 64; i++) s.send(b, 4791, ${JSON.stringify(address)}); }, 1);`,
  ], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 300)); // the flood is on
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const answers = [];
    const until = Date.now() + 1000;
    let id = 1;
    while (Date.now() < until) {
      const answer = client.newOrder(order(id++, 4n));
      const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`order ${id - 1}: no answer within 5 s during the flood`)), 5000).unref());
      answers.push((await Promise.race([answer, late])).kind);
    }
    clearInterval(timer);
    const { wire, ingress } = client.device.counters();
    const refused = Object.entries({ ...wire, ...ingress }).filter(([k]) => !['accepted', 'cnp', 'delivered'].includes(k)).reduce((n, [, v]) => n + v, 0);
    assert.ok(refused > 1000, `the garbage reached the device and was counted as refused (${refused})`);
    assert.ok(answers.length > 0 && answers.every((k) => k === 'ack'), 'orders were answered during the flood');
    // 1 s of a 10 ms interval: a JS thread held by the flood would run none.
    assert.ok(ticks >= 5, `timers ran during the flood (${ticks} ticks of 10 ms in 1 s)`);
  } finally {
    flooder.kill('SIGKILL');
    await client.close();
  }
});
