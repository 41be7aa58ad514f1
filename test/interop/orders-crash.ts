// The order side of the guest's SIGKILL test (gateway-rxe-guest.sh): an
// OrderClient rests ORDERS buys and waits for every ack; it says so on
// stdout ('acked'), and the script SIGKILLs the gateway and starts it again
// on its state dir, then writes the new gateway's URL and token to our stdin. A new
// client of the same session (lastAppSeq 0, as a trading app that lost its
// state would be) then reconnects: the gateway's journal must resend every
// app_seq it acknowledged before the kill (its Hello with app_seq 0 is caught
// up to the last one), each order sent again is answered with its first ack
// (possible_resend, same order id and app_seq), and each is still in the
// book to cancel. Prints one JSON line; gateway-rxe.test.ts asserts.
//
//   node dist/test/interop/orders-crash.js URL TOKEN ADDRESS   (soft device, af-packet receive)
import { createInterface } from 'node:readline';

import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { OrderClient } from '../../src/orders/client.js';
import { Side, type SequencedMessage } from '../../src/orders/messages.js';

const ORDERS = 10;  // gateway-rxe.test.ts expects 10
const INSTRUMENT = 1002;
const NAME = 'rxe-crash';

const [url, token, address] = process.argv.slice(2) as [string, string, string];
if (url === undefined) {
  // `node --test dist/test/` runs every file under test/ without arguments.
  console.log('# orders-crash: the guest side of gateway-rxe.test.ts (run with URL TOKEN ADDRESS); nothing to do here');
  process.exit(0);
}
// One engine and device for both clients: the second takes the first one's place.
const engine = new Engine({ hugePages: false });
await engine.start();
const device = openDevice(engine, { address, receiveMode: 'af-packet' });
const json = (v: unknown) => JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
const summary = (m: SequencedMessage) => ({ kind: m.kind, appSeq: m.appSeq, ...('clientOrderId' in m ? { clientOrderId: m.clientOrderId } : {}), ...('orderId' in m ? { orderId: m.orderId } : {}) });

const before = await OrderClient.connect({ url, token, name: NAME, accounts: [1n], engine, device, timeoutMs: 60_000, helloTimeoutMs: 60_000 });
const acked = [];
for (let i = 1; i <= ORDERS; i++) {
  acked.push(summary(await before.newOrder({ clientOrderId: BigInt(i), instrumentId: INSTRUMENT, side: Side.SIDE_BUY, price: 9_000 + i, quantity: 1, account: 1n })));
}
before.disconnect();  // as the gateway's death leaves it: no DELETE
process.stdout.write('acked\n');

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
// The restarted gateway's URL and its admin token (a new one at every start).
const [restartedUrl, restartedToken] = (((await lines.next()).value as string | undefined) ?? '').trim().split(' ') as [string, string];

const after = await OrderClient.connect({ url: restartedUrl, token: restartedToken, name: NAME, accounts: [1n], engine, device, timeoutMs: 60_000, helloTimeoutMs: 60_000, takeover: true });
// Hello with app_seq 0: the gateway resent all it had sequenced, up to lastAppSeq.
const caughtUp = { lastAppSeq: after.lastAppSeq, gaps: after.stats().gaps };
// The same orders again: each is answered with its first answer (possible_resend), from the journal.
const resubmitted = [];
for (let i = 1; i <= ORDERS; i++) {
  const m = await after.newOrder({ clientOrderId: BigInt(i), instrumentId: INSTRUMENT, side: Side.SIDE_BUY, price: 9_000 + i, quantity: 1, account: 1n });
  resubmitted.push({ ...summary(m), possibleResend: m.possibleResend });
}
const cancels = [];
for (let i = 1; i <= ORDERS; i++) {
  cancels.push(summary(await after.cancel({ clientOrderId: BigInt(100 + i), origClientOrderId: BigInt(i), instrumentId: INSTRUMENT })));
}
await after.close();
await before.close();
device.close();
await engine.stop();
process.stdout.write(`${json({ acked, caughtUp, resubmitted, cancels })}\n`);
process.exit(0);
