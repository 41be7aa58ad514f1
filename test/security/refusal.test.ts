// security.requireEncryption on a real gateway process (the host kernel has
// no ESP, and no xfrm policy: the case a forgotten policy leaves). What a user
// relies on: a session from a peer no policy covers is refused before its QP
// exists, with one message naming the peer and the fix, counted by reason;
// /v1/device and `qpgate status` say what is (not) protected; a feed group no
// policy covers and a missing key file stop the start at exit 2, one line.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { runCli, runProgram } from '../support/cli.js';
import { QPGATE_BIN } from '../support/paths.js';

// A start takes seconds on a loaded machine (2 shared CPUs and a TCG guest): the ready wait is no timing assertion.
const LAUNCH = { command: process.execPath, argv: [QPGATE_BIN], readyTimeoutMs: 120_000 };

const VERIFY = ['--set', 'security.requireEncryption=true', '--set', 'security.ipsec.mode=verify'];
let gw: GatewayProcess;
let token: string;

before(async () => {
  gw = await startGatewayProcess([...VERIFY, '--set', 'feeds.enabled=false'], {}, LAUNCH);
  token = readFileSync(join(gw.stateDir, 'admin.token'), 'utf8').trim();
});
after(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
});

const get = async (path: string): Promise<Response> => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

test('a trading session from a peer no ESP policy covers is refused (403) with the peer and the fix, counted, and never opened', async () => {
  const res = await fetch(`${gw.url}/v1/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role: 'trading', name: 'clear', qpn: 0x1234, psn: 1, gid: '::ffff:127.0.0.9', mtu: 1024, accounts: ['1'] }),
  });
  const body = (await res.json()) as { error: string; message: string };
  assert.equal(res.status, 403, JSON.stringify(body));
  assert.match(
    body.message,
    /^trading session "clear" from 127\.0\.0\.9: refused, no xfrm policy \(dir out\) covers UDP 4791 to 127\.0\.0\.9; nothing was sent\. Install an ESP transport policy for UDP between 127\.\d+\.\d+\.\d+ and 127\.0\.0\.9 \(ip xfrm policy, or your IKE daemon\)$/,
  );
  const sessions = (await (await get('/v1/sessions')).json()) as { sessions: unknown[] };
  assert.deepEqual(sessions.sessions, []);
  const metrics = await (await get('/metrics')).text();
  assert.match(metrics, /^qpgate_security_refusals_total\{reason="no_policy"\} 1$/m);
});

test('/v1/device and `qpgate status` report the mode, the requirement and the peers checked', async () => {
  const device = (await (await get('/v1/device')).json()) as { security: { requireEncryption: boolean; mode: string; algorithm: string; peers: Array<{ address: string; covered: boolean }> } };
  assert.equal(device.security.requireEncryption, true);
  assert.equal(device.security.mode, 'verify');
  assert.equal(device.security.algorithm, 'esp rfc4106(gcm(aes)) transport');
  assert.deepEqual(device.security.peers.map((p) => [p.address, p.covered]), [['127.0.0.9', false]]);
  const r = await runCli(['status', '--url', gw.url, '--token', token]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Encryption: esp rfc4106\(gcm\(aes\)\) transport \(verify\), required$/m);
  assert.match(r.stdout, /^\tPeer 127\.0\.0\.9: NOT covered \(no xfrm policy \(dir out\) covers UDP 4791 to 127\.0\.0\.9\)$/m);
});

const serveOnce = (args: string[]) => runProgram(QPGATE_BIN, ['serve', '--port', '0', '--set', `state.dir=${join(gw.stateDir, `bad-${Math.random()}`)}`, '--set', 'backend.address=127.0.0.93', ...args]);
const qpgateLines = (out: string) => out.split('\n').filter((l) => l.startsWith('qpgate: '));

test('a feed group no ESP policy covers stops the start at exit 2 with one line, before the feed sends', async () => {
  const r = await serveOnce(VERIFY);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.deepEqual(qpgateLines(r.stderr), [
    'qpgate: feed channel 1 group 239.77.0.1: refused, no xfrm policy (dir out) covers UDP 4791 to 239.77.0.1; nothing was sent. ' +
      'Install an ESP transport policy for UDP between 127.0.0.93 and 239.77.0.1 (ip xfrm policy, or your IKE daemon)',
  ]);
  assert.doesNotMatch(r.stdout + r.stderr, /qpgate ready/);
});

test('a missing key file stops the start at exit 2 with one line naming the key and the file', async () => {
  const missing = join(gw.stateDir, 'absent.key');
  const r = await serveOnce(['--set', 'security.ipsec.mode=keys', '--set', `security.ipsec.peers=[{"address":"127.0.0.94","out":{"spi":4097,"keyFile":"${missing}"},"in":{"spi":4098,"keyFile":"${missing}"}}]`]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.deepEqual(qpgateLines(r.stderr), [`qpgate: security.ipsec.peers.0.out.keyFile: cannot read ${missing}: ENOENT`]);
});
