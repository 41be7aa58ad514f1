// The line protocol between a namespace test and the child process it runs
// in the other namespace (test/support/failover-client.ts,
// test/support/feed-failover-subscriber.ts): the child takes its arguments
// as one JSON argv, says each phase as one JSON line on stdout, and waits
// for a line on stdin before the next.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What every such child is given: the gateway's control plane, its token and session name, and its device's two addresses. */
export interface TwoLinkClientArgs {
  url: string;
  token: string;
  name: string;
  address: string;
  alternateAddress: string;
}

/** The child's JSON argument; without one (`node --test dist/test/` runs every file) it says so and exits 0. */
export function childArgs<T>(who: string, runBy: string): T {
  if (process.argv[2] === undefined) {
    console.log(`# ${who}: ${runBy} runs it with its JSON arguments; nothing to do here`);
    process.exit(0);
  }
  return JSON.parse(process.argv[2]) as T;
}

/** The parent's lines on stdin, one per next(). */
export function parentLines(): AsyncIterator<string> {
  return createInterface({ input: process.stdin })[Symbol.asyncIterator]();
}

/** One JSON line to the parent (bigints as numbers). */
export function say(o: object): void {
  process.stdout.write(`${JSON.stringify(o, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))}\n`);
}

/**
 * The parent's reader of a child's lines; a child that ended early, or said
 * nothing for `timeoutMs`, throws with `context()` (the gateway's output,
 * say). The timeout is what ends a test whose child waits for ever (on an
 * answer that never comes): node:test's own timeout marks such a test failed
 * but leaves it awaiting, so its cleanup never runs and the process never exits.
 */
export function childLines(child: ChildProcess, context: () => string, timeoutMs = 90_000): () => Promise<Record<string, any>> {
  const out = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the child process said nothing for ${timeoutMs} ms\n${context()}`)), timeoutMs);
    });
    try {
      const r = await Promise.race([out.next(), silent]);
      if (r.done) throw new Error(`the child process ended early\n${context()}`);
      return JSON.parse(r.value as string) as Record<string, any>;
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * `total` calls of `one` with `window` of them under way at once, `onAnswer(k)`
 * after the k-th settles: the stream a parent cuts a link under. Returns the
 * longest wait between two answers (the stall of a failover).
 */
export async function streamInFlight(total: number, window: number, one: () => Promise<void>, onAnswer: (answered: number) => void): Promise<number> {
  let started = 0;
  let answered = 0;
  let last = performance.now();
  let longest = 0;
  const keepGoing = async (): Promise<void> => {
    while (started < total) {
      started++;
      await one();
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      onAnswer(++answered);
    }
  };
  await Promise.all(Array.from({ length: window }, keepGoing));
  return longest;
}
