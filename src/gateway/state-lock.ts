// One gateway per state.dir: an exclusive flock on <state.dir>/qpgate.lock
// (the addon's lockStateDir; Node has no flock), taken before anything is
// written there (admin.token, sessions.json, the journal) and held until the
// gateway has shut down (or the process exits: the kernel drops it, SIGKILL included). A second gateway on the same directory is refused with a
// message naming the directory and the holder's pid.
import { closeSync, mkdirSync } from 'node:fs';
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

/** The lock on one state.dir; release() closes its fd (the kernel drops the flock). */
export interface StateDirLock {
  readonly dir: string;
  release(): void;
}

/**
 * Locks `dir` (created if absent). The flock belongs to this lock's own open
 * file, so a second gateway in this same process is refused too. Throws
 * StateDirLockedError.
 */
export function lockStateDir(dir: string): StateDirLock {
  const path = resolve(dir);
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const addon = loadAddon() as unknown as { lockStateDir?: (dir: string) => number };
  if (addon.lockStateDir === undefined) throw new Error('qpgate: this build of the native addon has no lockStateDir (rebuild: npm run build:native)');
  let fd: number | undefined;
  try {
    fd = addon.lockStateDir(path);
  } catch (err) {
    if ((err as { code?: string }).code === 'ELOCKED') throw new StateDirLockedError((err as Error).message);
    throw err;
  }
  return {
    dir: path,
    release: () => {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
