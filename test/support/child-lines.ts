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

/** The parent's reader of a child's lines; a child that ended early throws with `context()` (the gateway's output, say). */
export function childLines(child: ChildProcess, context: () => string): () => Promise<Record<string, any>> {
  const out = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return async () => {
    const r = await out.next();
    if (r.done) throw new Error(`the child process ended early\n${context()}`);
    return JSON.parse(r.value as string) as Record<string, any>;
  };
}
