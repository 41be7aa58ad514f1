// Opening a replay source's tick file (feeds.replay.file) safely: the file
// must be in the replay directory (feeds.replay.dir), reached without a path
// or a symbolic link out of it, and be a regular file. It is opened with
// O_NOFOLLOW (the last component may not be a link) and O_NONBLOCK (a FIFO
// or device cannot hold the open), checked with fstat, and read with
// fs/promises: nothing here blocks the event loop.
import { constants } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parseTickFile, type TickFile } from './recording.js';

/** A replay file refused: outside the directory, not a regular file, unreadable, not a tick file. */
export class ReplayFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayFileError';
  }
}

const inside = (root: string, path: string): boolean => {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
};

/** Reads `file` (relative to `dir`, or absolute within it) as a tick file. Throws ReplayFileError. */
export async function readReplayFile(dir: string, file: string): Promise<TickFile> {
  const root = await real(dir, `the replay directory ${dir}`);
  const wanted = resolve(root, file);
  if (!inside(root, wanted)) throw new ReplayFileError(`replay file ${JSON.stringify(file)} is outside the replay directory ${root} (feeds.replay.dir)`);
  const parent = await real(dirname(wanted), `replay file ${JSON.stringify(file)}`);
  if (parent !== root && !inside(root, parent)) {
    throw new ReplayFileError(`replay file ${JSON.stringify(file)} leaves the replay directory ${root} through a symbolic link`);
  }
  const path = join(parent, basename(wanted));
  const handle = await openNoFollow(path, file);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ReplayFileError(`replay file ${JSON.stringify(file)} is not a regular file (${kindOf(st)})`);
    const data = await handle.readFile();
    try {
      return parseTickFile(data, path);
    } catch (err) {
      throw new ReplayFileError((err as Error).message);
    }
  } finally {
    await handle.close();
  }
}

async function real(path: string, what: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (err) {
    throw new ReplayFileError(`${what}: ${describeErrno(err)}`);
  }
}

async function openNoFollow(path: string, file: string): Promise<FileHandle> {
  try {
    return await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new ReplayFileError(`replay file ${JSON.stringify(file)} is a symbolic link; replay files must be regular files`);
    throw new ReplayFileError(`replay file ${JSON.stringify(file)}: ${describeErrno(err)}`);
  }
}

function describeErrno(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file or directory';
  if (e.code === 'EACCES') return 'permission denied';
  return e.message;
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}
