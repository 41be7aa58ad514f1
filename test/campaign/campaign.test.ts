// The fault campaign of issue 13, with real network faults: inside the
// rdma-vm guest (the host kernel has no netem), the gateway (`qpgate serve`,
// soft backend) in network namespace qg-gw and its clients in qg-cl, joined
// by a veth pair with `tc netem` on both ends, cycling loss 1 %, loss 10 %,
// duplication, reordering, delay with jitter and a rate limit (netem.ts says
// why phases). Three subscribers with recovery take the multicast feed and
// eight order sessions stream orders while the gateway is SIGKILLed and
// restarted on its state dir; then the last life soaks without kills.
//
// What a user relies on, asserted:
//   - 0 acknowledged orders lost and 0 fills lost: every session's app_seqs
//     run 1, 2, 3... across all lives, every order has exactly one answer,
//     fills and cancels match the reference model, every Ack seen before a
//     kill is answered identically at the end, risk words match;
//   - no silent feed loss: in every (subscriber, life), each sequence between
//     its first and its last delivery arrived (live or recovered) or lies in
//     a range a 'gap' event reported, and the messages each native subscriber
//     counts unrecoverable are exactly those reported over all lives;
//   - the subscribers stay subscribed across the restarts and make their
//     recovery sessions again by themselves (src/feed/recovery-link.ts):
//     every life recovers gaps, and every late join (the first, or a
//     restart seen mid-stream) starts from a snapshot;
//   - the gateway's RSS and CPU flat over the soak (SOAK_LIMITS below).
//
// What CI runs (the default) and why: node under TCG is slow. Measured on
// this 2-CPU machine at load average 15-20 (other builds running): the
// driver takes ~50 s to load, a gateway start 78-152 s, reconnecting the
// eight order sessions after a restart ~1-2 min; with 2 kills and a 200 s
// soak the run took 15.7 min (rdma-vm total), with 1 kill and a 240 s soak
// 13.4 min at load 15, with 1 kill and a 120 s soak 10.8 min at load 25
// (so ~9.8 min with the default 60 s soak). The counts (1,000,000 ticks, 100,000 orders)
// do not fit in ~9 minutes, so CI runs 1 SIGKILL/restart cycle (the
// restarted life is what the kill tests; more kills only repeat it at
// 2-4 min each), 800 orders, a 500/s synthetic feed (~100k ticks per
// subscriber over the run) and a 60 s soak. The QPGATE_CAMPAIGN_* variables (passed into
// the guest) scale it: KILLS, KILL_MS, ORDERS, TICK_RATE, SOAK_S, PHASE_MS, WARMUP_S, and
// READY_S (a gateway start's limit, 300 s); TIMEOUT_S is the guest's whole-run limit (1500 s).
// QPGATE_CAMPAIGN_LOG=<file> (host side) appends the guest's output to that file as it comes.
//
// What bounds a scaled-up run under TCG (measured 2026-12-02, load 12-21, with another
// helper's guest beside it): a restart takes 99-300+ s (one went past 300 s, 197 s of it
// between 'order entry serving' and the control plane's 'Server listening': fastify's ready,
// ajv and fast-json-stringify generating code, the worst case for TCG's translator; the same
// window is 1.9 s on the host), the eight sessions reconnect 80-110 s after it, and the
// sessions are answered at ~13-16 orders/s under the netem phases (answers only come while
// they are connected). Each life publishes ~150-280k ticks at 2000/s. So 100,000 orders need
// ~2 h of connected time and 20 kills ~2 h more; the full scale is one command
// (~4-6 h of guest time):
//   QPGATE_CAMPAIGN_TIMEOUT_S=25200 QPGATE_CAMPAIGN_READY_S=600 QPGATE_CAMPAIGN_ORDERS=100000
//   QPGATE_CAMPAIGN_KILLS=20 QPGATE_CAMPAIGN_TICK_RATE=2000 QPGATE_CAMPAIGN_SOAK_S=1800
//   node --test dist/test/campaign/campaign.test.js
// The largest run so far (6,000 orders, 3 kills, 2000 ticks/s, 240 s soak, load 12-20): 32.5 min;
// every order answered, ~0.8M live ticks per subscriber in the last life, restarts 177-235 s, RSS
// +3.1 %, CPU +6.6 % over the soak; it failed on session campaign-1, lost to
// IBV_WC_RETRY_EXC_ERR in the soak and never caught up (its reconnects: 'the gateway's resend
// stopped at app_seq N of N', 8 times; the driver writes every number as N). Read in
// src/orders/client.ts: the catch-up after Welcome had one limit for the whole resend
// (helloTimeoutMs, here HTTP_TIMEOUT_MS, 60 s), which a resend of thousands of answers over the
// rate-limited netem phase can outlast, and no keepalive while it ran, so a link that died in
// it was only seen at that limit too. Now the limit is per message of the resend, the
// keepalive READ runs in it, and a connection lost in it fails the reconnect at once
// (test/orders/client-reconnect.test.ts reproduces all three). With that, on 2026-12-06
// (3,000 orders, 2 kills, 1000 ticks/s, 120 s soak, beside a full `npm test`, load 2.4-5.5):
// 12.9 min, every order answered, no session lost on its own, restarts 108 and 129 s,
// RSS +1.1 %, CPU +7.4 % over the soak. After the order path stopped taking page faults and
// growing resend rings on the engine thread (native/src/orders/ahead_pages.h), alone on the
// machine: the same scale in 6.0 min (restarts 50 and 36 s, 0 ticks lost, RSS +1.3 %, CPU -1.2 %),
// and 10,000 orders, 4 kills, 2000 ticks/s, 300 s soak in 13.3 min: every order answered, no
// session lost, restarts 45-62 s, 1.2 M ticks per subscriber, RSS +1.1 %, CPU -1.3 %. That run's
// soak reported ~18,300 ticks per subscriber lost, each with its range: the subscribers (JS under
// TCG at 2000 ticks/s) fell behind (ringFullDrops ~6,400 each: holes asked for over recovery) and
// recovery gave up 5 times (recoveryFailures), as subscriber_channel.h says it does.
//
// Skipped where qemu is missing, unless QPGATE_REQUIRE_IBV=1 (then it fails).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { guestSkip, runGuest } from '../support/rdma-vm.js';
import type { LifeRecord, SubscriberRecord } from './campaign-feed.js';
import type { OrdersReport } from './campaign-orders.js';
import { MIN_FLATNESS_SAMPLES, type Flatness } from './process-sampler.js';

/** The guest's whole-run limit (test/rdma-vm/run --timeout): the CI default fits 1500 s; a scaled-up run says its own. */
const GUEST_TIMEOUT_S = Number(process.env['QPGATE_CAMPAIGN_TIMEOUT_S'] ?? 1500);

/**
 * Flat: the mean of the soak's last third within these fractions of its
 * first third (samples from QPGATE_CAMPAIGN_WARMUP_S, 20 s, into the soak
 * on). What grew before (+4.8 %, +7.8 % in 60 s; +24 % and +44 % over 240 s
 * and 200 s soaks, in bursts with flat stretches between) was one 128 MiB
 * anonymous mapping: the orders duplicate table (2 x 2^20 slots of 64 B,
 * native/src/orders/dedupe.cc), made resident by transparent huge pages
 * (the guest's kernel has THP "always": khugepaged collapsed every 2 MiB
 * range holding one of the ~800 ids, 16 MiB per 10 s scan) while no order
 * was sent. The table now refuses huge pages (MADV_NOHUGEPAGE): the next
 * soak (120 s, load 25) went from 182.5 to 180.1 MB (−1.3 %). The driver
 * prints the mappings that grew after the warm-up, the ring occupancy and
 * JS heap, so a failure names what grew. The bound is 5 %: a leak of
 * 1.5 KiB per message at 500/s adds ~20 MB (6 %) between the thirds'
 * midpoints (27 s apart); a longer soak (QPGATE_CAMPAIGN_SOAK_S) catches
 * proportionally smaller ones.
 * CPU per second under TCG moves with the host's load (+3.5 % and −5 % in
 * two runs), so its bound is looser: it catches work that grows with time.
 */
const SOAK_LIMITS = { rss: 0.05, cpu: 0.5 };

interface Campaign {
  config: Record<string, number>;
  killPhaseS: number;
  restartS: number[];
  lastExit: number | null;
  netem: Record<string, { sent: number; dropped: number }>;
  feed: Array<Omit<LifeRecord, 'summary'> & { summary: Record<string, unknown> & { first: string; silent: Array<{ from: string; end: string }>; reported: string; tail: string; live: number; snapshots: number; recovered: number; outOfOrder: number; foreign: number } }>;
  subscribers: SubscriberRecord[];
  orders: OrdersReport;
  drops: Array<{ t: number; kind: string; phase: string; clientEngine: unknown; status?: unknown; qps?: unknown }>;
  soak: { seconds: number; rss: Flatness; cpu: Flatness; samples: unknown[]; gauges: unknown[]; grew: unknown[]; sessions: unknown[] };
}

async function runCampaign(): Promise<Campaign> {
  // The guest's output also goes to $QPGATE_CAMPAIGN_LOG as it comes (the driver's progress).
  const run = await runGuest([], 'test/campaign/campaign-guest.sh', GUEST_TIMEOUT_S, process.env.QPGATE_CAMPAIGN_LOG);
  assert.equal(run.status, 0, `the guest run failed (${run.status}):\n${run.stderr}\n${run.stdout}`);
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"campaign"'));
  assert.ok(line, `no campaign report:\n${run.stderr}\n${run.stdout}`);
  const c = (JSON.parse(line) as { campaign: Campaign }).campaign;
  console.log(`# ${run.stderr.split('\n').filter((l) => l.startsWith('rdma-vm:')).join(' ')}`);
  return c;
}

test('fault campaign: netem loss/duplication/reordering/jitter/rate limit and SIGKILLs lose no acked order, no fill and no feed message silently; RSS and CPU flat', { skip: guestSkip, timeout: (GUEST_TIMEOUT_S + 300) * 1000 }, async () => {
  const c = await runCampaign();
  const o = c.orders;
  console.log(`# orders: ${o.answered}/${o.orders} answered, ${o.acked} acked, ${o.rejected} rejected, ${o.trades} trades; resent ${o.resent}, duplicates dropped ${o.duplicates}; sessions lost on their own ${JSON.stringify(o.drops)}`);
  for (const d of c.drops) console.log(`# session lost on its own at ${d.t.toFixed(1)} s in netem phase '${d.phase}': ${d.kind}; client engine ${JSON.stringify(d.clientEngine)}; gateway status ${JSON.stringify(d.status)}; gateway qps ${JSON.stringify(d.qps)}`);
  console.log(`# ${c.restartS.length} kills in ${c.killPhaseS.toFixed(0)} s, restarts took ${c.restartS.map((s) => s.toFixed(1)).join(', ')} s`);
  console.log(`# netem ${JSON.stringify(c.netem)}`);
  console.log(`# soak: ${c.soak.seconds.toFixed(0)} s, rss ${JSON.stringify(c.soak.rss)} cpu ${JSON.stringify(c.soak.cpu)}`);
  console.log(`# soak: mappings that grew after the warm-up ${JSON.stringify(c.soak.grew)}`);
  console.log(`# soak: samples ${JSON.stringify(c.soak.samples)}`);
  console.log(`# soak: ring and heap ${JSON.stringify(c.soak.gauges)}`);
  console.log(`# soak: the gateway's sessions at the soak's start, after its warm-up and at its end ${JSON.stringify(c.soak.sessions)}`);

  // Every phase ran and the loss phases dropped packets: the faults were real.
  assert.ok(c.netem['loss 10%'] && c.netem['loss 10%'].dropped > 0, `netem dropped nothing at 10 %: ${JSON.stringify(c.netem)}`);
  assert.equal(c.restartS.length, c.config['kills']);
  assert.equal(c.lastExit, 0, 'the last gateway stopped cleanly on SIGTERM');

  assert.equal(o.error, null, `orders against the model: ${o.error}`);
  assert.deepEqual(o.lostAcks, [], 'acks seen before a kill, not answered the same way at the end');
  assert.equal(o.answered, o.orders);

  // One ledger per (subscriber, gateway life): each subscriber stayed subscribed and saw every life's session.
  const lives = c.config['kills']! + 1;
  assert.equal(c.feed.length, 3 * lives, `ledgers per subscriber and life: ${JSON.stringify(c.feed.map((r) => [r.subscriber, r.life]))}`);
  const recoveredInLife = new Array<number>(lives).fill(0);
  for (const r of c.feed) {
    const where = `life ${r.life}, subscriber ${r.subscriber}: ${JSON.stringify(r)}`;
    console.log(`# feed life ${r.life} sub ${r.subscriber}: first ${r.summary.first}, live ${r.summary.live}, recovered ${r.summary.recovered}, snapshot messages ${r.summary.snapshots}, reported lost ${r.summary.reported}, tail ${r.summary.tail}`);
    assert.ok(r.summary.live > 0, `no live message reached the subscriber: ${where}`);
    assert.deepEqual(r.summary.silent, [], `messages lost without a gap report: ${where}`);
    assert.equal(r.summary.outOfOrder, 0, where);
    assert.equal(r.summary.foreign, 0, where);
    // Joined late (the first join, or a restart seen mid-stream): state first, from a snapshot.
    assert.ok(r.summary.first === '1' || r.summary.snapshots > 0, `joined the session at ${r.summary.first} without a snapshot: ${where}`);
    recoveredInLife[r.life]! += r.summary.recovered;
  }
  for (const s of c.subscribers) {
    const where = `subscriber ${s.subscriber}: ${JSON.stringify(s)}`;
    console.log(`# feed sub ${s.subscriber}: ${JSON.stringify(s.stats)} recovery ${JSON.stringify(s.recovery)}`);
    const reported = c.feed.filter((r) => r.subscriber === s.subscriber).reduce((n, r) => n + BigInt(r.summary.reported), 0n);
    assert.equal(reported, BigInt(s.stats.unrecoverable), `counted unrecoverable but not reported with a range: ${where}`);
    assert.ok(s.stats.snapshots > 0, `no snapshot succeeded: ${where}`);
    assert.ok((s.recovery?.renewals ?? 0) >= c.config['kills']!, `the recovery session was not made again after each restart: ${where}`);
  }
  // Gaps were recovered in every life, the ones after a restart included (over the renewed recovery sessions).
  assert.ok(recoveredInLife.every((n) => n > 0), `recovered messages per life ${JSON.stringify(recoveredInLife)}`);

  assert.ok(c.soak.rss.samples >= MIN_FLATNESS_SAMPLES, `too few soak samples: ${c.soak.rss.samples} in ${c.soak.seconds.toFixed(0)} s`);
  assert.ok(c.soak.rss.growth < SOAK_LIMITS.rss, `RSS grew ${(c.soak.rss.growth * 100).toFixed(1)} % over the soak: samples ${JSON.stringify(c.soak.samples)}, ring and heap ${JSON.stringify(c.soak.gauges)}`);
  assert.ok(c.soak.cpu.growth < SOAK_LIMITS.cpu, `CPU grew ${(c.soak.cpu.growth * 100).toFixed(1)} % over the soak`);
});
