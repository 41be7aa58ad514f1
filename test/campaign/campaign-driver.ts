// The fault campaign's driver, run by campaign-guest.sh inside the rdma-vm
// guest in namespace qg-cl (the clients). It starts `qpgate serve` in
// namespace qg-gw (soft backend on gw0, 10.78.0.1), three feed subscribers
// with recovery and eight order sessions here (cl0), cycles the netem phases
// (netem.ts) on both ends of the veth pair, SIGKILLs and restarts the gateway
// on the same state dir every QPGATE_CAMPAIGN_KILL_MS, then lets the last life run
// QPGATE_CAMPAIGN_SOAK_S seconds without kills while it samples the gateway's RSS
// and CPU. Prints one JSON line `{"campaign": ...}`; campaign.test.ts asserts.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { ordersYaml, TOKENS } from '../orders/support.js';
import { scrape } from '../orders/e2e-support.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { QPGATE_BIN } from '../support/paths.js';
import { FeedSide } from './campaign-feed.js';
import { OrderSide } from './campaign-orders.js';
import { applyPhase, clearLinks, netemCounters, PHASES, type Link } from './netem.js';
import { flatness, ProcessSampler } from './process-sampler.js';

const env = (k: string, d: number): number => Number(process.env[k] ?? d);
const KILLS = env('QPGATE_CAMPAIGN_KILLS', 2);
const KILL_MS = env('QPGATE_CAMPAIGN_KILL_MS', 10_000);
const SOAK_S = env('QPGATE_CAMPAIGN_SOAK_S', 60);
const PHASE_MS = env('QPGATE_CAMPAIGN_PHASE_MS', 5000);
const RATE = env('QPGATE_CAMPAIGN_TICK_RATE', 500);
const ORDERS = env('QPGATE_CAMPAIGN_ORDERS', 800);
const WARMUP_S = env('QPGATE_CAMPAIGN_WARMUP_S', 20);

const GW_NS = 'qg-gw';
const GW_IP = '10.78.0.1';
const PORT = 7480;
const URL = `http://${GW_IP}:${PORT}`;
const GROUP = '239.78.1.1';
const FEED_TOKEN = 'campaign-feed-token-0123456789abcdef';
const LINKS: Link[] = [{ netns: GW_NS, dev: 'gw0' }, { dev: 'cl0' }];

const log = (msg: string): void => void process.stderr.write(`campaign [${process.uptime().toFixed(1)} s]: ${msg}\n`);

// A 4 MiB retransmission ring (default 64 MiB): its pages become resident as
// it first fills, which at this feed rate takes minutes; this one wraps
// within the warm-up, so the soak does not measure the ring filling.
// cancelOnDisconnect off: under netem and TCG a session's QP can exhaust its
// retries (the client reconnects, campaign-orders.ts), and the reference model
// (test/orders/reference-book.ts) knows no disconnects; the campaign is about
// what is lost, not about that policy (test/orders covers it).
function writeConfig(): { file: string; stateDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-campaign-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `control:
  tokens:
    - {name: ops, scope: admin, token: ${TOKENS.ops}}
    - {name: viewer, scope: read, token: ${TOKENS.viewer}}
    - {name: desk, scope: read, token: ${TOKENS.desk}, roles: [trading], accounts: ["1", "2", "3", "4", "5", "6", "7", "8"]}
    - {name: feedapp, scope: read, token: ${FEED_TOKEN}, roles: [recovery], channels: [1]}
feeds:
  enabled: true
  channels:
    - {id: 1, groupA: "${GROUP}", heartbeatMs: 20, ring: {frames: 4096, bytes: 4194304}}
  instruments: {count: 40}
  synthetic: {enabled: true, ratePerSec: ${RATE}}
${ordersYaml({ selfMatch: 'cancel-oldest' })}    cancelOnDisconnect: false
`,
  );
  return { file, stateDir: join(dir, 'state') };
}

async function startGateway(file: string, stateDir: string): Promise<GatewayProcess> {
  const t0 = Date.now();
  const gw = await startGatewayProcess(
    ['--config', file, '--host', GW_IP, '--port', String(PORT), '--set', `state.dir=${stateDir}`, '--set', `backend.address=${GW_IP}`],
    {},
    { command: 'ip', argv: ['netns', 'exec', GW_NS, process.execPath, QPGATE_BIN], readyTimeoutMs: 180_000 },
  );
  log(`gateway pid ${gw.child.pid} ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return gw;
}

/** What the soak's RSS is made of, scraped beside it: the retransmission ring fills (and its pages become resident) until it wraps. */
const gauges: Array<{ t: number; ringFrames?: number; heapUsed?: number }> = [];

/** The gateway's next feed sequence, scraped: what it had published by then. */
async function publishedEnd(): Promise<bigint> {
  try {
    const m = await scrape(URL);
    const v = m('qpgate_feed_next_sequence', 'qpgate_feed_next_sequence', { channel: '1' });
    gauges.push({ t: process.uptime(), ringFrames: m('qpgate_feed_retransmit_ring_frames', 'qpgate_feed_retransmit_ring_frames', { channel: '1' }), heapUsed: m('nodejs_heap_size_used_bytes', 'nodejs_heap_size_used_bytes') });
    return v === undefined ? 0n : BigInt(Math.floor(v));
  } catch {
    return 0n;
  }
}

/** Cycles the netem phases until stopped; sums each phase's qdisc counters before the next replaces it. */
function startPhases(): { stop: () => void; counts: Record<string, { sent: number; dropped: number }> } {
  const counts: Record<string, { sent: number; dropped: number }> = {};
  let i = 0;
  const next = (): void => {
    const phase = PHASES[i++ % PHASES.length]!;
    applyPhase(LINKS, phase);
    log(`netem: ${phase.name}`);
  };
  const settle = (): void => {
    const phase = PHASES[(i - 1) % PHASES.length]!;
    const c = (counts[phase.name] ??= { sent: 0, dropped: 0 });
    for (const l of LINKS) {
      const n = netemCounters(l);
      c.sent += n.sent;
      c.dropped += n.dropped;
    }
    clearLinks(LINKS);
  };
  next();
  const timer = setInterval(() => {
    settle();
    next();
  }, PHASE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      settle();
    },
    counts,
  };
}

async function main(): Promise<void> {
  const { file, stateDir } = writeConfig();
  const feed = new FeedSide({ addresses: ['10.78.0.11', '10.78.0.12', '10.78.0.13'], group: GROUP, token: FEED_TOKEN });
  const orders = new OrderSide('10.78.0.20', Math.ceil(ORDERS / 8));
  await feed.start();
  let gw = await startGateway(file, stateDir);
  const starts: number[] = [];
  await feed.join(URL, 0);
  await orders.start(URL);
  const phases = startPhases();
  const status = setInterval(
    () => log(`status: answered ${orders.answered}/${orders.total}, connected ${orders.clients.filter((c) => c.connected).length}, live ${feed.liveNow().join('/')}`),
    15_000,
  );
  const t0 = Date.now();
  let ends = 0n;
  let life = 0;
  for (; life < KILLS; life++) {
    const until = Date.now() + KILL_MS;
    while (Date.now() < until) {
      const p = await publishedEnd();
      if (p > ends) ends = p;
      await sleep(500);
    }
    log(`kill ${life + 1}: answered ${orders.answered}/${orders.total}, live ${feed.liveNow().join('/')}`);
    gw.child.kill('SIGKILL');
    await gw.exited;
    orders.lost();
    await feed.leave(ends);
    ends = 0n;
    const r0 = Date.now();
    gw = await startGateway(file, stateDir);
    starts.push((Date.now() - r0) / 1000);
    await feed.join(URL, life + 1);
    log('subscribers joined');
    await orders.reconnect();
    log('order sessions reconnected');
  }
  const killPhaseS = (Date.now() - t0) / 1000;
  const sampler = new ProcessSampler(gw.child.pid!);
  const soakFrom = process.uptime();
  const soakEnd = Date.now() + SOAK_S * 1000;
  while (Date.now() < soakEnd) {
    const p = await publishedEnd();
    if (p > ends) ends = p;
    await sleep(500);
  }
  sampler.stop();
  phases.stop();
  clearInterval(status);
  log(`soak over: answered ${orders.answered}/${orders.total}`);
  const report = await orders.finish(URL);
  log('orders checked');
  ends = (await publishedEnd()) > ends ? await publishedEnd() : ends;
  await feed.leave(ends);
  gw.child.kill('SIGTERM');
  const exit = await gw.exited;
  await orders.stop();
  await feed.stop();
  const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x)));
  console.log(
    JSON.stringify({
      campaign: json({
        config: { kills: KILLS, killMs: KILL_MS, soakS: SOAK_S, phaseMs: PHASE_MS, tickRate: RATE, orders: orders.total, warmupS: WARMUP_S },
        killPhaseS,
        restartS: starts,
        lastExit: exit,
        netem: phases.counts,
        feed: feed.records,
        orders: report,
        soak: { gauges: gauges.filter((g) => g.t >= soakFrom), samples: sampler.samples, rss: flatness(sampler.samples, WARMUP_S, (s) => s.rssKiB), cpu: flatness(sampler.samples, WARMUP_S, (s) => s.cpu) },
      }),
    }),
  );
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    log(`failed: ${e instanceof Error ? e.stack : String(e)}`);
    process.exit(1);
  },
);
