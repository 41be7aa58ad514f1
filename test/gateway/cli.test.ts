import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QPGATE_BIN, REPO_ROOT } from '../support/paths.js';
import { startGatewayProcess } from '../support/gateway-process.js';

const run = (args: string[], env: NodeJS.ProcessEnv = {}, timeout = 20_000) =>
  spawnSync(process.execPath, [QPGATE_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout });

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

test('usage errors exit 64 (EX_USAGE): an unknown command, an unknown option, a missing argument', () => {
  const r = run(['frobnicate']);
  assert.equal(r.status, 64);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
  assert.equal(run(['status', '--frob']).status, 64);
  assert.equal(run(['record']).status, 64, '--out is required');
  assert.equal(run(['--help']).status, 0);
});

test("a client's --backend, --device, --ib-port and --gid-index: what is missing or misplaced is named, nothing is opened", { timeout: 900_000 }, () => {
  const url = ['--url', 'http://127.0.0.1:9', '--token', 't'];  // nothing listens: the flags fail first
  const cases: Array<[string[], RegExp]> = [
    [['order', ...url, '--name', 'n', '--account', '1', '--backend', 'ibv'], /^qpgate order: --backend ibv needs --device, the RDMA device \(ibv_devices lists them\)$/m],
    [['risk', ...url, '--name', 'n', '--account', '1', '--device', 'rxe0'], /^qpgate risk: --device, --ib-port and --gid-index are for --backend ibv \(the soft device is on --address\)$/m],
    [['subscribe', ...url, '--ib-port', '1'], /^qpgate subscribe: --device, --ib-port and --gid-index are for --backend ibv/m],
    [['order', ...url, '--name', 'n', '--account', '1', '--backend', 'ibv', '--device', 'rxe0', '--ib-port', '0'], /^qpgate order: --ib-port must be a port number of the device \(1\.\.255\), got "0"$/m],
    [['subscribe', ...url, '--backend', 'ibv', '--device', 'rxe0', '--gid-index', '300'], /^qpgate subscribe: --gid-index must be a GID table entry \(0\.\.255\), got "300"$/m],
    [['order', ...url, '--name', 'n', '--account', '1', '--backend', 'ibv', '--device', 'rxe0', '--alternate-address', '127.0.0.9'], /^qpgate order: --alternate-address is for --backend soft: the ibv backend has no automatic path migration \(Linux's RDMA core refuses an alternate path on a RoCE port\); a second link is --alternate-device$/m],
    [['pingpong', '--backend', 'ibv'], /^qpgate pingpong: --backend ibv needs --device/m],
    [['pingpong', '--backend', 'ibv', '--device', 'rxe0', '-a', '127.0.0.2'], /^qpgate pingpong: --address is for --backend soft/m],
    [['pingpong'], /^qpgate pingpong: --address is needed for the soft device/m],
  ];
  for (const [args, message] of cases) {
    const r = run(args, {}, 120_000);  // eight starts of the CLI: a loaded host takes its time
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
  }
  assert.equal(run(['order', ...url, '--name', 'n', '--backend', 'rdma'], {}, 120_000).status, 64, '--backend takes soft or ibv');
});

test("a client's ibv device that cannot be opened exits 2 with one line naming the device, the port and the fix", { timeout: 300_000 }, () => {
  const url = ['--url', 'http://127.0.0.1:9', '--token', 't'];  // the device is opened before the handshake
  for (const args of [
    ['order', ...url, '--name', 'n', '--account', '1'],
    ['pingpong', '127.0.0.1'],
  ]) {
    const r = run([...args, '--backend', 'ibv', '--device', 'qpgate_nodev0', '--ib-port', '2'], {}, 120_000);
    assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`^qpgate ${args[0]}: cannot open the ibv device qpgate_nodev0 port 2: .*\\((set --device to one of the devices listed|this kernel has no RDMA: load a driver, .*)\\)$`));
  }
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

test('a device that cannot be opened exits 2 with one line naming the device and the fix', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-cli-dev-'));
  const r = run(['serve', '--set', 'control.port=0', '--set', `state.dir=${dir}`, '--set', 'backend.kind=ibv', '--set', 'backend.device=qpgate_nodev0']);
  assert.equal(r.status, 2, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('qpgate: '));
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^qpgate: cannot open the ibv device qpgate_nodev0: (.*\(set backend\.device to one of the devices listed\)|.*\(ENOSYS\) \(this kernel has no RDMA: load a driver, .*\))$/);
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
  assert.doesNotMatch(gw.output(), /Warning|FSTDEP|DEP0\d+/, 'no deprecation or other warning at start or stop');
});

test('a second SIGTERM during the orderly shutdown exits at once (143), saying so', async () => {
  // An order handler plug-in whose close() never returns holds the shutdown.
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-stuck-'));
  const module = join(dir, 'stuck-handler.mjs');
  writeFileSync(module, "export function createOrderHandler() { return { name: 'stuck', onEvent() {}, close: () => new Promise(() => {}) }; }\n");
  const gw = await startGatewayProcess(['--set', `orders.handlers=[{module: "${module}"}]`]);
  gw.child.kill('SIGTERM');
  while (!gw.output().includes('"shutting down"')) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(gw.child.exitCode, null, 'the stuck handler holds the orderly shutdown');
  gw.child.kill('SIGTERM');
  assert.equal(await gw.exited, 143, gw.output());
  assert.match(gw.output(), /second signal during shutdown: exiting now/);
});

test('a plug-in whose close() hangs delays the shutdown by at most 5 s, then it goes on and exits 0', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-stuck-'));
  const module = join(dir, 'stuck-handler.mjs');
  writeFileSync(module, "export function createOrderHandler() { return { name: 'stuck', onEvent() {}, close: () => new Promise(() => {}) }; }\n");
  const gw = await startGatewayProcess(['--set', `orders.handlers=[{module: "${module}"}]`]);
  const t0 = Date.now();
  gw.child.kill('SIGTERM');
  assert.equal(await gw.exited, 0, gw.output());
  const took = Date.now() - t0;
  assert.ok(took >= 4500 && took < 15_000, `shutdown took ${took} ms`);
  assert.match(gw.output(), /order handler close\(\) did not finish in time; shutdown goes on/);
});

test('qpgate config prints every key with its value and origin, token secrets redacted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-config-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'log: {level: debug}\ncontrol:\n  tokens:\n    - {name: ops, scope: admin, token: secret-token-0123456789}\n');
  const r = run(['config', '--config', file, '--set', 'engine.idleStrategy=spin'], { QPGATE_CONTROL__PORT: '8123' });
  assert.equal(r.status, 0, r.stderr);
  const line = (key: string) => r.stdout.split('\n').find((l) => l.startsWith(`${key} `));
  assert.match(line('engine.idleStrategy') ?? '', /"spin"\s+--set engine\.idleStrategy=spin$/);
  assert.match(line('control.port') ?? '', /8123\s+environment QPGATE_CONTROL__PORT$/);
  assert.match(line('log.level') ?? '', new RegExp(`"debug"\\s+${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`));
  assert.match(line('control.host') ?? '', /"127\.0\.0\.1"\s+config\/default\.yaml$/);
  assert.ok(!r.stdout.includes('secret-token-0123456789'), 'the token secret is not printed');
  assert.match(line('control.tokens') ?? '', /<redacted>/);
  // A long value wraps inside its column: the origin stays on the key's line, in the origin column.
  const lines = r.stdout.split('\n');
  const channels = lines.findIndex((l) => l.startsWith('feeds.channels '));
  assert.match(lines[channels] ?? '', /config\/default\.yaml$/);
  assert.match(lines[channels + 1] ?? '', /^ {20,}\S/, 'the rest of the value is on the next line, under the value column');
  assert.equal(lines[channels]!.indexOf('config/default.yaml'), line('control.host')!.indexOf('config/default.yaml'));

  const json = run(['config', '--json', '--set', 'feeds.enabled=false']);
  assert.equal(json.status, 0, json.stderr);
  const keys = JSON.parse(json.stdout) as Array<{ key: string; value: unknown; origin: string }>;
  assert.deepEqual(keys.find((k) => k.key === 'feeds.enabled'), { key: 'feeds.enabled', value: false, origin: '--set feeds.enabled=false' });
  assert.ok(keys.some((k) => k.origin === 'built-in default'), 'keys only the schema defaults are marked so');

  const bad = run(['config', '--set', 'engine.idleStrategy=fast']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /engine\.idleStrategy \(from --set engine\.idleStrategy=fast\): expected one of/);
});

test('qpgate completion bash completes commands and each command\'s own options in a real bash', () => {
  const script = run(['completion', 'bash']);
  assert.equal(script.status, 0, script.stderr);
  const file = join(mkdtempSync(join(tmpdir(), 'qpgate-completion-')), 'qpgate.bash');
  writeFileSync(file, script.stdout);
  const complete = (words: string[]) => {
    const r = spawnSync(
      'bash',
      ['-c', `source "${file}"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _qpgate; printf '%s\\n' "\${COMPREPLY[@]}"`],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split('\n').filter(Boolean).sort();
  };
  assert.deepEqual(complete(['qpgate', 'su']), ['subscribe']);
  assert.deepEqual(complete(['qpgate', 'co']), ['completion', 'config']);
  assert.deepEqual(complete(['qpgate', 'subscribe', '--co']), ['--config', '--count']);
  assert.ok(complete(['qpgate', 'risk', '--']).includes('--kill'));
  assert.ok(!complete(['qpgate', 'serve', '--']).includes('--kill'), 'options are per command');
  assert.equal(run(['completion', 'fish']).status, 64);
});
