// protobufjs and the native (protozero) order codec agree on every message:
//  - every message protobufjs encodes (each body, edge values: max uint64,
//    negative int64, empty bodies, explicit zeros) decodes natively, and our
//    re-encoding decodes in protobufjs to the same object;
//  - when protobufjs's own bytes carry only non-default fields, our
//    re-encoding is byte-for-byte the same;
//  - what protobufjs lets through but the gateway must refuse (enum numbers
//    the proto does not define, missing required fields) is refused.
// Usage: node protobufjs_interop.mjs --tool BIN --proto orders.proto --node-modules DIR
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const require = createRequire(join(arg('--node-modules'), 'noop.js'));
const protobuf = require('protobufjs');
const root = protobuf.loadSync(arg('--proto'));
const OrderMessage = root.lookupType('qpgate.orders.v1.OrderMessage');

const MAX_U64 = '18446744073709551615';
const MAX_I64 = '9223372036854775807';
const MIN_I64 = '-9223372036854775808';

// [name, object, expectation]: 'same' = bytes identical, 'equal' = objects equal, 'refused' = native refuses.
const cases = [
  ['hello empty', { hello: {} }, 'same'],
  ['hello', { hello: { lastAppSeq: MAX_U64 } }, 'same'],
  ['new order', { newOrder: { clientOrderId: '42', instrumentId: 7, side: 1, price: '10125', quantity: '10', timeInForce: 1, account: '100' } }, 'same'],
  ['new order extremes', { newOrder: { clientOrderId: MAX_U64, instrumentId: 4294967295, side: 2, price: MIN_I64, quantity: MAX_I64, timeInForce: 2, account: MAX_U64 } }, 'same'],
  ['new order negative price', { newOrder: { clientOrderId: '1', instrumentId: 1, side: 1, price: '-5', quantity: '1', timeInForce: 1, account: '1' } }, 'same'],
  // protobufjs leaves proto3 zeros off the wire: a required field set to 0 is missing.
  ['new order with zero instrument', { newOrder: { clientOrderId: '1', instrumentId: 0, side: 1, price: '0', quantity: '1', timeInForce: 1, account: '0' } }, 'refused'],
  ['fill with zero leaves', { fill: { appSeq: '1', clientOrderId: '2', orderId: '3', instrumentId: 4, side: 1, price: '7', quantity: '5', leavesQuantity: '0', tradeId: '1', liquidity: 1 } }, 'equal'],
  ['cancel', { cancel: { clientOrderId: '5', origClientOrderId: '4', instrumentId: 3 } }, 'same'],
  ['replace', { replace: { clientOrderId: '5', origClientOrderId: '4', instrumentId: 3, price: '200', quantity: '7' } }, 'same'],
  ['welcome', { welcome: { appSeq: '9', resendFrom: '10' } }, 'same'],
  ['welcome empty', { welcome: {} }, 'same'],
  ['ack', { ack: { appSeq: '1', clientOrderId: '2', orderId: '3', possibleResend: true } }, 'same'],
  ['reject', { reject: { appSeq: '1', clientOrderId: '2', reason: 16, text: 'price 101 is not a multiple of tick 5 — ü', possibleResend: true } }, 'same'],
  ['reject unsequenced', { reject: { reason: 13, text: 'ahead' } }, 'same'],
  ['fill', { fill: { appSeq: '1', clientOrderId: '2', orderId: '3', instrumentId: 4, side: 2, price: '-100', quantity: '5', leavesQuantity: '6', tradeId: MAX_U64, liquidity: 2 } }, 'same'],
  ['cancel ack', { cancelAck: { appSeq: '1', clientOrderId: '2', origClientOrderId: '3', orderId: '4', reason: 4, cancelledQuantity: '5', possibleResend: true } }, 'same'],
  ['replace ack', { replaceAck: { appSeq: '1', clientOrderId: '2', origClientOrderId: '3', orderId: '4', price: '5', quantity: '6', priorityKept: true, possibleResend: true } }, 'same'],
  ['side 9 (protobufjs writes it)', { newOrder: { clientOrderId: '1', instrumentId: 1, side: 9, price: '1', quantity: '1', timeInForce: 1, account: '1' } }, 'refused'],
  ['reason -1', { reject: { appSeq: '1', reason: -1 } }, 'refused'],
  ['new order without account', { newOrder: { clientOrderId: '1', instrumentId: 1, side: 1, price: '1', quantity: '1', timeInForce: 1 } }, 'refused'],
  ['cancel without orig', { cancel: { clientOrderId: '1', instrumentId: 1 } }, 'refused'],
];

const dir = mkdtempSync(join(tmpdir(), 'qpgate-interop-'));
try {
  const encoded = cases.map(([, obj]) => OrderMessage.encode(OrderMessage.fromObject(obj)).finish());
  const frames = [];
  for (const e of encoded) {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(e.length);
    frames.push(len, Buffer.from(e));
  }
  writeFileSync(join(dir, 'in'), Buffer.concat(frames));
  execFileSync(arg('--tool'), [join(dir, 'in'), join(dir, 'out')]);
  const out = readFileSync(join(dir, 'out'));
  const toObject = (m) => OrderMessage.toObject(m, { longs: String, enums: Number, defaults: true, oneofs: true });
  let at = 0;
  let failures = 0;
  cases.forEach(([name, obj, expect], i) => {
    const status = out[at];
    const len = out.readUInt32LE(at + 1);
    const payload = out.subarray(at + 5, at + 5 + len);
    at += 5 + len;
    try {
      if (expect === 'refused') {
        assert.equal(status, 1, `${name}: the native codec accepted what it must refuse`);
        console.log(`ok   ${name}: refused: ${payload.toString()}`);
        return;
      }
      assert.equal(status, 0, `${name}: native refused: ${payload.toString()}`);
      const theirs = toObject(OrderMessage.decode(encoded[i]));
      const ours = toObject(OrderMessage.decode(payload));
      assert.deepEqual(ours, theirs, `${name}: protobufjs reads our encoding differently`);
      if (expect === 'same') {
        assert.equal(Buffer.from(payload).toString('hex'), Buffer.from(encoded[i]).toString('hex'), `${name}: bytes differ`);
      }
      console.log(`ok   ${name}`);
    } catch (e) {
      failures += 1;
      console.log(`FAIL ${e.message}`);
    }
  });
  if (failures > 0) process.exit(1);
  console.log(`${cases.length} messages: protobufjs and protozero agree`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
