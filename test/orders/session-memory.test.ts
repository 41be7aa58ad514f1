// Closed sessions cost no memory (issue 13 item 4): a session's resend store
// is freed when it closes, and what a closed session missed is rebuilt from
// the journal at its next Hello — after a gateway restart too.
//
// The bound. Each churned session below sends ORDERS resting orders and is
// closed (cancel-on-disconnect): 2 x ORDERS sequenced answers, so a resend
// store of 64 slots x 336 B = 21 KiB that, kept, would make CHURN sessions
// hold 6.3 MiB. What a closed session still costs is its duplicate-table
// entries (64 B per client order id, kept for good), its handler state and
// its name (about 2.2 KiB per session, 0.7 MiB for CHURN): the RSS growth
// over the churn must stay under 4 MiB, which leaves 3.3 MiB for the heap's
// and the allocator's noise and is 2.3 MiB short of what kept stores add.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from './support.js';
import { clientSide, scrape } from './e2e-support.js';

const ORDERS = 30;
const WARMUP = 60;
const CHURN = 300;

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

test('sessions opened and closed leave RSS flat, and a closed session gets exactly what it missed, across a restart too', { timeout: 600_000 }, async () => {
  const { file } = writeConfig(`feeds:\n  enabled: false\n${TOKENS_YAML}${ordersYaml()}`);
  const side = await clientSide();
  let gw: GatewayProcess | undefined = await startGatewayProcess(['--config', file]);
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
            c.newOrder({ clientOrderId: BigInt(i + 1), instrumentId: 2, side: Side.SIDE_BUY, price: 4000 + i, quantity: 1, account: 1n }),
          ),
        );
        await c.close();
      }
    };
    await churn(0, WARMUP);
    const before = rssBytes(gw.child.pid!);
    await churn(WARMUP, CHURN);
    const grew = rssBytes(gw.child.pid!) - before;
    console.log(`# RSS ${(before / 2 ** 20).toFixed(1)} MiB after ${WARMUP} sessions, ${grew >= 0 ? '+' : ''}${(grew / 2 ** 20).toFixed(2)} MiB over ${CHURN} more`);
    assert.ok(grew < 4 * 2 ** 20, `RSS grew ${grew} B over ${CHURN} closed sessions`);
    assert.equal(await metric('qpgate_order_resend_bytes'), 0, 'no closed session holds a resend store');

    // It processed app_seq 1 only: 2..6 are resent, rebuilt from the journal.
    const back = await connect('keeper', 1n);
    assert.deepEqual([back.lastAppSeq, back.stats().received, back.stats().gaps], [6n, 5, 0]);
    await back.close();
    assert.equal(await metric('qpgate_order_resend_rebuilds_total'), 1);
    assert.equal(await metric('qpgate_order_resend_gaps_total'), 0);

    gw.child.kill('SIGKILL');
    await gw.exited;
    gw = await startGatewayProcess(['--config', file, '--set', `state.dir=${stateDir}`]);
    const restarted = await connect('keeper', 1n);
    assert.deepEqual([restarted.lastAppSeq, restarted.stats().received, restarted.stats().gaps], [6n, 5, 0]);
    await restarted.close();
    assert.equal(await metric('qpgate_order_resend_rebuilds_total'), 1);
    const seconds = await metric('qpgate_order_resend_rebuild_seconds_total');
    console.log(`# rebuild after the restart: ${((seconds ?? 0) * 1e3).toFixed(2)} ms of engine time over a journal of ${4 + (WARMUP + CHURN) * (ORDERS + 1)} records`);
  } finally {
    await side.close();
    if (gw) {
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
  }
});
