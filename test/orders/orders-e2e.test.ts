// Order entry end to end on loopback, with the real native order service and
// the client library: 8 trading sessions (OrderClient over RC through the TS
// verbs API) against an in-process gateway, checked against the reference
// model (also with 5% of packets dropped and reordered); a risk session's
// CMP_SWAP on the kill switch.
//
// QPGATE_ORDERS_E2E_COUNT sets the number of orders (default 100,000),
// QPGATE_ORDERS_FAULTS_COUNT the number with faults (default 100,000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import { RiskClient, RdmaError } from '../../src/orders/risk-client.js';
import { Side, type SequencedMessage } from '../../src/orders/messages.js';
import type { Gateway } from '../../src/gateway/service.js';
import { faultCounters, setFaults, type FaultPlan } from '../../src/native/testing/faults.js';
import { call, ordersYaml, startOrdersGateway, TOKENS } from './support.js';
import { checkAgainstModel, orderStream } from './model-check.js';
import { cancelResting, checkRisk, clientSide, quiesce, scrape, SESSIONS, withProgress } from './e2e-support.js';

const ORDERS = Number(process.env['QPGATE_ORDERS_E2E_COUNT'] ?? 100_000);
// The journal's fsync policy for the streams (none | interval | every), to measure what fdatasync costs.
const FSYNC = process.env['QPGATE_ORDERS_E2E_FSYNC'] ?? 'none';
const FAULTY_ORDERS = Number(process.env['QPGATE_ORDERS_FAULTS_COUNT'] ?? 100_000);

/** Sends `count` orders from 8 sessions and checks everything against the model; returns the summary line. */
async function streamAndCheck(count: number, faults?: FaultPlan): Promise<string> {
  const gw: Gateway = await startOrdersGateway(ordersYaml({ selfMatch: 'cancel-oldest', fsync: FSYNC }));
  const side = await clientSide();
  const clients: OrderClient[] = [];
  try {
    for (let s = 0; s < SESSIONS; s++) {
      clients.push(
        await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: `e2e-${s}`, accounts: [BigInt(s + 1)], engine: side.engine, device: side.device, window: 64 }),
      );
    }
    // Faults on the client device, both ways: RC go-back-N must deliver every message once, in order.
    if (faults) setFaults(side.device, faults);
    const messages: SequencedMessage[][] = clients.map(() => []);
    clients.forEach((c, s) => c.on('message', (m: SequencedMessage) => messages[s]!.push(m)));
    const streams = clients.map((_, s) => orderStream(s, Math.ceil(count / SESSIONS), 42));

    const started = performance.now();
    await withProgress(gw.url, clients, Promise.all(clients.map((c, s) => Promise.all(streams[s]!.map((o) => c.newOrder(o))))));
    const seconds = (performance.now() - started) / 1000;
    await quiesce(gw.url, clients);

    const check = checkAgainstModel(streams, messages, 'cancel-oldest');
    const total = streams.reduce((n, x) => n + x.length, 0);
    assert.equal(check.accepted + check.rejected, total);
    assert.ok(check.trades > total / 10, `the stream trades (${check.trades} trades)`);

    // The books: what the model says rests is exactly what the gateway cancels.
    const cancelled = await cancelResting(clients, check, 50_000_000n);
    await quiesce(gw.url, clients);
    const injected = faults ? faultCounters(side.device) : undefined;
    if (faults) setFaults(side.device, null);
    await checkRisk(gw.url, side.device, side.engine, check);

    // The ack latency histogram counts every answer to a NewOrder and Cancel.
    const metrics = await scrape(gw.url);
    const samples = metrics('qpgate_order_ack_latency_seconds', 'qpgate_order_ack_latency_seconds_count');
    const acks = metrics('qpgate_order_acks_total', 'qpgate_order_acks_total');
    assert.equal(acks, check.accepted);
    assert.ok(samples !== undefined && samples >= total, `ack latency samples ${samples}`);
    const status = (await call(gw.url, 'GET', '/v1/status', TOKENS.viewer)).json;
    const latency = status.latencies.find((l: { name: string }) => l.name === 'order_ack');
    const faultText = injected
      ? `; faults: ${injected.tx_dropped + injected.rx_dropped} dropped, ${injected.tx_reordered + injected.rx_reordered} reordered of ${injected.tx_seen + injected.rx_seen} packets`
      : '';
    return (
      `# ${total} orders in ${seconds.toFixed(1)} s (${Math.round(total / seconds)} orders/s through the TS client), ` +
      `${check.accepted} acked, ${check.rejected} rejected, ${check.trades} trades, ${check.fills} fills, ${cancelled} resting cancelled; ` +
      `order→ack p50 ${latency.p50Us} µs p99 ${latency.p99Us} µs p99.9 ${latency.p999Us} µs (engine-side, journal fsync ${FSYNC})${faultText}`
    );
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await side.close();
    await gw.close();
  }
}

test(`${ORDERS.toLocaleString('en')} orders from ${SESSIONS} sessions: one answer each, fills and books equal the reference model, fills conserved`, { timeout: 900_000 }, async () => {
  console.log(await streamAndCheck(ORDERS));
});

test(`${FAULTY_ORDERS.toLocaleString('en')} orders with 5% of packets dropped and 5% reordered each way: the same checks hold`, { timeout: 900_000 }, async () => {
  const line = await streamAndCheck(FAULTY_ORDERS, { seed: 5, tx: { drop: 0.05, reorder: 0.05 }, rx: { drop: 0.05, reorder: 0.05 } });
  assert.match(line, /faults: [1-9]\d* dropped, [1-9]\d* reordered/);
  console.log(line);
});

test('a kill switch set by CMP_SWAP from a risk session rejects the account\'s next order; a risk session reaches only its accounts', { timeout: 60_000 }, async () => {
  const gw = await startOrdersGateway(ordersYaml());
  const side = await clientSide();
  let trader: OrderClient | undefined;
  let other: OrderClient | undefined;
  let risk: RiskClient | undefined;
  try {
    trader = await OrderClient.connect({ url: gw.url, token: TOKENS.desk2, name: 'kill-t', accounts: [1n], engine: side.engine, device: side.device });
    risk = await RiskClient.connect({ url: gw.url, token: TOKENS.risk, name: 'kill-r', accounts: [1n], engine: side.engine, device: side.device });
    const order = (id: bigint) => trader!.newOrder({ clientOrderId: id, instrumentId: 1, side: Side.SIDE_BUY, price: 9000, quantity: 1, account: 1n });

    assert.equal((await order(1n)).kind, 'ack');
    assert.equal(await risk.compareSwap(1n, 'killSwitch', 0n, 1n), 0n, 'CMP_SWAP saw the switch off and set it');
    assert.equal(await risk.read(1n, 'killSwitch'), 1n);
    const killed = await order(2n);
    assert.equal(killed.kind, 'reject');
    assert.equal(killed.kind === 'reject' && killed.reasonName, 'KILL_SWITCH');
    assert.equal(killed.kind === 'reject' && killed.text, 'account 1: kill switch is set');
    assert.equal(await risk.compareSwap(1n, 'killSwitch', 0n, 1n), 1n, 'a second CMP_SWAP 0→1 fails: it is set already');
    assert.equal(await risk.compareSwap(1n, 'killSwitch', 1n, 0n), 1n);
    assert.equal((await order(3n)).kind, 'ack', 'cleared: orders go through again');

    // FETCH_ADD on the credit limit; the order path reads it before it acks.
    const limit = await risk.read(1n, 'creditLimit');
    assert.equal(await risk.fetchAdd(1n, 'creditLimit', -limit), limit);
    const over = await order(4n);
    assert.equal(over.kind === 'reject' && over.reasonName, 'CREDIT_LIMIT');
    await risk.fetchAdd(1n, 'creditLimit', limit);
    const words = await risk.readAll(1n);
    assert.deepEqual([words.openOrders, words.openNotional, words.killSwitch, words.creditLimit], [2n, 18000n, 0n, limit]);

    // Account 2's page, granted to a trading session of account 2: the risk session of account 1 is refused.
    other = await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: 'kill-o', accounts: [2n], engine: side.engine, device: side.device });
    assert.throws(() => risk!.region(2n, 'risk.remote'), /no risk\.remote region for account 2 in this session \(entitled: 1\)/);
    const page2 = other.session.regions.find((r) => r.account === 2n)!;
    await assert.rejects(risk.raw('RDMA_READ', page2.addr, page2.rkey), (e: unknown) => e instanceof RdmaError && e.status === 'IBV_WC_REM_ACCESS_ERR');

    const metrics = await scrape(gw.url);
    const rejects = (reason: string) => metrics('qpgate_order_rejects_total', 'qpgate_order_rejects_total', { reason });
    assert.equal(rejects('KILL_SWITCH'), 1);
    assert.equal(rejects('CREDIT_LIMIT'), 1);
  } finally {
    await trader?.close().catch(() => undefined);
    await other?.close().catch(() => undefined);
    await risk?.close().catch(() => undefined);
    await side.close();
    await gw.close();
  }
});

