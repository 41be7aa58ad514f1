// examples/subscriber.ts: subscribe to a running gateway's feed and print its ticks.
//
// What it shows: discoverChannels() asks the gateway's control plane
// (GET /v1/feeds/<feed>) for the feed's channels and their multicast groups
// (A and B lines); subscribe() joins them on a soft RoCEv2 device of our own
// and delivers the messages in order, A/B arbitrated, gaps detected;
// sub.stats() has the counters and the latency percentiles (publisher's send
// time → our engine's receive time).
//
// How to run it (in this checkout, with the gateway running: `npm start`):
//   npm run build:ts
//   node dist/examples/subscriber.js --url http://127.0.0.1:7470 --token="$(cat var/admin.token)" --count 50
// Options: --url, --token (default $QPGATE_TOKEN, else var/admin.token),
// --feed (default 'default'), --address (our device's IPv4, a local address
// that is not the gateway's; default 127.0.0.3), --count n, --seconds s
// (stops at whichever comes first; default 5 s), --stats (only the stats
// lines, no ticks).
//
// What it prints: the channels, the publisher's session when first seen,
//   feed default: channel 1 (239.77.0.1/239.77.0.2)
//   session ch 1: 0 -> 1405148713 from seq 29344
// one line per tick (unless --stats),
//   tick ch 1 seq 4711 QUOTE instrument 7 {"instrumentId":7,"bidPrice":"10012",...}
// every second a line of the subscriber's stats,
//   stats 1 s: received 10234 gaps 0 duplicates 3301 lost 0 latency p50 61.4 µs p99 880.6 µs p99.9 2150.4 µs
// and at the end
//   done: 50 ticks, gaps 0
// Exit status 0, or 1 with one line on stderr if the gateway cannot be
// reached or refuses the token.
import { parseArgs } from 'node:util';
import { discoverChannels, MessageType, subscribe, type FeedSubscriber } from 'qpgate';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:7470' },
    token: { type: 'string' },
    feed: { type: 'string', default: 'default' },
    address: { type: 'string', default: '127.0.0.3' },
    count: { type: 'string' },
    seconds: { type: 'string', default: '5' },
    stats: { type: 'boolean', default: false },
  },
});
const count = args.count === undefined ? Infinity : Number(args.count);
const seconds = Number(args.seconds);

// MessageType is the protobuf enum: 3 → 'QUOTE' and so on.
const typeName = (type: number): string => (MessageType as unknown as Record<number, string>)[type]?.replace(/^MESSAGE_TYPE_/, '') ?? `type ${type}`;
const bigintsAsText = (_key: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

function statsLine(sub: FeedSubscriber, elapsedS: number): string {
  const s = sub.stats();
  const sum = (key: 'received' | 'gaps' | 'duplicates' | 'unrecoverable') => s.channels.reduce((n, c) => n + c[key], 0);
  const lat = s.channels[0]?.latency;
  const us = (ns: number | undefined) => (ns === undefined || lat?.count === 0 ? '-' : (ns / 1000).toFixed(1));
  return (
    `stats ${elapsedS} s: received ${sum('received')} gaps ${sum('gaps')} duplicates ${sum('duplicates')} lost ${sum('unrecoverable')} ` +
    `latency p50 ${us(lat?.p50Ns)} µs p99 ${us(lat?.p99Ns)} µs p99.9 ${us(lat?.p999Ns)} µs`
  );
}

// Without --token, discoverChannels itself falls back to $QPGATE_TOKEN, then var/admin.token.
const channels = await discoverChannels({ url: args.url, ...(args.token ? { token: args.token } : {}) }, args.feed).catch((err: unknown) => {
  console.error(`subscriber: ${(err as Error).message}`); // no gateway there, a refused token, no such feed
  process.exit(1);
});
console.log(`feed ${args.feed}: ${channels.map((c) => `channel ${c.id} (${c.groupA}${c.groupB ? `/${c.groupB}` : ''})`).join(', ')}`);

let ticks = 0;
let finish!: () => void;
const done = new Promise<void>((resolve) => (finish = resolve));
const sub = await subscribe({
  engineOptions: {}, // the subscriber starts (and stops) an engine of its own
  device: { address: args.address },
  channels,
  onMessage(m) {
    if (ticks >= count) return;
    ticks++;
    if (args.stats) return;
    const body = m.decode();
    console.log(`tick ch ${m.channel} seq ${m.seq} ${typeName(m.type)} instrument ${m.instrumentId} ${JSON.stringify(body?.value ?? null, bigintsAsText)}`);
    if (ticks >= count) finish();
  },
  onSession(c) {
    // The first frame of a channel names its publisher's session; a new one means the publisher restarted
    // (or another gateway publishes to the same groups: give each gateway groups of its own).
    console.log(`session ch ${c.channel}: ${c.oldSession} -> ${c.newSession} from seq ${c.nextSeq}`);
  },
  onGap(g) {
    console.log(`gap ch ${g.channel}: ${g.count} messages from seq ${g.fromSeq} lost`);
  },
});

const started = Date.now();
const ticker = setInterval(() => console.log(statsLine(sub, Math.round((Date.now() - started) / 1000))), 1000);
const timer = setTimeout(finish, seconds * 1000);
process.once('SIGINT', finish);
await done;
clearInterval(ticker);
clearTimeout(timer);
console.log(statsLine(sub, Math.round((Date.now() - started) / 1000)));
const gaps = sub.stats().channels.reduce((n, c) => n + c.gaps, 0);
await sub.close();
console.log(`done: ${ticks} ticks, gaps ${gaps}`);
