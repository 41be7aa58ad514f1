// Issue 13, item 7: the kill switch and credit limit a risk session sets with
// RDMA atomics are journaled, so a gateway SIGKILLed and restarted on the
// same state dir still rejects the killed account's orders (KILL_SWITCH) and
// keeps the lowered credit limit, instead of coming back with the config's
// initial values. The risk client learns when its values are durable from
// the durable_* words of the local page (RiskClient.whenDurable), and the
// gateway is killed right then; after the restart the words are back before
// the first order is answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { Side } from '../../src/orders/messages.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { clientSide, scrape } from './e2e-support.js';

const LIMIT = 1_000_000_000_000_000n; // ordersYaml's creditLimit
const LOWERED = 5_000n;

test('a kill switch and credit limit set by RDMA atomics survive SIGKILL and restart', { timeout: 120_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  const side = await clientSide();
  let gw: GatewayProcess | undefined = await startGatewayProcess(['--config', file]);
  const stateDir = gw.stateDir;
  let risk: RiskClient | undefined;
  let trader: OrderClient | undefined;
  try {
    risk = await RiskClient.connect({ url: gw.url, token: TOKENS.ops, name: 'rr-risk', accounts: [1n, 2n], engine: side.engine, device: side.device });
    assert.equal(await risk.compareSwap(1n, 'killSwitch', 0n, 1n), 0n);
    assert.equal(await risk.fetchAdd(2n, 'creditLimit', LOWERED - LIMIT), LIMIT);
    // The atomics' ACKs leave before the engine has journaled the words
    // (docs/protocol.md §3.8): the durable_* words say when the journal has them.
    await risk.whenDurable(1n, 'killSwitch', 1n);
    await risk.whenDurable(2n, 'creditLimit', LOWERED);
    await risk.close().catch(() => undefined);
    risk = undefined;
    gw.child.kill('SIGKILL');
    assert.equal(await gw.exited, null, 'killed by the signal');
    gw = await startGatewayProcess(['--config', file, '--set', `state.dir=${stateDir}`]);

    trader = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'rr-trader', accounts: [1n, 2n, 3n], engine: side.engine, device: side.device });
    const order = (id: bigint, account: bigint, quantity: number) =>
      trader!.newOrder({ clientOrderId: id, instrumentId: 1, side: Side.SIDE_BUY, price: 9000, quantity, account });
    const killed = await order(1n, 1n, 1);
    assert.equal(killed.kind === 'reject' && killed.reasonName, 'KILL_SWITCH', 'a restart must not un-kill account 1');
    const over = await order(2n, 2n, 1); // 9000 > 5000
    assert.equal(over.kind === 'reject' && over.reasonName, 'CREDIT_LIMIT', "account 2's lowered limit is still in force");
    assert.equal((await order(3n, 3n, 1)).kind, 'ack', 'an untouched account trades as configured');

    risk = await RiskClient.connect({ url: gw.url, token: TOKENS.ops, name: 'rr-risk2', accounts: [1n, 2n], engine: side.engine, device: side.device });
    assert.equal(await risk.read(1n, 'killSwitch'), 1n, 'the restored value is in the registered word');
    assert.equal(await risk.read(2n, 'creditLimit'), LOWERED);
    const restored = await risk.readAll(2n);
    assert.deepEqual([restored.durableCreditLimit, restored.durableKillSwitch], [LOWERED, 0n], 'and in the durable words');
    const records = (await scrape(gw.url))('qpgate_order_risk_word_records_total', 'qpgate_order_risk_word_records_total');
    assert.equal(records, 0, 'nothing changed since the restart: no new record');
  } finally {
    await trader?.close().catch(() => undefined);
    await risk?.close().catch(() => undefined);
    await side.close();
    if (gw) {
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
  }
});
