// The ACK hold between soft ends (docs/protocol.md "The ACK hold"): the
// session handshake carries each side's ackHoldUs, both requesters then ask
// for ACKs to the window only, and an order's round trip is the order's SEND
// and the answer's SEND, not those and an ACK each. What a user relies on:
//   - one order in flight at a time is answered as before, every one of them;
//   - neither side asks for an ACK per message: the session's QP asks for a
//     few in many orders, and is asked for a few in many answers; what did
//     not ask is acknowledged by the hold;
//   - the handshake says what the gateway's responder does (ackHoldUs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startOrdersGateway, TOKENS } from './support.js';
import type { Gateway } from '../../src/gateway/service.js';

let gw: Gateway;
before(async () => {
  gw = await startOrdersGateway();
});
after(() => gw.close());

test('one order at a time between soft ends costs an ACK every few orders, not one per SEND each way', { timeout: 60_000 }, async () => {
  const client = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'ack-hold', accounts: [1n], device: { address: freeLoopbackAddress() } });
  const orders = 200;
  try {
    assert.equal(client.session.ackHoldUs, 500, "the gateway's soft responder holds ACKs 500 µs (kAckHoldNs)");
    for (let i = 1; i <= orders; i++) {
      // Buys below any sell: every order rests, one answer (its Ack) each.
      const answer = await client.newOrder({ clientOrderId: BigInt(i), instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n });
      assert.equal(answer.kind, 'ack', `order ${i}`);
    }
    // Counted on the client's QP, both directions, by packets (not by time, so load cannot move them):
    // per message, each of the 200 orders would have asked the gateway for an ACK, and each answer
    // would have asked the client for one. The ACKs the hold sends on its own are the rest.
    const c = client.transportCounters();
    assert.ok(c['ack_requests']! < orders / 8, `the client asked for ${c['ack_requests']} ACKs in ${orders} orders`);
    const asked = c['acks_sent']! - c['acks_held']!;
    assert.ok(asked < orders / 8, `the gateway asked for ${asked} ACKs in ${orders} answers`);
    assert.ok(c['acks_held']! > 0, 'the hold acknowledged what did not ask');
  } finally {
    await client.close();
  }
});
