// Session ids that survive restarts: (token name, session name) → u32 id,
// kept in <state.dir>/sessions.json. The order journal keys everything by
// session id (each session's app_seq, its duplicate filter), so a client that
// reconnects after a gateway restart must get the id it had: acquire()
// resolves only once a write that holds the id is durable (temporary file,
// fsync, rename, fsync of the directory), so no client ever holds an id that a
// crash could give to someone else.
//
// A name is never forgotten: its id keys what the journal holds for it —
// its app_seqs and the answers its client may still ask for with Hello
// (cancel-on-disconnect's CancelAcks, fills of orders left resting), and the
// client order ids it may not use again. The gateway cannot know that a
// client is done with a name (a Hello acknowledges answers only up to the
// next close, whose CancelAcks are new ones), and ids are never reused, so
// forgetting a name would only cut its client off from what it is owed. The
// file is bounded instead: control.sessions.maxNamesPerToken names per
// token (the sessions route refuses a new name past it with 429), over the
// configured tokens.
//
// The writes are off the event loop (fs/promises, on libuv's pool) and
// coalesced: while one write is in flight, every change made meanwhile waits
// for the next one, so N new names opened together cost two writes, not N.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SessionRole } from '../../common/session-provider.js';

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
  readonly #namesOf = new Map<string, number>();
  #last = 0;
  // Changes (#version) and what is known on disk (#durable); acquire() waiters by version.
  #version = 0;
  #durable = 0;
  #writing = false;
  #writes = 0;
  #waiters: Array<{ version: number; resolve: () => void; reject: (err: Error) => void }> = [];

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
      this.#add(e);
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
   * The id of (token, name): the existing one, or a new one; resolves once it
   * is durable in sessions.json. A changed role is persisted too. Rejects (and
   * forgets a new name) when the file cannot be written.
   */
  async acquire(token: string, name: string, role: SessionRole): Promise<SessionIdEntry> {
    const existing = this.#byKey.get(key(token, name));
    if (existing !== undefined) {
      if (existing.role !== role) {
        existing.role = role;
        await this.#persist();
      } else {
        await this.flush();  // its first write may still be in flight (the same name opened twice at once)
      }
      return existing;
    }
    if (this.#last >= MAX_ID) throw new Error('session ids exhausted (2^32-1 sessions)');
    const entry: SessionIdEntry = { id: ++this.#last, token, name, role, createdAt: new Date().toISOString() };
    this.#add(entry);
    try {
      await this.#persist();
    } catch (err) {
      if (this.#byId.get(entry.id) === entry) {
        this.#byKey.delete(key(token, name));
        this.#byId.delete(entry.id);
        this.#namesOf.set(token, this.names(token) - 1);
      }
      throw err;
    }
    return entry;
  }

  /** The names `token` has used (each kept for good). */
  names(token: string): number {
    return this.#namesOf.get(token) ?? 0;
  }

  #add(e: SessionIdEntry): void {
    this.#byKey.set(key(e.token, e.name), e);
    this.#byId.set(e.id, e);
    this.#namesOf.set(e.token, this.names(e.token) + 1);
  }

  entries(): SessionIdEntry[] {
    return [...this.#byId.values()].sort((a, b) => a.id - b.id);
  }

  /** Writes made so far (for tests and the metrics: coalescing at work). */
  get writes(): number {
    return this.#writes;
  }

  /** Resolves once every change made so far is durable. */
  flush(): Promise<void> {
    if (this.#durable >= this.#version) return Promise.resolve();
    const version = this.#version;
    return new Promise<void>((resolve, reject) => this.#waiters.push({ version, resolve, reject }));
  }

  // A change: resolves when a write that includes it (begun after it) is durable.
  #persist(): Promise<void> {
    const version = ++this.#version;
    const done = new Promise<void>((resolve, reject) => this.#waiters.push({ version, resolve, reject }));
    this.#kick();
    return done;
  }

  // One write at a time, of everything changed until it begins.
  #kick(): void {
    if (this.#writing || this.#durable >= this.#version) return;
    const version = this.#version;
    const text = `${JSON.stringify({ version: 1, sessions: this.entries() } satisfies FileShape, null, 2)}\n`;
    this.#writing = true;
    writeDurably(this.path, text).then(
      () => {
        this.#durable = version;
        this.#settle(version, undefined);
      },
      (err: unknown) => this.#settle(version, err instanceof Error ? err : new Error(String(err))),
    ).finally(() => {
      this.#writes++;
      this.#writing = false;
      this.#kick();
    });
  }

  #settle(upTo: number, err: Error | undefined): void {
    const due = this.#waiters.filter((w) => w.version <= upTo);
    this.#waiters = this.#waiters.filter((w) => w.version > upTo);
    for (const w of due) {
      if (err) w.reject(new Error(`${this.path}: cannot persist the session ids: ${err.message}`));
      else w.resolve();
    }
    // A failed write leaves its changes unwritten: the next change writes them again.
    if (err) this.#durable = Math.max(this.#durable, upTo);
  }
}

/** Atomic and durable: a temporary file, fsync, rename over `path`, fsync of the directory. */
async function writeDurably(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp`;
  const file = await open(tmp, 'w', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  // The rename is durable only once the directory is.
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

const key = (token: string, name: string): string => `${token}\u0000${name}`;
