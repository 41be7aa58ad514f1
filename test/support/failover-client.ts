// The client half of the path migration test and bench, run in the client's
// namespace (two-links.ts) as its own process: an OrderClient on a soft
// device with two addresses trades sell/buy pairs that cross (each pair two
// fills), one order at a time. Lines on stdout are JSON:
//   {"phase":"primary",...}  after `before` orders: the parent may take the primary link down,
//                            then writes a line to stdin;
//   {"phase":"done",...}     after `after` more: every sequenced message's app_seq, the
//                            fills, the client's stats and how long the first order after
//                            the line took (the failover time); it waits for a stdin line
//                            (the parent reads /v1/sessions meanwhile): `close` closes, `again`
//                            waits for the client's keepalive to re-arm the session, then
//   {"phase":"rearmed",...}  the parent may take the alternate link down, then writes a line;
//   {"phase":"again",...}    after `after` more orders, as "done"; then a last line closes.
// With `window`, the line after "primary" starts a stream of `after` orders instead, `window`
//   of them in flight at once:
//   {"phase":"streaming"}    after `streamingAfter` answers: the parent takes a link down now,
//                            with orders and answers in flight both ways;
//   {"phase":"done",...}     as above, with the longest wait between two answers (the stall).
// Or, after "done", `lost`: the parent has taken the alternate link down too; one more order,
//   {"phase":"lost",...}     the 'disconnect' reason, what became of that order, the time
//                            from the order to the 'disconnect'; then a last line closes.
import { OrderClient } from '../../src/orders/client.js';
import { childArgs, parentLines, say, streamInFlight, type TwoLinkClientArgs } from './child-lines.js';
import { Side, type SequencedMessage } from '../../src/orders/messages.js';

interface Args extends TwoLinkClientArgs {
  before: number;
  after: number;
  window?: number;
  streamingAfter?: number;
}

const args = childArgs<Args>('failover-client', 'path-migration.test.ts and bench/orders/failover.ts');
const lines = parentLines();

const client = await OrderClient.connect({
  url: args.url,
  token: args.token,
  name: args.name,
  accounts: [1n, 2n],
  device: { address: args.address, alternateAddress: args.alternateAddress },
  takeover: true,
  ...(args.window !== undefined ? { window: args.window } : {}),
});
const appSeqs: number[] = [];
let fills = 0;
client.on('message', (m: SequencedMessage) => {
  appSeqs.push(Number(m.appSeq));
  if (m.kind === 'fill') fills++;
});

let next = 1;
/** Order `next`: odd ones sell 1 @ 10000 for account 1, even ones buy it for account 2 (a cross: two fills). */
async function order(): Promise<string> {
  const i = next++;
  const sell = i % 2 === 1;
  const a = await client.newOrder({ clientOrderId: i, instrumentId: 1, side: sell ? Side.SIDE_SELL : Side.SIDE_BUY, price: 10000, quantity: 1, account: sell ? 1 : 2 });
  return a.kind;
}

const kinds: Record<string, number> = {};
const count = (k: string): void => void (kinds[k] = (kinds[k] ?? 0) + 1);
for (let i = 0; i < args.before; i++) count(await order());
say({ phase: 'primary', session: client.id, lastAppSeq: Number(client.lastAppSeq) });
/** `after` orders, the first one timed (the failover time), and their fills: what "done" and "again" report. */
async function trade(): Promise<number> {
  const t0 = performance.now();
  count(await order());
  const firstMs = performance.now() - t0;
  for (let i = 1; i < args.after; i++) count(await order());
  await allFilled();
  return firstMs;
}

/** `after` orders with `window` of them in flight; says "streaming" after `streamingAfter` answers. Returns the longest wait between two answers. */
async function stream(window: number): Promise<number> {
  const longest = await streamInFlight(args.after, window, async () => count(await order()), (answered) => {
    if (answered === args.streamingAfter) say({ phase: 'streaming', stats: client.stats() });
  });
  await allFilled();
  return longest;
}

/** The last pair's fills follow its ack: wait until every order's fill is in. */
async function allFilled(): Promise<void> {
  const deadline = Date.now() + 5000;
  while (fills < next - 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

await lines.next();
if (args.window !== undefined) {
  const longestWaitMs = await stream(args.window);
  say({ phase: 'done', appSeqs, fills, answers: kinds, stats: client.stats(), longestWaitMs });
} else {
  const firstAnswerMs = await trade();
  say({ phase: 'done', appSeqs, fills, answers: kinds, stats: client.stats(), firstAnswerMs });
}
const command = (await lines.next()).value;
if (command === 'again') {
  // The keepalive (every keepaliveMs, with nothing in flight) re-arms the path left.
  const deadline = Date.now() + 10_000;
  while (client.stats().rearms === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  say({ phase: 'rearmed', stats: client.stats() });
  await lines.next();
  const againMs = await trade();
  say({ phase: 'again', appSeqs, fills, answers: kinds, stats: client.stats(), firstAnswerMs: againMs });
  await lines.next();
} else if (command === 'lost') {
  // The parent took the link in use down too: the next order exhausts the retries of the only path left.
  const t0 = performance.now();
  const disconnected = new Promise<string>((resolve) => client.once('disconnect', resolve));
  const settled = order().then((k) => `answered: ${k}`, (err: Error) => `rejected: ${err.message}`);
  const reason = await disconnected;
  const orderState = await Promise.race([settled, new Promise<string>((r) => setTimeout(() => r('pending'), 200))]);
  say({ phase: 'lost', reason, order: orderState, ms: performance.now() - t0, stats: client.stats() });
  await lines.next();
}
await client.close();
process.exit(0);
