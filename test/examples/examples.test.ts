// examples/: each example run as a user runs it (a child `node
// dist/examples/<name>.js` against a child `qpgate serve` on the embedded
// default, with the example order handler loaded), asserting on what it
// prints and its exit status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { REPO_ROOT } from '../support/paths.js';

const EXAMPLES = join(REPO_ROOT, 'dist', 'examples');
const HANDLER = join(EXAMPLES, 'order-handler.js');

let gw: GatewayProcess;
let token: string;
// Multicast groups of this gateway's own: every gateway on the host with the embedded default publishes to
// 239.77.0.1/2 on loopback, and a subscriber follows the newest session it sees on a group.
const octet = () => Math.floor(Math.random() * 250);
const GROUPS = [`239.78.${octet()}.${1 + octet()}`, `239.78.${octet()}.${1 + octet()}`] as const;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-examples-'));
  const config = join(dir, 'handler.yaml');
  // The README's way to load the example handler: orders.handlers in a config file; the rest is the embedded default.
  writeFileSync(
    config,
    [
      'orders:',
      '  handlers:',
      `    - module: ${HANDLER}`,
      '      options: {file: fills-per-account.json}',
      'feeds:',
      `  channels: [{id: 1, groupA: ${GROUPS[0]}, groupB: ${GROUPS[1]}}]`,
      '',
    ].join('\n'),
  );
  gw = await startGatewayProcess(['--config', config]);
  token = readFileSync(join(gw.stateDir, 'admin.token'), 'utf8').trim();
}, { timeout: 60_000 });

after(async () => {
  if (gw.child.exitCode === null) gw.child.kill('SIGKILL');
  await gw.exited;
});

/** Runs dist/examples/<name>.js with --url and --token of the test gateway (from the repo root, as the README says). */
function runExample(name: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(EXAMPLES, `${name}.js`), '--url', gw.url, `--token=${token}`, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, QPGATE_TOKEN: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

const lines = (text: string) => text.trim().split('\n');

/** The gateway's pino lines with this msg. */
function gatewayLog(msg: string): Array<Record<string, unknown>> {
  return gw
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === msg);
}

const STATS = /^stats \d+ s: received (\d+) gaps (\d+) duplicates \d+ lost (\d+) latency p50 ([\d.]+) µs p99 ([\d.]+) µs p99\.9 ([\d.]+) µs$/;

test('subscriber: discovers the default feed, prints 300 ticks in sequence with no gaps, then its stats', { timeout: 90_000 }, async () => {
  const r = await runExample('subscriber', ['--address', freeLoopbackAddress(), '--count', '300', '--seconds', '30']);
  assert.equal(r.status, 0, r.stderr);
  const out = lines(r.stdout);
  assert.equal(out[0], `feed default: channel 1 (${GROUPS[0]}/${GROUPS[1]})`);
  // One publisher, one session, seen once.
  const sessions = out.filter((l) => l.startsWith('session '));
  assert.equal(sessions.length, 1, r.stdout);
  const session = /^session ch 1: 0 -> (\d+) from seq \d+$/.exec(sessions[0]!);
  assert.ok(session, sessions[0]);
  assert.equal(out[1], sessions[0]);
  // ...the session of this gateway's feed.
  const feed = (await (await fetch(`${gw.url}/v1/feeds/default`, { headers: { authorization: `Bearer ${token}` } })).json()) as { session: number };
  assert.equal(Number(session[1]), feed.session);
  const ticks = out.filter((l) => l.startsWith('tick '));
  assert.equal(ticks.length, 300, r.stdout);
  // Every tick: channel, seq, a decoded type and body; seqs consecutive (nothing lost, nothing repeated).
  let last: bigint | undefined;
  for (const t of ticks) {
    const m = /^tick ch 1 seq (\d+) ([A-Z_]+) instrument (\d+) (\{.*\})$/.exec(t);
    assert.ok(m, t);
    assert.notEqual(m[2], 'type', t);
    const seq = BigInt(m[1]!);
    if (last !== undefined) assert.equal(seq, last + 1n, `seq after ${last}: ${t}`);
    last = seq;
    JSON.parse(m[4]!);
  }
  assert.ok(!out.some((l) => l.startsWith('gap ')), r.stdout);
  const stats = out.filter((l) => l.startsWith('stats '));
  assert.ok(stats.length >= 1, r.stdout);
  const final = STATS.exec(stats[stats.length - 1]!);
  assert.ok(final, stats[stats.length - 1]);
  assert.ok(Number(final[1]) >= 300);
  assert.equal(final[2], '0', 'gaps');
  assert.equal(final[3], '0', 'lost');
  assert.equal(out[out.length - 1], 'done: 300 ticks, gaps 0');
});

test('subscriber --stats: a stats line every second, received rising, no gaps, latency percentiles', { timeout: 90_000 }, async () => {
  const r = await runExample('subscriber', ['--address', freeLoopbackAddress(), '--stats', '--seconds', '2.6']);
  assert.equal(r.status, 0, r.stderr);
  const out = lines(r.stdout);
  assert.ok(!out.some((l) => l.startsWith('tick ')), 'no ticks with --stats');
  assert.equal(out.filter((l) => l.startsWith('session ')).length, 1, r.stdout);
  const stats = out.filter((l) => l.startsWith('stats ')).map((l) => STATS.exec(l));
  // Two from the timer (at 1 s and 2 s) and the final one.
  assert.ok(stats.length >= 3, r.stdout);
  let received = 0;
  for (const m of stats) {
    assert.ok(m, r.stdout);
    assert.ok(Number(m[1]) > received, `received rises: ${r.stdout}`);
    received = Number(m[1]);
    assert.equal(m[2], '0', `gaps: ${r.stdout}`);
    assert.equal(m[3], '0', `lost: ${r.stdout}`);
    const [p50, p99, p999] = [Number(m[4]), Number(m[5]), Number(m[6])];
    assert.ok(p50 > 0 && p50 <= p99 && p99 <= p999, r.stdout);
  }
  assert.match(out[out.length - 1]!, /^done: \d+ ticks, gaps 0$/);
});

test('subscriber: no gateway at --url is one line on stderr and exit status 1', { timeout: 60_000 }, async () => {
  // A loopback port just closed: nothing listens there. The later --url wins over the test gateway's.
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  const r = await runExample('subscriber', ['--address', freeLoopbackAddress(), '--url', `http://127.0.0.1:${port}`]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `subscriber: no gateway answers at http://127.0.0.1:${port} (ECONNREFUSED): is \`qpgate serve\` running? (--url to point elsewhere)\n`);
  assert.equal(r.stdout, '');
});

test('order-client: a resting buy and a crossing sell; both Acks, both Fills of one trade, the rest cancelled', { timeout: 90_000 }, async () => {
  const r = await runExample('order-client', ['--address', freeLoopbackAddress()]);
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const out = lines(r.stdout);
  assert.match(out[0]!, /^session \d+ for accounts 1, 2$/);
  const acks = out.filter((l) => l.startsWith('ack ')).map((l) => /^ack (\d+) order (\d+)$/.exec(l));
  assert.equal(acks.length, 2, r.stdout);
  const [buyId, sellId] = acks.map((m) => m![1]!);
  assert.equal(BigInt(sellId!), BigInt(buyId!) + 1n);
  const fill = (id: string, side: string, leaves: number, liquidity: string) =>
    out.map((l) => new RegExp(`^fill ${id} ${side} 3 @ 10000 leaves ${leaves} trade (\\d+) ${liquidity}$`).exec(l)).find((m) => m !== null);
  const buyFill = fill(buyId!, 'buy', 2, 'maker');
  const sellFill = fill(sellId!, 'sell', 0, 'taker');
  assert.ok(buyFill && sellFill, r.stdout);
  assert.equal(buyFill[1], sellFill[1], 'one trade, both sides');
  // The sell's Ack comes before the fills (app_seq order), the cancel after them.
  const at = (prefix: string) => out.findIndex((l) => l.startsWith(prefix));
  assert.ok(at(`ack ${sellId}`) < at(`fill ${sellId}`), r.stdout);
  assert.ok(at(`fill ${buyId}`) < at(`cancelled ${buyId} quantity 2`), r.stdout);
  assert.equal(out[out.length - 1], 'done');
});

test('risk-kill-switch: CMP_SWAP sets the kill switch, an order is rejected KILL_SWITCH, cleared, the next order is acked', { timeout: 90_000 }, async () => {
  const r = await runExample('risk-kill-switch', ['--address', freeLoopbackAddress(), '--risk-address', freeLoopbackAddress()]);
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const out = lines(r.stdout);
  assert.equal(out.length, 6, r.stdout);
  assert.equal(out[0], 'kill switch of account 1: 0 -> 1 (CMP_SWAP)');
  const killed = /^order (\d+): reject KILL_SWITCH: account 1: kill switch is set$/.exec(out[1]!);
  assert.ok(killed, r.stdout);
  assert.equal(out[2], 'kill switch of account 1: 1 -> 0 (CMP_SWAP)');
  const accepted = /^order (\d+): ack order \d+$/.exec(out[3]!);
  assert.ok(accepted, r.stdout);
  assert.equal(BigInt(accepted[1]!), BigInt(killed[1]!) + 1n);
  assert.equal(out[4], `cancelled ${accepted[1]}`);
  assert.equal(out[5], 'done');
});

test('order-handler: the gateway loaded it from orders.handlers; it logged each fill and wrote its totals at shutdown', { timeout: 90_000 }, async () => {
  // Loaded at start, from the config file.
  const ready = gatewayLog('fill-counter: ready');
  assert.equal(ready.length, 1, gw.output());
  assert.equal(ready[0]!['handler'], HANDLER);
  const file = join(gw.stateDir, 'fills-per-account.json');
  assert.equal(ready[0]!['file'], file);
  // The order-client test traded 3 lots between accounts 1 and 2 (the kill-switch test traded nothing):
  // one fill each. Handler events come after the answers: wait for them.
  const deadline = Date.now() + 10_000;
  while (gatewayLog('fill-counter: fill').length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const fills = gatewayLog('fill-counter: fill');
  assert.deepEqual(
    fills.map((f) => ({ account: f['account'], fills: f['fills'], quantity: f['quantity'], price: f['price'] })).sort((a, b) => String(a.account).localeCompare(String(b.account))),
    [
      { account: '1', fills: 1, quantity: '3', price: '10000' },
      { account: '2', fills: 1, quantity: '3', price: '10000' },
    ],
    gw.output(),
  );
  assert.equal(fills[0]!['tradeId'], fills[1]!['tradeId']);
  // close() at the gateway's shutdown writes the totals.
  assert.equal(existsSync(file), false);
  gw.child.kill('SIGTERM');
  assert.equal(await gw.exited, 0, gw.output());
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { '1': { fills: 1, quantity: '3' }, '2': { fills: 1, quantity: '3' } });
});
