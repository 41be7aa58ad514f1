// The gateway killed with SIGKILL in the middle of an order stream and
// restarted on the same state dir (journal, sessions.json): every acked order
// is still there (fills against it, the final cancels, the risk words all
// match the model), and the clients resynchronise with Hello — each session's
// app_seqs run 1, 2, 3... across the crash with no duplicate and no gap, and
// every order has exactly one answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OrderClient } from '../../src/orders/client.js';
import type { SequencedMessage } from '../../src/orders/messages.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { checkAgainstModel, orderStream } from './model-check.js';
import { cancelResting, checkRisk, clientSide, quiesce } from './e2e-support.js';

const SESSIONS = 4;
const PER_SESSION = Number(process.env['QPGATE_ORDERS_RESTART_COUNT'] ?? 3000);

test('SIGKILL mid-stream and restart: acked orders survive, clients resync with no duplicate and no lost ack', { timeout: 300_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml({ selfMatch: 'cancel-oldest' })}`);
  const side = await clientSide();
  const clients: OrderClient[] = [];
  let gw: GatewayProcess | undefined = await startGatewayProcess(['--config', file]);
  const stateDir = gw.stateDir;
  try {
    for (let s = 0; s < SESSIONS; s++) {
      clients.push(await OrderClient.connect({ url: gw.url, token: TOKENS.desk, name: `crash-${s}`, accounts: [BigInt(s + 1)], engine: side.engine, device: side.device, window: 32 }));
    }
    const messages: SequencedMessage[][] = clients.map(() => []);
    let answered = 0;
    clients.forEach((c, s) =>
      c.on('message', (m: SequencedMessage) => {
        messages[s]!.push(m);
        if (m.kind === 'ack' || m.kind === 'reject') answered++;
      }),
    );
    const streams = clients.map((_, s) => orderStream(s, PER_SESSION, 7));
    const all = Promise.all(clients.map((c, s) => Promise.all(streams[s]!.map((o) => c.newOrder(o)))));

    // Kill it once about a third of the orders have been answered.
    const total = SESSIONS * PER_SESSION;
    while (answered < total / 3) await new Promise((r) => setTimeout(r, 2));
    gw.child.kill('SIGKILL');
    assert.equal(await gw.exited, null, 'killed by the signal');
    const ackedBeforeKill = new Map<string, bigint>();
    messages.forEach((list, s) => list.forEach((m) => m.kind === 'ack' && ackedBeforeKill.set(`${s}:${m.clientOrderId}`, m.orderId)));
    assert.ok(answered < total, 'the kill came mid-stream');
    for (const c of clients) c.disconnect();

    gw = await startGatewayProcess(['--config', file, '--set', `state.dir=${stateDir}`]);
    for (const c of clients) await c.reconnect({ url: gw.url });
    await all;
    await quiesce(gw.url, clients);

    // The whole run, both gateway lives, against the model (which also checks
    // app_seq 1, 2, 3... per session and exactly one answer per order).
    const check = checkAgainstModel(streams, messages, 'cancel-oldest');
    for (const [k, orderId] of ackedBeforeKill) {
      const [s, id] = k.split(':') as [string, string];
      const ack = messages[Number(s)]!.find((m) => m.kind === 'ack' && m.clientOrderId === BigInt(id));
      assert.equal(ack?.kind === 'ack' && ack.orderId, orderId, `${k}: acked as order ${orderId} before the kill`);
    }
    assert.ok(clients.some((c) => c.stats().resent > 0) || ackedBeforeKill.size > 0);
    await cancelResting(clients, check, 50_000_000n);
    await quiesce(gw.url, clients);
    await checkRisk(gw.url, side.device, side.engine, check);
    console.log(
      `# killed after ${ackedBeforeKill.size} acks; ${check.accepted} acked, ${check.rejected} rejected, ${check.trades} trades over both lives; ` +
        `resent ${clients.reduce((n, c) => n + c.stats().resent, 0)} unanswered requests, dropped ${clients.reduce((n, c) => n + c.stats().duplicates, 0)} duplicate copies`,
    );
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await side.close();
    if (gw) {
      gw.child.kill('SIGTERM');
      assert.equal(await gw.exited, 0, gw.output());
    }
  }
});
