import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { QPGATE_BIN, REPO_ROOT } from '../support/paths.js';
import { startGatewayProcess } from '../support/gateway-process.js';

const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [QPGATE_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });

test('qpgate --version prints the package version', () => {
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const r = run(['--version']);
  assert.equal(r.status, 0);
  assert.equal(r.stdout.trim(), version);
});

test('qpgate --help tells a newcomer how to start and lists serve', () => {
  const r = run(['--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /qpgate serve/);
  assert.match(r.stdout, /serve \[options\]/);
});

test('qpgate serve --help documents the overrides and the environment', () => {
  const r = run(['serve', '--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--set <key=value>/);
  assert.match(r.stdout, /QPGATE_<SECTION>__<KEY>/);
});

test('an unknown command exits non-zero', () => {
  const r = run(['frobnicate']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
});

test('a bad config value exits 2 naming the key and what was expected', () => {
  const r = run(['serve', '--set', 'engine.idleStrategy=fast']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /engine\.idleStrategy .*expected one of 'auto', 'spin', 'yield', 'backoff', got "fast"/);
});

test('a bad environment override exits 2 naming the variable', () => {
  const r = run(['serve'], { QPGATE_CONTROL__PORT: 'eighty' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /control\.port \(from environment QPGATE_CONTROL__PORT\): expected integer/);
});

test('qpgate serve starts on the embedded default, answers /healthz, and exits 0 on SIGTERM', async () => {
  const gw = await startGatewayProcess();
  try {
    const res = await fetch(`${gw.url}/healthz`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { status: string };
    assert.equal(body.status, 'ok');
    assert.match(gw.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    // No token was configured: one was generated, readable only by this user.
    const mode = statSync(join(gw.stateDir, 'admin.token')).mode & 0o777;
    assert.equal(mode, 0o600);
  } finally {
    gw.child.kill('SIGTERM');
  }
  assert.equal(await gw.exited, 0);
  assert.match(gw.output(), /"shutting down".*|"reason":"SIGTERM"/);
});
