// Closed sessions cost no memory (issue 13 item 4): a session's resend store
// is freed when it closes, and what a closed session missed is rebuilt from
// the journal at its next Hello — after a gateway restart too.
//
// The bound. Each churned session sends ORDERS resting orders and is closed
// (cancel-on-disconnect): 2 x ORDERS sequenced answers, a resend store of 512
// slots x 336 B = 168 KiB that, kept as before, would make CHURN sessions hold
// 33.6 MiB (measured before the change with 100 orders a session: +17.2 MiB
// over 200 sessions, the 84 KiB stores). What a closed session still costs is
// its handler state, its name and its ids in the duplicate table; that table
// is made small here (clientOrderIdCapacity 131,072: 16 MiB) so that the
// warm-up touches all of its pages (its slots are random: at the default
// capacity each new id touches a page of its own until the 128 MiB table is
// dense, which would swamp this measurement). The first few hundred sessions
// grow the heap and the allocator's arenas to their working size, so the
// churn is measured after WARMUP of them. Measured (2 vCPUs, load 10-15): +0.2
// to +6.2 MiB over the 200 after 350 (100 orders each); the bound, 12 MiB, is
// about a third of what kept stores would add.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { clientSide, scrape } from './e2e-support.js';

const ORDERS = 200;
const WARMUP = 350;
const CHURN = 200;

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

test('a closed session gets exactly what it missed, across a restart too, and sessions opened and closed leave RSS flat', { timeout: 600_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  const side = await clientSide();
  const small = ['--set', 'orders.clientOrderIdCapacity=131072', '--set', 'orders.sessions.maxClientOrderIds=131072'];
  let gw: GatewayProcess | undefined = await startGatewayProcess(['--config', file, ...small]);
  const stateDir = gw.stateDir;
  const connect = (name: string, lastAppSeq = 0n) =>
    OrderClient.connect({ url: gw!.url, token: TOKENS.desk, name, accounts: [1n], engine: side.engine, device: side.device, lastAppSeq });
  const metric = async (name: string) => (await scrape(gw!.url))(name, name);
  try {
    // keeper: Acks 1..3, then its close cancels the three (CancelAcks 4..6).
    const keeper = await connect('keeper');
    for (let i = 1n; i <= 3n; i++) {
      const a = await keeper.newOrder({ clientOrderId: i, instrumentId: 1, side: Side.SIDE_BUY, price: 5000, quantity: 1, account: 1n });
      assert.equal(a.kind, 'ack');
    }
    await keeper.close();

    const churn = async (from: number, count: number) => {
      for (let s = from; s < from + count; s++) {
        const c = await connect(`churn-${s}`);
        await Promise.all(
          Array.from({ length: ORDERS }, (_, i) =>
            c.newOrder({ clientOrderId: BigInt(i + 1), instrumentId: 2, side: Side.SIDE_BUY, price: 4000 + (i % 50), quantity: 1, account: 1n }),
          ),
        );
        await c.close();
      }
    };
    // A few sessions between keeper's close and its return (their records are in the journal it replays).
    await churn(0, 10);
    // It processed app_seq 1 only: 2..6 are resent, rebuilt from the journal.
    const back = await connect('keeper', 1n);
    // The Welcome and app_seqs 2..6, each once and in order.
    const exactly = (c: OrderClient) => [c.lastAppSeq, c.stats().received, c.stats().duplicates, c.stats().gaps];
    assert.deepEqual(exactly(back), [6n, 6, 0, 0]);
    await back.close();
    assert.equal(await metric('qpgate_order_resend_rebuilds_total'), 1);
    assert.equal(await metric('qpgate_order_resend_gaps_total'), 0);
    const took = async () => (((await metric('qpgate_order_resend_rebuild_seconds_total')) ?? 0) * 1e3).toFixed(1);
    console.log(`# the rebuild replayed a journal of ${4 + 10 * (ORDERS + 1)} records in ${await took()} ms on the rebuild worker (not the engine thread); the engine's longest duty cycle so far: ${(((await metric('qpgate_engine_duty_cycle_max_seconds')) ?? 0) * 1e3).toFixed(1)} ms`);

    gw.child.kill('SIGKILL');
    await gw.exited;
    gw = await startGatewayProcess(['--config', file, ...small, '--set', `state.dir=${stateDir}`]);
    const restarted = await connect('keeper', 1n);
    assert.deepEqual(exactly(restarted), [6n, 6, 0, 0]);
    await restarted.close();
    assert.equal(await metric('qpgate_order_resend_rebuilds_total'), 1);
    console.log(`# after the restart: ${await took()} ms`);

    // The churn, on the restarted gateway: nothing of it stays but its ids and names.
    await churn(10, WARMUP);
    const before = rssBytes(gw.child.pid!);
    await churn(10 + WARMUP, CHURN);
    const grew = rssBytes(gw.child.pid!) - before;
    console.log(`# RSS ${(before / 2 ** 20).toFixed(1)} MiB after ${WARMUP} sessions, ${grew >= 0 ? '+' : ''}${(grew / 2 ** 20).toFixed(2)} MiB over ${CHURN} more`);
    assert.ok(grew < 12 * 2 ** 20, `RSS grew ${grew} B over ${CHURN} closed sessions`);
    assert.equal(await metric('qpgate_order_resend_bytes'), 0, 'no closed session holds a resend store');
    assert.equal(await metric('qpgate_order_resend_rebuilds_total'), 1, 'a session that missed nothing replays nothing');
  } finally {
    await side.close();
    if (gw) {
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
  }
});
