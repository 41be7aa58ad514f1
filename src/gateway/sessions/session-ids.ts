// Session ids that survive restarts: (token name, session name) → u32 id,
// kept in <state.dir>/sessions.json. The order journal keys everything by
// session id (each session's app_seq, its duplicate filter), so a client that
// reconnects after a gateway restart must get the id it had: the file is
// written atomically (temporary file, fsync, rename, fsync of the directory)
// before the handshake is answered, so no client ever holds an id that a
// crash could give to someone else.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SessionRole } from './provider.js';

export interface SessionIdEntry {
  readonly id: number;
  readonly token: string;
  readonly name: string;
  /** The role it was last opened with. */
  role: SessionRole;
  readonly createdAt: string;
}

interface FileShape {
  version: 1;
  sessions: SessionIdEntry[];
}

export const SESSIONS_FILE = 'sessions.json';
const MAX_ID = 0xffffffff;

export class SessionIds {
  readonly path: string;
  readonly #byKey = new Map<string, SessionIdEntry>();
  readonly #byId = new Map<number, SessionIdEntry>();
  #last = 0;

  /** Loads <stateDir>/sessions.json if present; throws naming the file when it is not valid. */
  constructor(stateDir: string) {
    this.path = join(stateDir, SESSIONS_FILE);
    if (!existsSync(this.path)) return;
    let parsed: FileShape;
    try {
      parsed = JSON.parse(readFileSync(this.path, 'utf8')) as FileShape;
    } catch (err) {
      throw new Error(`${this.path}: not valid JSON (${(err as Error).message}); the session ids cannot be restored`);
    }
    if (parsed?.version !== 1 || !Array.isArray(parsed.sessions)) throw new Error(`${this.path}: expected {version: 1, sessions: [...]}`);
    for (const e of parsed.sessions) {
      if (!Number.isInteger(e.id) || e.id < 1 || e.id > MAX_ID || typeof e.token !== 'string' || typeof e.name !== 'string') {
        throw new Error(`${this.path}: bad entry ${JSON.stringify(e)}`);
      }
      if (this.#byId.has(e.id)) throw new Error(`${this.path}: id ${e.id} is given twice`);
      this.#byKey.set(key(e.token, e.name), e);
      this.#byId.set(e.id, e);
      this.#last = Math.max(this.#last, e.id);
    }
  }

  get(id: number): SessionIdEntry | undefined {
    return this.#byId.get(id);
  }

  find(token: string, name: string): SessionIdEntry | undefined {
    return this.#byKey.get(key(token, name));
  }

  /**
   * The id of (token, name): the existing one, or a new one persisted before
   * this returns. A changed role is persisted too.
   */
  acquire(token: string, name: string, role: SessionRole): SessionIdEntry {
    const existing = this.#byKey.get(key(token, name));
    if (existing !== undefined) {
      if (existing.role !== role) {
        existing.role = role;
        this.#persist();
      }
      return existing;
    }
    if (this.#last >= MAX_ID) throw new Error('session ids exhausted (2^32-1 sessions)');
    const entry: SessionIdEntry = { id: this.#last + 1, token, name, role, createdAt: new Date().toISOString() };
    this.#byKey.set(key(token, name), entry);
    this.#byId.set(entry.id, entry);
    try {
      this.#persist();
    } catch (err) {
      this.#byKey.delete(key(token, name));
      this.#byId.delete(entry.id);
      throw err;
    }
    this.#last = entry.id;
    return entry;
  }

  entries(): SessionIdEntry[] {
    return [...this.#byId.values()].sort((a, b) => a.id - b.id);
  }

  #persist(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const body: FileShape = { version: 1, sessions: this.entries() };
    const tmp = `${this.path}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(body, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    // The rename is durable only once the directory is.
    const dir = openSync(dirname(this.path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}

const key = (token: string, name: string): string => `${token}\u0000${name}`;
