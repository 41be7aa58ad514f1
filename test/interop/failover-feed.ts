// The feed's half of failover-orders.ts, inside the rdma-vm guest: a
// subscriber of the gateway's default feed on rxe_b with rxe_d as its
// alternate device, with recovery. Line A comes over the first link, line B
// (sent from the gateway's alternate device, rxe_c) over the second. When
// the first link is cut, line B carries the feed alone and the recovery
// session, its retries run out, fails over to the second link; then line B
// loses every 10th frame at veth-d (loseLineB), so gaps only recovery over
// the second link can fill. What the subscriber saw goes into the run's JSON
// line (FeedFailoverRun).
import { execFileSync } from 'node:child_process';

import { subscribe, type FeedSubscriber } from '../../src/feed/subscriber.js';

/** Line B's group of the gateway's default channel (src/feed/config.ts). */
const LINE_B_GROUP = '239.77.0.2';

export interface FeedFailoverRun {
  /** Messages delivered before the cut, and in all. */
  atCut: number;
  delivered: number;
  /** Per channel: a sequence out of order or repeated (none expected). */
  outOfOrder: number;
  /** Gaps reported to the app (unrecoverable: none expected). */
  gaps: number;
  stats: ReturnType<FeedSubscriber['stats']>;
}

export interface FeedWatch {
  readonly sub: FeedSubscriber;
  /** Messages delivered so far. */
  delivered(): number;
  /** The subscriber's figures, once its recovery session moved and recovered gaps on the second link. */
  finish(atCut: number): Promise<FeedFailoverRun>;
}

export async function watchFeed(url: string, token: string, dev: string, alt: string, lineBNetdev: string): Promise<FeedWatch> {
  const last = new Map<number, bigint>();
  let delivered = 0;
  let outOfOrder = 0;
  let gaps = 0;
  const sub = await subscribe({
    engineOptions: {},
    device: { kind: 'ibv', name: dev },
    alternateDevice: { kind: 'ibv', name: alt },
    channels: [{ id: 1, groupA: '239.77.0.1', groupB: LINE_B_GROUP }],
    onMessage: (m) => {
      if (m.snapshot) return;
      const before = last.get(m.channel);
      if (before !== undefined && m.seq !== before + 1n) outOfOrder++;
      last.set(m.channel, m.seq);
      delivered++;
    },
    onGap: () => gaps++,
    // The control plane's answers take seconds in the TCG guest under load: as long as the order clients wait.
    recovery: { name: 'failover-feed', url, token, timeoutMs: 60_000, reportIntervalMs: 100, requestTimeoutMs: 10_000 },
  });
  return {
    sub,
    delivered: () => delivered,
    finish: async (atCut) => {
      await waitFor('the recovery session on the alternate device', () => sub.stats().recovery?.device === 'alternate' && sub.stats().recovery?.session !== undefined, 120_000);
      loseLineB(lineBNetdev);
      const recoveredBefore = recovered(sub);
      await waitFor('gaps recovered over the second link', () => recovered(sub) > recoveredBefore, 120_000);
      return { atCut, delivered, outOfOrder, gaps, stats: sub.stats() };
    },
  };
}

function recovered(sub: FeedSubscriber): number {
  return sub.stats().channels.reduce((n, c) => n + c.recovered, 0);
}

/** Every 10th frame of line B arriving at `netdev` is lost (ingress, as guest-gateway.sh's lose_feed_frames). */
function loseLineB(netdev: string): void {
  execFileSync('tc', ['qdisc', 'add', 'dev', netdev, 'clsact']);
  execFileSync('tc', ['filter', 'add', 'dev', netdev, 'ingress', 'protocol', 'ip', 'u32', 'match', 'ip', 'dst', `${LINE_B_GROUP}/32`, 'action', 'gact', 'ok', 'random', 'determ', 'drop', '10']);
}

export async function waitFor(what: string, done: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
