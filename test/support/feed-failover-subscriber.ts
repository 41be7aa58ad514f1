// The subscriber half of the feed's path migration test, run in the client's
// namespace (two-links.ts) as its own process: subscribe() on a soft device
// with two addresses (the recovery session gets an alternate path), channel
// 1 of the gateway's synthetic feed. Lines on stdout are JSON:
//   {"phase":"live",...}       once `live` messages arrived: the parent may take the
//                              primary link down, then writes a line to stdin once the
//                              recovery session moved and the link is back;
//   {"phase":"recovered",...}  once the live stream went `after` messages past where
//                              it stopped, nothing is held and the connection re-armed:
//                              whether the live sequence has a hole or a duplicate, the
//                              channel's and the recovery connection's stats and path;
//   {"phase":"back",...}       after the parent took the alternate link down and wrote a
//                              line: the connection moved back to the primary path (its
//                              second migration) and the live stream went on;
// then a last stdin line closes.
import { setTimeout as sleep } from 'node:timers/promises';
import { subscribe, type FeedMessage } from '../../src/feed/subscriber.js';
import { childArgs, parentLines, say, type TwoLinkClientArgs } from './child-lines.js';

interface Args extends TwoLinkClientArgs {
  group: string;
  live: number;
  after: number;
}

const args = childArgs<Args>('feed-failover-subscriber', 'recovery-path-migration.test.ts');
const lines = parentLines();

/** The live stream (snapshot messages aside): the first seq, the last, and every break in 1, 2, 3... */
const live = { first: -1n, last: -1n, count: 0, breaks: [] as Array<{ after: number; got: number }> };
const onMessage = (m: FeedMessage): void => {
  if (m.snapshot) return;
  if (live.count > 0 && m.seq !== live.last + 1n) live.breaks.push({ after: Number(live.last), got: Number(m.seq) });
  if (live.count === 0) live.first = m.seq;
  live.last = m.seq;
  live.count++;
};

const sub = await subscribe({
  device: { address: args.address, alternateAddress: args.alternateAddress },
  channels: [{ id: 1, groupA: args.group }],
  recvSlots: 1024,
  onMessage,
  recovery: { name: args.name, url: args.url, token: args.token },
});

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`feed-failover-subscriber: no ${what} within ${ms} ms: path ${JSON.stringify(sub.recoveryPath())}, ${JSON.stringify(sub.stats(), (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))}`);
    await sleep(20);
  }
}

await until(`${args.live} live messages`, () => live.count >= args.live);
say({ phase: 'live', session: sub.recoverySessionId, received: live.count, path: sub.recoveryPath() });
await lines.next();
const stoppedAt = live.last;
await until(
  `live stream ${args.after} past seq ${stoppedAt}, nothing held, the connection re-armed`,
  () => {
    if (live.last < stoppedAt + BigInt(args.after)) return false;
    const s = sub.stats();
    return s.channels[0]!.held === 0 && (s.recovery?.connection?.pathRearms ?? 0) >= 1;
  },
);
const s = sub.stats();
say({ phase: 'recovered', session: sub.recoverySessionId, stoppedAt, live, channel: { ...s.channels[0]!, latency: undefined }, recovery: s.recovery, path: sub.recoveryPath() });
await lines.next();
const backFrom = live.last;
await until(
  'the connection back on the primary path after a second migration',
  () => {
    if (live.last < backFrom + BigInt(args.after)) return false;
    const path = sub.recoveryPath();
    return path?.activePath === 'primary' && path.pathMigrations === 2;
  },
);
const b = sub.stats();
say({ phase: 'back', session: sub.recoverySessionId, live, channel: { ...b.channels[0]!, latency: undefined }, recovery: b.recovery, path: sub.recoveryPath() });
await lines.next();
await sub.close();
process.exit(0);
