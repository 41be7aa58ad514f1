// What the liveness tests of OrderClient and RiskClient wait for: the
// 'disconnect' a keepalive raises, and keepalives being answered.
import assert from 'node:assert/strict';
import { once, type EventEmitter } from 'node:events';

/** A client with a keepalive: OrderClient, RiskClient. */
export interface ProbingClient extends EventEmitter {
  readonly connected: boolean;
  stats(): { keepalives: number };
}

/** The 'disconnect' reason and how long it took, or a failure naming what the client saw by then. */
export async function disconnected(client: ProbingClient, withinMs: number): Promise<{ reason: string; ms: number }> {
  const t0 = performance.now();
  const reason = await Promise.race([
    once(client, 'disconnect').then(([r]) => r as string),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no 'disconnect' within ${withinMs} ms; stats ${JSON.stringify(client.stats())}, connected ${client.connected}`)), withinMs).unref()),
  ]);
  return { reason, ms: performance.now() - t0 };
}

/** Waits (up to 10 s) until `n` keepalives were answered. */
export async function keepalivesAnswered(client: ProbingClient, n: number): Promise<void> {
  const end = Date.now() + 10_000;
  while (client.stats().keepalives < n && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  assert.ok(client.stats().keepalives >= n, `keepalives answered: ${JSON.stringify(client.stats())}`);
}
