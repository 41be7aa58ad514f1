// One gateway per state.dir: an exclusive flock on <state.dir>/qpgate.lock
// (the addon's lockStateDir; Node has no flock), taken before anything is
// written there (admin.token, sessions.json, the journal) and held until the
// process exits. A second gateway on the same directory is refused with a
// message naming the directory and the holder's pid.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadAddon } from '../native/addon.js';

export const STATE_LOCK_FILE = 'qpgate.lock';

/** Another process holds the state.dir lock (the CLI exits 2). */
export class StateDirLockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateDirLockedError';
  }
}

// Directories this process has locked: the fd stays open for the process's life.
const held = new Map<string, number>();

/** Locks `dir` (created if absent) for this process; idempotent. Throws StateDirLockedError. */
export function lockStateDir(dir: string): void {
  const path = resolve(dir);
  if (held.has(path)) return;
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const addon = loadAddon() as unknown as { lockStateDir?: (dir: string) => number };
  if (addon.lockStateDir === undefined) throw new Error('qpgate: this build of the native addon has no lockStateDir (rebuild: npm run build:native)');
  try {
    held.set(path, addon.lockStateDir(path));
  } catch (err) {
    if ((err as { code?: string }).code === 'ELOCKED') throw new StateDirLockedError((err as Error).message);
    throw err;
  }
}
