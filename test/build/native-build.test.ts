import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
