// The subscriber half of the two-lines-on-two-links test
// (test/feed/two-lines-two-links.test.ts), run in the client's namespace
// (two-links.ts) as its own process: subscribe() on a soft device with two
// addresses, channel 1 of the gateway's synthetic feed on line A and line B,
// no recovery. Lines on stdout are JSON (child-lines.ts):
//   {"phase":"live",...}    once `live` messages arrived and both lines brought frames;
//                           the parent takes the primary link down, then writes a line;
//   {"phase":"outage",...}  once the live stream went `after` messages further with
//                           the primary link down: line A's frames meanwhile, and
//                           whether the stream has a hole or a duplicate;
//                           the parent brings the link up, then writes a line;
//   {"phase":"back",...}    once line A brings frames again and the stream went
//                           `after` further;
// then a last stdin line closes. Each phase carries the channel's stats.
import { setTimeout as sleep } from 'node:timers/promises';
import { subscribe, type FeedMessage, type FeedGap } from '../../src/feed/subscriber.js';
import { childArgs, parentLines, say } from './child-lines.js';

interface Args {
  groupA: string;
  groupB: string;
  address: string;
  alternateAddress: string;
  live: number;
  after: number;
}

const args = childArgs<Args>('feed-two-lines-subscriber', 'two-lines-two-links.test.ts');
const lines = parentLines();

/** The live stream: the last seq, how many, every break in 1, 2, 3..., and the gaps reported. */
const live = { last: 0n, count: 0, breaks: [] as Array<{ after: number; got: number }>, gaps: [] as FeedGap[] };
const onMessage = (m: FeedMessage): void => {
  if (live.count > 0 && m.seq !== live.last + 1n) live.breaks.push({ after: Number(live.last), got: Number(m.seq) });
  live.last = m.seq;
  live.count++;
};

const sub = await subscribe({
  device: { address: args.address, alternateAddress: args.alternateAddress },
  channels: [{ id: 1, groupA: args.groupA, groupB: args.groupB }],
  recvSlots: 1024,
  onMessage,
  onGap: (g) => live.gaps.push(g),
});
const channel = () => ({ ...sub.stats().channels[0]!, latency: undefined });

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`feed-two-lines-subscriber: no ${what} within ${ms} ms: ${JSON.stringify(channel())}`);
    await sleep(20);
  }
}

await until(`${args.live} live messages on both lines`, () => live.count >= args.live && channel().lineAFrames > 0 && channel().lineBFrames > 0);
say({ phase: 'live', live, channel: channel() });
await lines.next();
const down = { last: live.last, channel: channel() };
await until(`${args.after} messages with the primary link down`, () => live.last >= down.last + BigInt(args.after));
say({ phase: 'outage', live, before: down.channel, channel: channel() });
await lines.next();
const up = { last: live.last, channel: channel() };
await until(`line A again and ${args.after} more messages`, () => channel().lineAFrames > up.channel.lineAFrames + 10 && live.last >= up.last + BigInt(args.after));
say({ phase: 'back', live, channel: channel() });
await lines.next();
await sub.close();
process.exit(0);
