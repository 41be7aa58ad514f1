// Shared by the end-to-end order tests: the client side (one engine and soft
// device for every session), waiting for quiet, the final cancels and the
// risk-word check against the model, and /metrics.
import assert from 'node:assert/strict';
import { Engine } from '../../src/native/engine.js';
import { openDevice, type Device } from '../../src/native/verbs.js';
import type { OrderClient } from '../../src/orders/client.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { call, TOKENS } from './support.js';
import type { CheckResult } from './model-check.js';

/** Accounts 1..8, one per session at most. */
export const SESSIONS = 8;

export async function clientSide(): Promise<{ engine: Engine; device: Device; close: () => Promise<void> }> {
  const engine = new Engine({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false });
  await engine.start();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  return {
    engine,
    device,
    close: async () => {
      device.close();
      await engine.stop();
    },
  };
}

/** /metrics parsed: (family, sample name, labels) → value. */
export async function scrape(url: string): Promise<(family: string, sample: string, labels?: Record<string, string>) => number | undefined> {
  const families = parsePrometheusText(await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKENS.viewer}` } })).text());
  return (family, sample, labels = {}) =>
    families.get(family)?.samples.find((x) => x.name === sample && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value;
}

/** Waits until every client has processed everything its session was sent. */
export async function quiesce(url: string, clients: OrderClient[], timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const list = (await call(url, 'GET', '/v1/sessions', TOKENS.ops)).json.sessions as Array<{ id: number; lastAppSeq: string }>;
    const behind = clients.filter((c) => BigInt(list.find((s) => s.id === c.id)?.lastAppSeq ?? '0') !== c.lastAppSeq);
    if (behind.length === 0) return;
    if (Date.now() > end) assert.fail(`sessions ${behind.map((c) => c.id).join(', ')} never caught up`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Cancels every order the model says rests: each CancelAck must remove exactly the model's leaves. */
export async function cancelResting(clients: OrderClient[], check: CheckResult, firstId: bigint): Promise<number> {
  let cancelled = 0;
  await Promise.all(
    clients.map(async (c, s) => {
      let id = firstId;
      const answers = await Promise.all(
        [...(check.resting.get(s) ?? new Map())].map(async ([orig, o]) => ({ o, a: await c.cancel({ clientOrderId: id++, origClientOrderId: orig, instrumentId: o.instrumentId }) })),
      );
      for (const { o, a } of answers) {
        assert.equal(a.kind, 'cancelAck', a.kind === 'reject' ? a.text : '');
        if (a.kind === 'cancelAck') assert.equal(a.cancelledQuantity, o.leaves, `session ${s}: order ${a.origClientOrderId}`);
        cancelled++;
      }
    }),
  );
  return cancelled;
}

export async function checkRisk(url: string, device: Device, engine: Engine, check: CheckResult, timeoutMs?: number): Promise<void> {
  const accounts = Array.from({ length: SESSIONS }, (_, s) => BigInt(s + 1));
  const risk = await RiskClient.connect({ url, token: TOKENS.ops, name: 'risk-check', accounts, engine, device, timeoutMs });
  try {
    for (const account of accounts) {
      const w = await risk.readAll(account);
      const p = check.positions.get(account) ?? { position: 0n, traded: 0n };
      assert.equal(w.position, p.position, `account ${account}: position (RDMA READ of the local page)`);
      assert.equal(w.tradedNotional, p.traded, `account ${account}: traded notional`);
      assert.equal(w.openOrders, 0n, `account ${account}: open orders after the cancels`);
      assert.equal(w.openNotional, 0n, `account ${account}: open notional after the cancels`);
    }
  } finally {
    await risk.close();
  }
}


/**
 * Resolves with `work`, or rejects naming where every session stands when no
 * answer arrived for `stallMs` (a stalled stream fails the test instead of hanging it).
 */
export async function withProgress<T>(url: string, clients: OrderClient[], work: Promise<T>, stallMs = 15_000): Promise<T> {
  let done = false;
  // Why a client lost its session, if one did (a WC status names the side that gave up).
  const lost = new Map<number, string>();
  clients.forEach((c) => c.on('disconnect', (reason: string) => lost.set(c.id, reason)));
  const watchdog = (async () => {
    let last = -1n;
    let since = Date.now();
    while (!done) {
      await new Promise((r) => setTimeout(r, 500));
      const progress = clients.reduce((n, c) => n + c.lastAppSeq, 0n);
      if (progress !== last) {
        last = progress;
        since = Date.now();
      } else if (Date.now() - since > stallMs && !done) {
        const sessions = (await call(url, 'GET', '/v1/sessions', TOKENS.ops)).json.sessions;
        const view = sessions.map((x: Record<string, unknown>) => [x['id'], x['state'], x['lastAppSeq'], x['received'], x['sent'], x['rnrHeld'], x['disconnected']]);
        const mine = clients.map((c) => [c.id, String(c.lastAppSeq), c.connected, c.stats()]);
        throw new Error(
          `no progress for ${stallMs} ms: gateway sessions [id, state, lastAppSeq, received, sent, rnrHeld, disconnected] ${JSON.stringify(view)}; ` +
            `clients ${JSON.stringify(mine)}; disconnects ${JSON.stringify([...lost])}`,
        );
      }
    }
  })();
  try {
    return await Promise.race([work, watchdog.then(() => undefined as never)]);
  } finally {
    done = true;
  }
}
