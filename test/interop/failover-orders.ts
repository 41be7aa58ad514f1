// The client side of failover-ibv-guest.sh, inside the rdma-vm guest: an
// OrderClient and a RiskClient on rxe_b with rxe_d as their alternate device,
// against a gateway on rxe_a with rxe_c as its alternate. Orders go in
// crossing pairs (a sell of account 1, then a buy of account 2 at its
// price), a few in flight; after CUT_AFTER answers the primary link stops
// carrying anything (cutLink: tc drops every packet arriving at either end
// of the veth, so rxe's ports stay ACTIVE and only the retries can tell).
// The clients fail over to the second link; so does a feed subscriber with
// recovery (failover-feed.ts), which line B keeps fed meanwhile. What they
// saw is printed as one JSON line for failover-ibv.test.ts.
//
//   node failover-orders.js URL TOKEN DEV ALT_DEV ALT_NETDEV NETDEV_1 NETDEV_2
//
// ALT_NETDEV: the client's end of the second link (veth-d), where line B
// then loses frames; NETDEV_1 and NETDEV_2: both ends of the first link.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { OrderClient } from '../../src/orders/client.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { Side, type SequencedMessage } from '../../src/orders/messages.js';
import { waitFor, watchFeed, type FeedFailoverRun } from './failover-feed.js';

/** Orders sent (pairs of a sell and the buy that fills it). */
export const ORDERS = 200;
/** Answers received before the primary link is cut. */
export const CUT_AFTER = 60;
const IN_FLIGHT = 4;
const INSTRUMENT = 1001;

export interface FailoverRun {
  /** Per client order id, the answers its promise settled with (one each). */
  answers: Array<{ id: string; kind: string }>;
  /** app_seqs of every sequenced message, in the order the client processed them. */
  appSeqs: string[];
  fills: number;
  cancels: number;
  /** The client order id of each fill, and of each cancelAck with its reason, in app_seq order. */
  fillIds: string[];
  cancelled: Array<{ id: string; reason: string }>;
  gaps: number;
  disconnects: string[];
  failovers: Array<{ device: string; reason: string; ms: number }>;
  stats: Record<string, number>;
  activeDevice: string;
  risk: { activeDevice: string; failovers: number; creditLimit: string; failoverEvents: Array<{ device: string; ms: number }> };
  feed: FeedFailoverRun;
  sessions: unknown;
  /** GET /v1/qps at the end. */
  qps: unknown;
}

function cutLink(netdevs: string[]): void {
  for (const dev of netdevs) {
    execFileSync('tc', ['qdisc', 'add', 'dev', dev, 'clsact']);
    // u32 and gact, as guest-gateway.sh's lose_feed_frames: modules the guest has. Every IP packet (RoCEv2 is UDP).
    execFileSync('tc', ['filter', 'add', 'dev', dev, 'ingress', 'protocol', 'ip', 'u32', 'match', 'u32', '0', '0', 'action', 'drop']);
  }
}

/** What the client is doing, on stderr: the test shows it when the run fails. */
const note = (what: string): void => void process.stderr.write(`${new Date().toISOString()} ${what}\n`);

async function run(url: string, token: string, dev: string, alt: string, altNetdev: string, netdevs: string[]): Promise<FailoverRun> {
  const feed = await watchFeed(url, token, dev, alt, altNetdev);
  note('feed subscriber connected');
  const common = { url, token, device: { kind: 'ibv' as const, name: dev }, alternateDevice: { kind: 'ibv' as const, name: alt }, timeoutMs: 60_000, keepaliveMs: 300 };
  const risk = await RiskClient.connect({ ...common, name: 'failover-risk', accounts: [1n] });
  const riskFailovers: FailoverRun['risk']['failoverEvents'] = [];
  risk.on('failover', (f: { device: string; ms: number }) => riskFailovers.push({ device: f.device, ms: f.ms }));
  risk.on('disconnect', (reason: string) => note(`risk: disconnect (${reason})`));
  note('risk client connected');
  const client = await OrderClient.connect({ ...common, name: 'failover-orders', accounts: [1n, 2n], helloTimeoutMs: 60_000 });
  const out: Omit<FailoverRun, 'stats' | 'activeDevice' | 'risk' | 'feed' | 'sessions' | 'qps'> = { answers: [], appSeqs: [], fills: 0, cancels: 0, fillIds: [], cancelled: [], gaps: 0, disconnects: [], failovers: [] };
  client.on('message', (m: SequencedMessage) => {
    out.appSeqs.push(String(m.appSeq));
    if (m.kind === 'fill') {
      out.fills++;
      out.fillIds.push(String(m.clientOrderId));
    }
    if (m.kind === 'cancelAck') {
      out.cancels++;
      out.cancelled.push({ id: String(m.origClientOrderId), reason: m.reasonName });
    }
  });
  client.on('gap', () => out.gaps++);
  client.on('disconnect', (reason: string) => {
    note(`orders: disconnect (${reason})`);
    out.disconnects.push(reason);
  });
  client.on('failover', (f: FailoverRun['failovers'][number]) => {
    note(`orders: failover to the ${f.device} device in ${f.ms.toFixed(0)} ms`);
    out.failovers.push(f);
  });
  note('order client connected');
  // While it runs: what a run that never ends got to.
  const progress = setInterval(() => note(`orders: ${out.answers.length} answered, connected ${client.connected} on ${client.activeDevice}, ${JSON.stringify(client.stats())}; risk connected ${risk.connected} on ${risk.activeDevice}`), 10_000);
  progress.unref();

  let cut = false;
  let feedAtCut = 0;
  const send = async (i: number): Promise<void> => {
    const id = BigInt(i + 1);
    const sell = i % 2 === 0;
    const answer = await client.newOrder({
      clientOrderId: id,
      instrumentId: INSTRUMENT,
      side: sell ? Side.SIDE_SELL : Side.SIDE_BUY,
      price: 10_000,
      quantity: 1,
      account: sell ? 1n : 2n,
    });
    out.answers.push({ id: String(id), kind: answer.kind });
    if (!cut && out.answers.length >= CUT_AFTER) {
      cut = true;
      cutLink(netdevs);
      feedAtCut = feed.delivered();
      note(`the first link cut after ${out.answers.length} answers`);
    }
  };
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < ORDERS) await send(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  clearInterval(progress);
  note(`all ${out.answers.length} orders answered`);
  // The risk session, idle all along: its keepalive finds the link gone and it moves too.
  await waitFor('the risk client on its alternate device', () => risk.activeDevice === 'alternate' && risk.connected, 120_000);
  const creditLimit = await risk.read(1n, 'creditLimit');
  // The subscriber: its recovery session moved too, and recovers line B's losses over the second link.
  const feedRun = await feed.finish(feedAtCut);
  note(`feed: ${feedRun.delivered} delivered, recovery on the ${feedRun.stats.recovery?.device} device`);
  const sessions = await (await fetch(`${url}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } })).json();
  const qps = await (await fetch(`${url}/v1/qps`, { headers: { authorization: `Bearer ${token}` } })).json();
  const result: FailoverRun = {
    ...out,
    stats: { ...client.stats() },
    activeDevice: client.activeDevice,
    risk: { activeDevice: risk.activeDevice, failovers: risk.stats().failovers, creditLimit: String(creditLimit), failoverEvents: riskFailovers },
    feed: feedRun,
    sessions,
    qps,
  };
  await client.close();
  await risk.close();
  await feed.sub.close();
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, token, dev, alt, altNetdev, ...netdevs] = process.argv.slice(2);
  if (url === undefined) {
    // `node --test dist/test/` runs every file: this one only runs in the guest, with arguments.
    console.log('# failover-orders: failover-ibv-guest.sh runs it with URL TOKEN DEV ALT_DEV ALT_NETDEV NETDEVS; nothing to do here');
  } else {
    const r = await run(url, token!, dev!, alt!, altNetdev!, netdevs);
    console.log(JSON.stringify(r));
    process.exit(0);
  }
}
