// Benchmarks are measured, not asserted: this only proves that `npm run bench`
// still runs end to end and prints what the README quotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';

test('the benchmark runner smoke-runs every benchmark and prints its tables', () => {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/bench/run.js'), '--quick'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 600_000,
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^isal\s+4096\s/m);
  assert.match(r.stdout, /^zlib\s+4096\s/m);
  assert.match(r.stdout, /^backoff\s+16\s+\d+/m);
  assert.match(r.stdout, /^spin\s+256\s+\d+/m);
});
