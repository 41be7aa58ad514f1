// What the feed's end-to-end tests share: an engine sized for them, and a
// poll until a condition holds.
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';

/** A started engine: 1 MiB toEngine, 4 MiB fromEngine, no huge pages, backoff idle. */
export async function startFeedEngine(): Promise<Engine> {
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  return e;
}

/** Resolves once `cond()` holds; throws 'timed out' after `ms`. */
export async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(2);
  }
}

/** The `feeds:` block of a gateway config publishing a synthetic feed on one channel (line B too with `groupB`). */
export function syntheticFeedYaml(o: { group: string; groupB?: string; heartbeatMs: number; instruments: number; ratePerSec: number }): string {
  const lineB = o.groupB === undefined ? '' : `, groupB: "${o.groupB}"`;
  return `feeds:
  enabled: true
  channels:
    - {id: 1, groupA: "${o.group}"${lineB}, heartbeatMs: ${o.heartbeatMs}}
  instruments: {count: ${o.instruments}}
  synthetic: {enabled: true, ratePerSec: ${o.ratePerSec}}
`;
}
