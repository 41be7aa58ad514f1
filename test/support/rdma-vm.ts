// The rdma-vm guest for a test (test/rdma-vm/README.md): whether it can run
// here, and one run of a guest script whose result is its stdout's JSON lines.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { REPO_ROOT } from './paths.js';

const qemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { encoding: 'utf8' }).status === 0;
const required = process.env.QPGATE_REQUIRE_IBV === '1';

/** node:test's `skip` for a guest test: a reason without qemu, unless QPGATE_REQUIRE_IBV=1 (then the test fails). */
export const guestSkip: string | false = !qemu && !required ? 'no qemu-system-x86_64 (install qemu-system-x86)' : false;

/**
 * Boots the guest with `runArgs` (--veth, --netns, --env K=V ...), runs
 * `bash <script>` in it (the harness's --timeout: timeoutSeconds) and returns the JSON lines it printed. Fails the test
 * when qemu is missing or the guest run does not exit 0.
 */
export function runGuestScript(runArgs: string[], script: string, timeoutSeconds = 900): Array<Record<string, unknown>> {
  assert.ok(qemu, 'QPGATE_REQUIRE_IBV=1 but qemu-system-x86_64 is missing');
  const run = spawnSync(path.join(REPO_ROOT, 'test/rdma-vm/run'), [...runArgs, '--timeout', String(timeoutSeconds), '--', 'bash', path.join(REPO_ROOT, script)], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  assert.equal(run.status, 0, `the guest run failed (${run.status}):\n${run.stderr}\n${run.stdout}`);
  const lines = run.stdout.split('\n').filter((l) => l.startsWith('{'));
  assert.ok(lines.length > 0, run.stdout);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}
