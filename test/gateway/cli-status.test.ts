// `qpgate status` and `qpgate qps` against live gateways: one spawned as a
// child process (as a user runs it), one in this process with QPs to list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { QPGATE_BIN } from '../support/paths.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { startTestGateway, READ_TOKEN } from '../support/in-process-gateway.js';

// Async (not spawnSync): an in-process gateway must keep answering while the CLI runs.
const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [QPGATE_BIN, ...args], { env: { ...process.env, QPGATE_TOKEN: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });

test('qpgate status and qps read a running gateway (token from the state dir, or --token, or QPGATE_TOKEN)', async () => {
  const gw = await startGatewayProcess();
  try {
    const token = readFileSync(join(gw.stateDir, 'admin.token'), 'utf8').trim();
    const s = await run(['status', '--url', gw.url, '--token', token]);
    assert.equal(s.status, 0, s.stderr);
    assert.match(s.stdout, new RegExp(`^Gateway qpgate \\S+ at ${gw.url.replace(/\./g, '\\.')}: ready`));
    assert.match(s.stdout, /^CA 'qpgate_soft_127\.\d+\.\d+\.\d+'$/m);
    assert.match(s.stdout, /^\t\tState: Active$/m);
    assert.match(s.stdout, /^\t\tActive MTU: 4096$/m);
    assert.match(s.stdout, /^\t\tGID\[0\]: ::ffff:127\.\d+\.\d+\.\d+ \(RoCE v2\)$/m);
    assert.match(s.stdout, /^\tengine: tid \d+, CPU -?\d+/m);
    // The embedded default publishes the synthetic feed, so its SLO is evaluated
    // (too few events until the first evaluation after the start: every 5 s).
    assert.match(s.stdout, /^\ttick-publish-p99: (ok|violated|too few events|pending) /m);
    // Order entry is on in the embedded default too: its ack latency has a
    // source, but no orders yet, so nothing to judge (100 events for a p99).
    assert.match(s.stdout, /^\torder-ack-p99: (too few events \(p99 ≤ 200 µs\); 1m 0 of 100 events, 10m 0 of 100 events|pending .*)$/m);
    assert.match(s.stdout, /^Feeds: 1$/m);
    assert.match(s.stdout, /^\tdefault: publishing, session \d+, QP \d+ \(RTS\)$/m);
    assert.match(s.stdout, /^\t\tchannel 1 \(239\.77\.0\.1\/239\.77\.0\.2\): next seq \d+, \d+ messages in \d+ frames/m);
    // Roles in a fixed order, whichever service registered first.
    assert.match(s.stdout, /^Sessions: trading 0 connected of 0, risk 0 connected of 0, recovery 0 connected of 0$/m);
    assert.match(s.stdout, /^\torders: journal \S+orders\.journal \(fsync none\), 8 instruments, 4 accounts; received 0, acks 0, rejects 0, fills 0, open orders 0$/m);
    // The feed's UD QP, made natively by the publisher.
    assert.match(s.stdout, /^QPs: 1 \(RTS 1\)$/m);

    // The token file under state.dir (from the config layers), and QPGATE_TOKEN.
    const viaFile = await run(['qps', '--url', gw.url], { QPGATE_STATE__DIR: gw.stateDir });
    assert.equal(viaFile.status, 0, viaFile.stderr);
    const rows = viaFile.stdout.trimEnd().split('\n');
    assert.equal(rows.length, 2, viaFile.stdout);
    assert.match(rows[1]!, /^ *\d+ +primary +UD +RTS +\d+ +0 +0 +0x0feed001 +1024 +\d+ +0 +\d+ +0 +0 +0 +0 +0 +0 +0 +feed:default$/);
    const viaEnv = await run(['status', '--url', gw.url, '--json'], { QPGATE_TOKEN: token });
    assert.equal(viaEnv.status, 0, viaEnv.stderr);
    assert.equal((JSON.parse(viaEnv.stdout) as { ready: boolean }).ready, true);

    const bad = await run(['status', '--url', gw.url, '--token', 'wrong-token-0123456789']);
    assert.equal(bad.status, 1);
    assert.equal(bad.stderr, `qpgate status: the gateway at ${gw.url} refused the token from --token (401: unknown bearer token)\n`);
    assert.equal(bad.stdout, '');
  } finally {
    gw.child.kill('SIGTERM');
  }
  assert.equal(await gw.exited, 0);
});

test('qpgate qps prints the QP table like `rdma res show qp`', async () => {
  const gw = await startTestGateway();
  const device = gw.state.device!;
  const pd = device.allocPd();
  const cq = device.createCq(16);
  const rc = gw.state.qps.createQp(pd, { type: 'RC', sendCq: cq }, { owner: 'session:7' });
  const ud = gw.state.qps.createQp(pd, { type: 'UD', sendCq: cq }, { owner: 'feed:md-a' });
  rc.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: [] });
  // A QP with the same number on the alternate device (an ibv gateway's
  // backend.alternateDevice, where a feed's line B leaves from): QPNs are per
  // device, so it is listed beside the first, not in its place.
  gw.state.qps.track({ qpNum: ud.qpNum, query: () => ud.query(), counters: () => ({}) }, { owner: 'feed:md-a', label: 'line B', device: 'alternate' });
  try {
    const r = await run(['qps', '--url', gw.url, '--token', READ_TOKEN]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[0]!, /^ *LQPN +DEVICE +TYPE +STATE +SQ-PSN +RQ-PSN +DQPN +QKEY +MTU +SQ-WR +RQ-WR +SENT_PKTS +RCVD_PKTS +RETRANSMITTED_PKTS +TIMEOUTS +NAKS_RECEIVED +NAKS_SENT +RCVD_RNR_ERR +RNR_NAKS_SENT +OWNER$/);
    const byQpn = (qpn: number, device = 'primary') => lines.find((l) => new RegExp(`^ *${qpn} +${device} `).test(l))!;
    assert.match(byQpn(rc.qpNum), /^ *\d+ +primary +RC +INIT +0 +0 +0 +0x00000000 +\d+ +0 +0 +0 +0 +0 +0 +0 +0 +0 +0 +session:7$/);
    assert.match(byQpn(ud.qpNum), /^ *\d+ +primary +UD +RESET .* feed:md-a$/);
    assert.match(byQpn(ud.qpNum, 'alternate'), /^ *\d+ +alternate +UD +RESET .* feed:md-a$/);
    const one = await fetch(`${gw.url}/v1/qps/${ud.qpNum}?device=alternate`, { headers: { authorization: `Bearer ${READ_TOKEN}` } });
    assert.equal(one.status, 200);
    assert.deepEqual(((await one.json()) as { device: string; label: string }).device, 'alternate');
    const missing = await fetch(`${gw.url}/v1/qps/${rc.qpNum}?device=alternate`, { headers: { authorization: `Bearer ${READ_TOKEN}` } });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { message: string }).message, `no QP ${rc.qpNum} on this gateway's alternate device`);
    // Aligned: every column starts at the same offset on every line.
    const col = (l: string) => /^ *\S+ +/.exec(l)![0].length; // where the TYPE column starts
    assert.equal(new Set(lines.map(col)).size, 1, r.stdout);
  } finally {
    gw.state.qps.destroyAll();
    cq.destroy();
    pd.dealloc();
    await gw.close();
  }
});

/** A port nothing listens on (bound, then released). */
const closedPort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
};

test('with no gateway running, status says so in one line and exits 1', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const r = await run(['status', '--url', url, '--token', 'x-0123456789abcdef']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `qpgate status: no gateway answers at ${url} (ECONNREFUSED): is \`qpgate serve\` running? (--url to point elsewhere)\n`);
});

test('with no token anywhere, qps says where it looked and exits 1', async () => {
  const r = await run(['qps', '--url', 'http://127.0.0.1:9'], { QPGATE_STATE__DIR: '/nonexistent-qpgate' });
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'qpgate qps: no token: pass --token, set QPGATE_TOKEN, or run where /nonexistent-qpgate/admin.token is readable\n');
});

test('--http-timeout bounds each call to the control plane; a bad value is refused by name', async () => {
  // A control plane that takes the request and never answers: the CLI gives up after --http-timeout.
  let arrived = 0;
  let heldMs: (ms: number) => void = () => undefined;
  const heldFor = new Promise<number>((resolve) => (heldMs = resolve));
  const server = createServer((socket) => {
    socket.once('data', () => (arrived = performance.now()));
    socket.on('close', () => heldMs(performance.now() - arrived));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const started = performance.now();
    const r = await run(['status', '--url', url, '--token', 'x-0123456789abcdef', '--http-timeout', '300']);
    const ranMs = performance.now() - started;
    assert.equal(r.status, 1);
    assert.equal(r.stderr, `qpgate status: no gateway answers at ${url} (TimeoutError): is \`qpgate serve\` running? (--url to point elsewhere)\n`);
    // Not before 300 ms of the command's life (its clock starts before the request reaches the
    // server, later on a loaded machine); and the server saw the request given up well before 5 s.
    assert.ok(ranMs >= 300, `the command ended after ${ranMs.toFixed(0)} ms, before its --http-timeout`);
    const ms = await heldFor;
    assert.ok(ms < 2500, `the request was abandoned after ${ms.toFixed(0)} ms held, not the default 5000`);

    const bad = await run(['qps', '--url', url, '--token', 'x-0123456789abcdef', '--http-timeout', '5s']);
    assert.equal(bad.status, 1);
    assert.equal(bad.stderr, 'qpgate qps: --http-timeout must be a whole number of milliseconds from 1 to 3600000, got "5s"\n');
  } finally {
    server.close();
  }
});
