// The TS clients' round trips against the product's gateway (issue 14 item 6):
// `qpgate`'s own gateway (startGateway: Fastify control plane + engine with
// the order agent, journal 'none', the feed off) as a second Node process
// under `taskset -c <server-cpu>`, and in this process (the client CPU) the
// TS API a user writes: OrderClient (its engine driven from this thread,
// src/orders/rc-endpoint.ts) or RiskClient.
//
//   --client order   one order in flight: newOrder() called -> its promise
//                    resolved with the Ack, the stream of bench_orders_rc
//                    (buy/sell alternating at one price, accounts 1 and 2)
//   --client risk    one ATOMIC_FETCH_AND_ADD (+0 on account 1's credit
//                    limit) called -> resolved with the old value
//   --idle spin|backoff   the gateway engine's idle strategy (default: its default)
//   --busy-poll-us N the client's busyPollUs (default the client's own)
//   --url URL        a gateway already running with bench/orders/gateway.yaml
//                    (bench/rdma/guest.sh's, on rxe or soft) instead of one
//                    started here; --ibv-device NAME for the client's device
//                    on the ibv backend, else the soft one at --client-address
//   --handshake-timeout-ms N   the clients' timeoutMs for the control plane
//                    (default theirs; a TCG guest needs more)
//
// Prints one `RESULT {json}` line (µs, HdrHistogram 3 digits).
//   node dist/bench/orders/ts-clients.js [--client order] [--iters 20000] [--warmup 2000] [--server-cpu 0]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { roundTripFields, roundTripHistogram } from '../common/hdr.js';
import { spawnPinnedServer } from '../common/node-child.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway } from '../../src/gateway/service.js';
import { OrderClient } from '../../src/orders/client.js';
import { RiskClient } from '../../src/orders/risk-client.js';
import { Side } from '../../src/orders/messages.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : def;
}
const GATEWAY = arg('server', '127.0.5.12');
const CLIENT = arg('client-address', '127.0.5.11');
const CONFIG = fileURLToPath(new URL('../../../bench/orders/gateway.yaml', import.meta.url));
/** The token bench/orders/gateway.yaml gives the desk. */
const TOKEN = 'bench-desk-token-0123456789abcdef';

async function server(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-ts-clients-'));
  const idle = arg('idle', '');
  const config = loadConfig({
    env: {},
    file: CONFIG,
    overrides: ['control.port=0', `control.host=${GATEWAY}`, `state.dir=${dir}`, `backend.address=${GATEWAY}`, ...(idle ? [`engine.idleStrategy=${idle}`] : [])],
  });
  const gw = await startGateway(config, createLogger('silent'), { handleSignals: false });
  process.stdout.write(`PORT ${new URL(gw.url).port}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void gw.close().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}

type Op = (i: number) => Promise<unknown>;

/** The gateway to measure against: --url's, or one started here on --server-cpu (ended by closing its stdin). */
async function gatewayUrl(idle: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = arg('url', '');
  if (url) return { url, stop: async () => {} };
  const { child, port } = await spawnPinnedServer(fileURLToPath(import.meta.url), arg('server-cpu', '0'), ['--server', GATEWAY, ...(idle ? ['--idle', idle] : [])], 'gateway');
  const stop = async (): Promise<void> => {
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
  };
  return { url: `http://${GATEWAY}:${port}`, stop };
}

async function client(): Promise<void> {
  const kind = arg('client', 'order');
  const iters = Number(arg('iters', '20000'));
  const warmup = Number(arg('warmup', '2000'));
  const maxSeconds = Number(arg('max-seconds', '30'));
  const busy = arg('busy-poll-us', '');
  const idle = arg('idle', '');
  const ibvDevice = arg('ibv-device', '');
  const handshakeMs = arg('handshake-timeout-ms', '');
  const gateway = await gatewayUrl(idle);
  const common = {
    url: gateway.url,
    token: TOKEN,
    name: `bench-${kind}`,
    accounts: [1n, 2n],
    device: ibvDevice ? { kind: 'ibv' as const, name: ibvDevice } : { address: CLIENT },
    ...(busy ? { busyPollUs: Number(busy) } : {}),
    ...(handshakeMs ? { timeoutMs: Number(handshakeMs) } : {}),
  };
  let op: Op;
  let close: () => Promise<void>;
  if (kind === 'order') {
    const c = await OrderClient.connect(common);
    op = (i) => {
      const buy = (i & 1) === 0;
      return c.newOrder({ clientOrderId: BigInt(i + 1), instrumentId: 1, side: buy ? Side.SIDE_BUY : Side.SIDE_SELL, price: 100, quantity: 10, account: buy ? 1n : 2n });
    };
    close = () => c.close();
  } else {
    const c = await RiskClient.connect(common);
    op = () => c.fetchAdd(1n, 'creditLimit', 0n);
    close = () => c.close();
  }
  const hist = roundTripHistogram();
  let sum = 0;
  let measuredFrom = process.hrtime.bigint();
  const giveUp = measuredFrom + BigInt(Math.round(maxSeconds * 1e9));
  let done = 0;
  for (; done < warmup + iters; done++) {
    if (done === warmup) measuredFrom = process.hrtime.bigint();
    const t0 = process.hrtime.bigint();
    const answer = (await op(done)) as { kind?: string };
    const rtt = Number(process.hrtime.bigint() - t0);
    if (kind === 'order' && answer.kind !== 'ack') throw new Error(`order ${done + 1}: expected an Ack, got ${JSON.stringify(answer, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
    if (done >= warmup) {
      hist.recordValue(rtt);
      sum += rtt;
      if (process.hrtime.bigint() > giveUp) break;
    }
  }
  const measuredSeconds = Number(process.hrtime.bigint() - measuredFrom) / 1e9;
  await close();
  await gateway.stop();
  const result = {
    bench: `ts_${kind}_client`,
    idle: idle || 'default',
    ...roundTripFields(hist, sum),
    orders_per_s: Math.round(hist.totalCount / measuredSeconds),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (arg('role', 'client') === 'server') await server();
else await client();
