// The rdma-vm guest for a test (test/rdma-vm/README.md): whether it can run
// here, and one run of a guest script whose result is its stdout's JSON lines.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync } from 'node:fs';
import path from 'node:path';

import { REPO_ROOT } from './paths.js';

const qemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { encoding: 'utf8' }).status === 0;
const required = process.env.QPGATE_REQUIRE_IBV === '1';

/** node:test's `skip` for a guest test: a reason without qemu, unless QPGATE_REQUIRE_IBV=1 (then the test fails). */
export const guestSkip: string | false = !qemu && !required ? 'no qemu-system-x86_64 (install qemu-system-x86)' : false;

export interface GuestRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Boots the guest with `runArgs` (--veth, --netns, --env K=V ...) and runs
 * `bash <script>` in it (the harness's --timeout: timeoutSeconds). Spawned,
 * not spawnSync'ed, so the guest's output can also be appended to `logFile`
 * as it comes: a long run can be followed, and a cut one read.
 */
export async function runGuest(runArgs: string[], script: string, timeoutSeconds: number, logFile?: string): Promise<GuestRun> {
  assert.ok(qemu, 'QPGATE_REQUIRE_IBV=1 but qemu-system-x86_64 is missing');
  const args = [...runArgs, '--timeout', String(timeoutSeconds), '--', 'bash', path.join(REPO_ROOT, script)];
  const child = spawn(path.join(REPO_ROOT, 'test/rdma-vm/run'), args, { cwd: REPO_ROOT });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const keep = (into: Buffer[]) => (b: Buffer) => {
    into.push(b);
    if (logFile) appendFileSync(logFile, b);
  };
  child.stdout.on('data', keep(out));
  child.stderr.on('data', keep(err));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/**
 * runGuest, and the JSON lines the script printed. Fails the test when qemu
 * is missing or the guest run does not exit 0.
 */
export async function runGuestScript(runArgs: string[], script: string, timeoutSeconds = 900): Promise<Array<Record<string, unknown>>> {
  const run = await runGuest(runArgs, script, timeoutSeconds);
  assert.equal(run.status, 0, `the guest run failed (${run.status}):\n${run.stderr}\n${run.stdout}`);
  const lines = run.stdout.split('\n').filter((l) => l.startsWith('{'));
  assert.ok(lines.length > 0, run.stdout);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}
