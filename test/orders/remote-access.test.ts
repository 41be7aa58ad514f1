// A trading session may only READ its account's local page: an atomic on it
// is a remote access error (IBV_WC_REM_ACCESS_ERR), the session's QP goes to
// ERR as the IB spec says, and cancel-on-disconnect cancels its resting order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RcEndpoint } from '../../src/orders/rc-endpoint.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { encodeHello, encodeRequest, Side } from '../../src/orders/messages.js';
import type { Wc } from '../../src/native/verbs.js';
import { call, ordersYaml, startOrdersGateway, TOKENS } from './support.js';
import { clientSide, scrape } from './e2e-support.js';

async function completion(ep: RcEndpoint, wrId: bigint): Promise<Wc> {
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    const wc = ep.cq.poll(16).find((w) => w.wrId === wrId);
    if (wc) return wc;
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.fail(`no completion for WR ${wrId}`);
}

test('an atomic from a trading session is a remote access error: its QP goes to ERR and its resting order is cancelled', { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway(ordersYaml());
  const side = await clientSide();
  const ep = await RcEndpoint.create(
    { url: gw.url, token: TOKENS.desk, name: 'atomic-trader', engine: side.engine, device: side.device },
    { role: 'trading', accounts: [3n], recvSlots: 16, sendSlots: 4, slotBytes: 512, maxRdAtomic: 1 },
  );
  let risk: RiskClient | undefined;
  try {
    const answer = await ep.connect((qp) =>
      qp.postRecv(Array.from({ length: 16 }, (_, i) => ({ wrId: 100n + BigInt(i), sgList: [ep.mr.sge(ep.recvOffset(i), 512)] }))),
    );
    const send = (slot: number, bytes: Uint8Array, wrId: bigint) => {
      ep.buffer.set(bytes, ep.sendOffset(slot));
      ep.qp.postSend([{ wrId, opcode: 'SEND', sgList: [ep.mr.sge(ep.sendOffset(slot), bytes.byteLength)] }]);
    };
    send(0, encodeHello(0n), 1n);
    send(1, encodeRequest({ kind: 'newOrder', value: { clientOrderId: 1n, instrumentId: 1, side: Side.SIDE_BUY, price: 9000, quantity: 4, account: 3n } }), 2n);
    assert.equal((await completion(ep, 2n)).status, 'IBV_WC_SUCCESS');
    risk = await RiskClient.connect({ url: gw.url, token: TOKENS.ops, name: 'atomic-risk', accounts: [3n], engine: side.engine, device: side.device });
    const until = Date.now() + 5000;
    while ((await risk.read(3n, 'openOrders')) !== 1n && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    assert.equal(await risk.read(3n, 'openOrders'), 1n, 'the order rests');

    const page = answer.regions.find((r) => r.account === 3n && r.name === 'risk.local')!;
    assert.deepEqual(page.access, ['REMOTE_READ']);
    ep.qp.postSend([{ wrId: 3n, opcode: 'ATOMIC_FETCH_AND_ADD', sgList: [ep.mr.sge(ep.sendOffset(2), 8)], remoteAddr: page.addr + 8n, rkey: page.rkey, compareAdd: 1n }]);
    const wc = await completion(ep, 3n);
    assert.equal(wc.status, 'IBV_WC_REM_ACCESS_ERR');
    assert.equal(ep.qp.state, 'ERR');

    // The gateway's side: the session is lost, and cancel-on-disconnect took its order out.
    const end = Date.now() + 10_000;
    let info = (await call(gw.url, 'GET', `/v1/sessions/${answer.id}`, TOKENS.desk)).json;
    while (info.connected && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      info = (await call(gw.url, 'GET', `/v1/sessions/${answer.id}`, TOKENS.desk)).json;
    }
    assert.equal(info.connected, false, JSON.stringify(info));
    assert.equal(info.disconnected, true);
    // What ended it, as /v1/sessions tells an operator: the responder's QP went
    // to ERR without a completion of its own (its posted receives were flushed,
    // or the state check saw ERR first: both read the same).
    assert.equal(info.endedBy, 'QP state ERR', JSON.stringify(info));
    while ((await risk.read(3n, 'openOrders')) !== 0n && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(
      [await risk.read(3n, 'openOrders'), await risk.read(3n, 'openNotional'), await risk.read(3n, 'position')],
      [0n, 0n, 0n],
      'cancel-on-disconnect cancelled the resting order',
    );
    const metrics = await scrape(gw.url);
    assert.equal(metrics('qpgate_order_unsolicited_cancels_total', 'qpgate_order_unsolicited_cancels_total'), 1);
    assert.equal(metrics('qpgate_order_session_disconnects_total', 'qpgate_order_session_disconnects_total'), 1);
    // The name is free again: the same token reopens it (same id) without a 409.
    const again = await call(gw.url, 'POST', '/v1/sessions', TOKENS.desk, { role: 'trading', name: 'atomic-trader', qpn: 77, psn: 1, gid: '::ffff:127.9.9.9', mtu: 1024, accounts: ['3'] });
    assert.equal(again.status, 201, JSON.stringify(again.json));
    assert.equal(again.json.id, answer.id);
  } finally {
    await risk?.close().catch(() => undefined);
    await ep.close();
    await side.close();
    await gw.close();
  }
});
