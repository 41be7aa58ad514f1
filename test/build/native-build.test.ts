import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';

function configure(extra: string[]): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-cmake-'));
  try {
    const r = spawnSync('cmake', ['-S', join(REPO_ROOT, 'native'), '-B', dir, '-G', 'Ninja', ...extra], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('without libibverbs the native build configures with the soft backend alone and says so', () => {
  const r = configure(['-DQPGATE_WITH_IBVERBS=OFF']);
  assert.equal(r.status, 0, r.output);
  assert.match(r.output, /qpgate: libibverbs disabled \(QPGATE_WITH_IBVERBS=OFF\): building the soft backend only/);
});

test('the native build reports which CRC-32 library the ICRC uses and where buffers are placed', () => {
  const r = configure([]);
  assert.equal(r.status, 0, r.output);
  assert.match(r.output, /qpgate: ICRC CRC-32 from (isal|zlib)/);
  assert.match(r.output, /qpgate: libnuma (found|NOT found)/);
});

test('the addon reports the optional features it was built with', async () => {
  const { loadAddon } = await import('../../src/native/addon.js');
  const { features } = loadAddon();
  assert.equal(typeof features.ibverbs, 'boolean');
  assert.equal(typeof features.numa, 'boolean');
  assert.match(features.crc ?? '', /^(isal|zlib)$/);
});

// A lazily bound function costs a dynamic symbol lookup on its first call,
// which would land in the engine thread's first order (addon CMakeLists.txt).
test('the addon is bound at load (BIND_NOW, full RELRO), so no first call on the engine thread resolves a symbol', () => {
  const addon = join(REPO_ROOT, 'native/build/Release/qpgate.node');
  const r = spawnSync('readelf', ['--dynamic', '--program-headers', '--wide', addon], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\(FLAGS\)\s+BIND_NOW/, r.stdout);
  assert.match(r.stdout, /\(FLAGS_1\)\s+Flags: NOW/, r.stdout);
  assert.match(r.stdout, /GNU_RELRO/, r.stdout);
});

// Air-gapped hosts have an npm and a Debian mirror only (issue 12): cmake-js
// must take the Node-API headers from the node-api-headers package, not
// download Node's distribution. Configured in a network namespace of its own
// (no route anywhere), with npm's nodedir unset and an empty HOME (no
// ~/.cmake-js cache): a download attempt fails the configure.
test('the addon configures with no network and no nodedir: its headers are the node-api-headers package', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-offline-'));
  try {
    mkdirSync(join(dir, 'home'));
    // The machine's npm settings, less nodedir (the workaround that hid the download).
    const own = join(homedir(), '.npmrc');
    const userconfig = (existsSync(own) ? readFileSync(own, 'utf8') : '').replace(/^nodedir\s*=.*$/gm, '');
    writeFileSync(join(dir, 'npmrc'), userconfig);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: join(dir, 'home'), npm_config_userconfig: join(dir, 'npmrc') };
    delete env['npm_config_nodedir'];
    const cmakeJs = join(REPO_ROOT, 'node_modules/cmake-js/bin/cmake-js');
    const r = spawnSync('unshare', ['--net', process.execPath, cmakeJs, 'configure', '-d', 'native', '-O', join(dir, 'build')], {
      cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 170_000,
    });
    assert.equal(r.error, undefined, `unshare --net (needs root): ${r.error?.message}`);
    const output = `${r.stdout}${r.stderr}`;
    assert.doesNotMatch(output, /Downloading distribution files/, output);
    assert.equal(r.status, 0, output);
    const inc = /^CMAKE_JS_INC:\w+=(.*)$/m.exec(readFileSync(join(dir, 'build/CMakeCache.txt'), 'utf8'))?.[1] ?? '';
    assert.match(inc, /node_modules\/node-api-headers\/include/);
    assert.doesNotMatch(inc, /\.cmake-js|\/usr\/include\/node/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
