// The risk session's half of the path migration test (path-migration.test.ts),
// run in the client's namespace (two-links.ts) as its own process: a
// RiskClient on a soft device with two addresses raises account 1's credit
// limit by FETCH_ADDs of 1. Lines on stdout are JSON:
//   {"phase":"primary",...}   after `before` FETCH_ADDs, one at a time: the session and the
//                             limit before the first (`start`); it waits for a stdin line,
//   {"phase":"streaming"}     then `after` more with `window` in flight, this line after
//                             `streamingAfter` answers: the parent takes a link down now;
//   {"phase":"done",...}      every FETCH_ADD's old value, the limit READ at the end, the
//                             client's stats and the longest wait between two answers;
//                             then a last stdin line closes.
// Old values and limits are decimal strings: they are 64-bit.
import { RiskClient } from '../../src/orders/risk-client.js';
import { childArgs, parentLines, say, streamInFlight, type TwoLinkClientArgs } from './child-lines.js';

interface Args extends TwoLinkClientArgs {
  before: number;
  after: number;
  window: number;
  streamingAfter: number;
}

const args = childArgs<Args>('risk-failover-client', 'path-migration.test.ts');
const lines = parentLines();
const ACCOUNT = 1n;

const risk = await RiskClient.connect({
  url: args.url,
  token: args.token,
  name: args.name,
  accounts: [ACCOUNT],
  device: { address: args.address, alternateAddress: args.alternateAddress },
  takeover: true,
});
const olds: bigint[] = [];
const raise = async (): Promise<void> => void olds.push(await risk.fetchAdd(ACCOUNT, 'creditLimit', 1n));

const start = await risk.read(ACCOUNT, 'creditLimit');
for (let i = 0; i < args.before; i++) await raise();
say({ phase: 'primary', session: risk.id, start: String(start) });

await lines.next();
const longest = await streamInFlight(args.after, args.window, raise, (answered) => {
  if (answered === args.streamingAfter) say({ phase: 'streaming' });
});
const limit = await risk.read(ACCOUNT, 'creditLimit');
say({ phase: 'done', olds: olds.map(String), limit: String(limit), stats: risk.stats(), longestWaitMs: longest });
await lines.next();
await risk.close();
process.exit(0);
