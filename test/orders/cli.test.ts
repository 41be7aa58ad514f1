// `qpgate order`, `qpgate risk` and `qpgate sessions` against a live gateway,
// run as a user runs them (child processes), and the order-line parser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QPGATE_BIN } from '../support/paths.js';
import { startCli } from '../support/cli.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { parseOrderLine } from '../../src/orders/cli.js';
import { OrderClient } from '../../src/orders/client.js';
import { Side, TimeInForce } from '../../src/orders/messages.js';
import { call, ordersYaml, startOrdersGateway, TOKENS } from './support.js';

const run = (args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [QPGATE_BIN, ...args], { env: { ...process.env, QPGATE_TOKEN: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });

test('order lines: buy/sell/cancel/replace with options; mistakes are named', () => {
  assert.deepEqual(parseOrderLine('buy 1001 10000 5  # a comment'), {
    kind: 'newOrder',
    instrumentId: 1001,
    side: Side.SIDE_BUY,
    price: 10000,
    quantity: 5,
    tif: TimeInForce.TIME_IN_FORCE_DAY,
  });
  assert.deepEqual(parseOrderLine('sell 1 99 2 ioc account=3 id=77'), {
    kind: 'newOrder',
    id: 77n,
    instrumentId: 1,
    side: Side.SIDE_SELL,
    price: 99,
    quantity: 2,
    tif: TimeInForce.TIME_IN_FORCE_IOC,
    account: 3n,
  });
  assert.deepEqual(parseOrderLine('cancel 77 1'), { kind: 'cancel', orig: 77n, instrumentId: 1 });
  assert.deepEqual(parseOrderLine('replace 77 1 100 4 id=9'), { kind: 'replace', id: 9n, orig: 77n, instrumentId: 1, price: 100, quantity: 4 });
  assert.equal(parseOrderLine('   # nothing'), undefined);
  assert.throws(() => parseOrderLine('buy 1 x 5'), /^Error: price: expected an integer, got x$/);
  assert.throws(() => parseOrderLine('buy 1 5'), /^Error: buy: expected <instrument> <price> <quantity>, got 2 values$/);
  assert.throws(() => parseOrderLine('hold 1 5'), /^Error: unknown request "hold"; expected buy, sell, cancel or replace$/);
  assert.throws(() => parseOrderLine('buy 1 5 5 tif=x'), /^Error: unknown option tif=; expected id= or account=$/);
});

test('qpgate order trades from a file, qpgate risk sets the kill switch by CMP_SWAP, qpgate sessions lists and closes', { timeout: 120_000 }, async () => {
  const gw = await startOrdersGateway(ordersYaml({ selfMatch: 'cancel-newest' }));
  let live: OrderClient | undefined;
  try {
    const dir = mkdtempSync(join(tmpdir(), 'qpgate-cli-'));
    const file = join(dir, 'orders.txt');
    writeFileSync(file, ['# a resting sell, a buy that crosses it, then a cancel of the rest', 'sell 1 10000 5 id=1', 'buy 1 10000 3 id=2 account=2', 'cancel 1 1 id=3', 'buy 1 0 1 id=4', ''].join('\n'));
    const address = freeLoopbackAddress();
    const base = ['--url', gw.url, '--address', address];
    // Accounts 1 and 2 in one session: the buy may not meet the sell of its own account.
    const o = await run(['order', ...base, '--token', TOKENS.desk, '--name', 'cli-1', '--account', '1', '--account', '2', '--file', file]);
    assert.equal(o.status, 1, `one line was rejected, so the exit status is 1\n${o.stderr}`);
    const lines = o.stdout.trim().split('\n');
    assert.match(lines[0]!, /^ack 1 order \d+$/);
    assert.match(lines[1]!, /^ack 2 order \d+$/);
    assert.ok(lines.includes('fill 1 sell 3 @ 10000 leaves 2 trade 1 maker'), o.stdout);
    assert.ok(lines.includes('fill 2 buy 3 @ 10000 leaves 0 trade 1 taker'), o.stdout);
    assert.ok(lines.includes('cancelled 1 REQUESTED quantity 2'), o.stdout);
    assert.ok(lines.some((l) => /^reject 4 (INVALID_PRICE|MALFORMED): /.test(l)), o.stdout);
    assert.match(lines[lines.length - 1]!, /^session \d+ last app_seq \d+$/);

    const r = await run(['risk', ...base, '--token', TOKENS.risk, '--name', 'cli-risk', '--account', '1', '--kill']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^account 1: kill switch 0 -> 1 \(CMP_SWAP\)$/m);
    assert.match(r.stdout, /^ACCOUNT\s+CREDIT-LIMIT\s+KILL\s+POSITION\s+OPEN-NOTIONAL\s+OPEN-ORDERS\s+TRADED-NOTIONAL$/m);
    assert.match(r.stdout, /^1\s+1000000000000000\s+1\s+-3\s+0\s+0\s+30000$/m);
    const badTimeout = await run(['order', ...base, '--token', TOKENS.desk, '--name', 'cli-2', '--account', '1', '--file', file, '--ack-timeout', '32']);
    assert.equal(badTimeout.status, 1);
    assert.equal(badTimeout.stderr, 'qpgate order: --ack-timeout must be an IBA timeout code (4.096 µs × 2^n) from 1 to 31, got "32"\n');
    const badReconnect = await run(['order', ...base, '--token', TOKENS.desk, '--name', 'cli-2', '--account', '1', '--file', file, '--reconnect-seconds', '-1']);
    assert.equal(badReconnect.status, 1);
    assert.equal(badReconnect.stderr, 'qpgate order: --reconnect-seconds must be a number of seconds, 0 or more (1.5 is fine), got "-1"\n');
    const killed = await run(['order', ...base, '--token', TOKENS.desk, '--name', 'cli-2', '--account', '1', '--file', file, '--ack-timeout', '16']);
    assert.match(killed.stdout, /^reject 1 KILL_SWITCH: account 1: kill switch is set$/m);
    const limit = await run(['risk', ...base, '--token', TOKENS.risk, '--name', 'cli-risk', '--account', '1', '--unkill', '--set-credit-limit', '5000']);
    assert.equal(limit.status, 0, limit.stderr);
    assert.match(limit.stdout, /^account 1: credit limit 1000000000000000 -> 5000 \(CMP_SWAP\)$/m);
    assert.match(limit.stdout, /^account 1: kill switch 1 -> 0 \(CMP_SWAP\)$/m);

    // --json: JSON lines a script can parse, the same facts.
    const rj = await run(['risk', ...base, '--token', TOKENS.risk, '--name', 'cli-risk', '--account', '1', '--kill', '--json']);
    assert.equal(rj.status, 0, rj.stderr);
    const riskLines = rj.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
    assert.deepEqual(riskLines[0], { account: '1', word: 'killSwitch', op: 'CMP_SWAP', before: '0', after: '1' });
    assert.equal(riskLines[1]!['killSwitch'], '1');
    assert.equal(riskLines[1]!['creditLimit'], '5000');
    const oj = await run(['order', ...base, '--token', TOKENS.desk, '--name', 'cli-3', '--account', '1', '--file', file, '--json']);
    const orderLines = oj.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(orderLines.some((m) => m['kind'] === 'reject' && m['reasonName'] === 'KILL_SWITCH' && m['clientOrderId'] === '1'), oj.stdout);
    assert.match(String(orderLines[orderLines.length - 1]!['lastAppSeq']), /^\d+$/);
    assert.equal((await run(['risk', ...base, '--token', TOKENS.risk, '--name', 'cli-risk', '--account', '1', '--unkill'])).status, 0);

    // `qpgate order` closed its sessions when done; a session that stays open is listed.
    assert.equal((await run(['sessions', '--url', gw.url, '--token', TOKENS.viewer])).stdout, 'no sessions\n');
    live = await OrderClient.connect({ url: gw.url, token: TOKENS.desk2, name: 'live', accounts: [1n], device: { address: freeLoopbackAddress() } });
    await live.newOrder({ clientOrderId: 1n, instrumentId: 1, side: Side.SIDE_BUY, price: 100, quantity: 1, account: 1n });
    // A read token lists only its own sessions; an admin token every one.
    assert.equal((await run(['sessions', '--url', gw.url, '--token', TOKENS.viewer])).stdout, 'no sessions\n');
    const s = await run(['sessions', '--url', gw.url, '--token', TOKENS.ops]);
    assert.equal(s.status, 0, s.stderr);
    assert.match(s.stdout, /^ID\s+ROLE\s+NAME\s+STATE\s+QPN\s+TOKEN\s+ACCOUNTS\s+APP-SEQ\s+PATH\s+MIGRATIONS\s+DEVICE\s+FAILOVERS\s+ENDED-BY$/m);
    assert.match(s.stdout, new RegExp(`^\\s*${live.id}\\s+trading\\s+live\\s+RTS\\s+\\d+\\s+desk2\\s+1\\s+1\\s+-\\s+0\\s+primary\\s+0\\s+-$`, 'm'));  // one address each: no alternate path (PATH -); one device, no failover
    const refused = await run(['sessions', '--url', gw.url, '--token', TOKENS.viewer, '--close', String(live.id)]);
    assert.equal(refused.status, 1);
    assert.equal(refused.stderr, `qpgate sessions: DELETE /v1/sessions/${live.id}: HTTP 404: no session ${live.id} on this gateway\n`);
    const closed = await run(['sessions', '--url', gw.url, '--token', TOKENS.ops, '--close', String(live.id)]);
    assert.equal(closed.status, 0, closed.stderr);
    assert.match(closed.stdout, new RegExp(`^session ${live.id} closed \\(QP \\S+\\)$`, 'm'));
  } finally {
    await live?.close().catch(() => undefined);
    await gw.close();
  }
});

test('qpgate order keeps its session through a lost connection: it reconnects, prints what the gateway sent meanwhile and goes on; a gateway gone for good ends it with the reason, exit 1', { timeout: 120_000 }, async () => {
  const gw = await startOrdersGateway();
  try {
    const cli = startCli(['order', '--url', gw.url, '--address', freeLoopbackAddress(), '--token', TOKENS.desk, '--name', 'cli-lost', '--account', '1'], { QPGATE_TOKEN: '' });
    cli.send('sell 1 10000 5 id=1');
    await cli.waitFor('stdout', /^ack 1 order \d+$/m);
    const listed = await call(gw.url, 'GET', '/v1/sessions', TOKENS.ops);
    const id = (listed.json.sessions as Array<{ id: number; name: string }>).find((s) => s.name === 'cli-lost')!.id;
    const closed = await call(gw.url, 'DELETE', `/v1/sessions/${id}`, TOKENS.ops);
    assert.ok(closed.status >= 200 && closed.status < 300, JSON.stringify(closed));
    // The gateway's QP is in ERR (the resting sell cancelled on disconnect): the
    // CLI's keepalive runs out of retries, it reconnects to the same session
    // and prints the cancel it was sent meanwhile, then takes the next line.
    await cli.waitFor('stderr', /^qpgate order: reconnected \(session \d+, app_seq \d+\)$/m);
    await cli.waitFor('stdout', /^cancel 1 \S+ quantity 5$/m);
    cli.send('buy 1 9000 1 id=2');
    await cli.waitFor('stdout', /^ack 2 order \d+$/m);
    cli.end();
    const done = await cli.exited;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stderr, /^qpgate order: connection lost \(keepalive READ completed with IBV_WC_RETRY_EXC_ERR: .+\); reconnecting for up to 30 s$/m);
    const lines = done.stdout.trim().split('\n');
    assert.deepEqual(lines.map((l) => l.split(' ').slice(0, 2).join(' ')), ['ack 1', 'cancel 1', 'ack 2', `session ${id}`], done.stdout);
  } finally {
    await gw.close();
  }

  // A gateway gone for good: a command waiting for an answer, and one waiting
  // for its next line, each end with the reason instead of waiting for ever.
  const gone = await startOrdersGateway();
  const clis = ['cli-waiting', 'cli-idle'].map((name) =>
    startCli(['order', '--url', gone.url, '--address', freeLoopbackAddress(), '--token', TOKENS.desk, '--name', name, '--account', '1', '--reconnect-seconds', '1'], { QPGATE_TOKEN: '' }),
  );
  try {
    for (const [i, cli] of clis.entries()) {
      cli.send(`sell 1 ${10000 + i} 5 id=1`);
      await cli.waitFor('stdout', /^ack 1 order \d+$/m);
    }
  } finally {
    await gone.close();
  }
  clis[0]!.send('sell 1 10000 5 id=2');
  for (const cli of clis) {
    const done = await cli.exited;
    assert.equal(done.code, 1, done.stderr);
    assert.match(done.stderr, /^qpgate order: connection lost \(.+\); reconnecting for up to 1 s\nqpgate order: connection lost \(.+\) and 1 s of reconnecting failed: .+\n$/, done.stderr);
    assert.doesNotMatch(done.stdout, /^ack 2/m);
  }
});
