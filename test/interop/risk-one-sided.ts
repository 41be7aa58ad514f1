// The proof that risk atomics on ibv run no gateway code (issue 15 item 4),
// run in the guest by clients-ibv-guest.sh: a RiskClient on rxe_b connects
// to the gateway on rxe_a, then the gateway process is stopped (SIGSTOP:
// every thread, the engine's busy-polling one included, in state T). With
// nothing of the gateway running, a FETCH_ADD on account 1's credit limit
// and READs of the word still complete: rxe_a's responder serves them from
// the registered page. The gateway's durable copy of the word (written by its
// engine when it journals a change, docs/protocol.md §3.8) stays at the old
// value until the process is continued (SIGCONT), and then catches up: the
// engine saw the change only afterwards. On the soft backend the same
// atomic would wait for the stopped engine and fail with RETRY_EXC.
// The limit is put back at the end. Prints one JSON line; clients-ibv.test.ts asserts.
//
//   node dist/test/interop/risk-one-sided.js URL TOKEN DEVICE GATEWAY_PID
import { readdirSync, readFileSync } from 'node:fs';

import { RiskClient } from '../../src/orders/risk-client.js';

const [url, token, device, pidText] = process.argv.slice(2) as [string, string, string, string];
if (url === undefined) {
  // `node --test dist/test/` runs every file under test/ without arguments.
  console.log('# risk-one-sided: the guest side of clients-ibv.test.ts (run with URL TOKEN DEVICE GATEWAY_PID); nothing to do here');
  process.exit(0);
}
const pid = Number(pidText);
const ACCOUNT = 1n;

/** Each thread of the gateway process and its state letter (/proc/PID/task/TID/stat: the field after the name). */
function threadStates(): Record<string, string> {
  const states: Record<string, string> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    states[`${tid} ${name}`] = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  }
  return states;
}

async function whenAllStopped(): Promise<Record<string, string>> {
  for (let i = 0; i < 500; i++) {
    const states = threadStates();
    if (Object.values(states).every((s) => s === 'T')) return states;
    await new Promise((r) => setTimeout(r, 10));
  }
  return threadStates();
}

const risk = await RiskClient.connect({ url, token, name: 'ibv-one-sided', accounts: [ACCOUNT], device: { kind: 'ibv', name: device }, timeoutMs: 60_000 });
const limit = await risk.read(ACCOUNT, 'creditLimit');
process.kill(pid, 'SIGSTOP');
let stopped: Record<string, unknown>;
try {
  const threads = await whenAllStopped();
  const t0 = performance.now();
  const old = await risk.fetchAdd(ACCOUNT, 'creditLimit', 1n);
  const now = await risk.read(ACCOUNT, 'creditLimit');
  const durable = await risk.read(ACCOUNT, 'durableCreditLimit');
  stopped = { threads, old, now, durable, ms: performance.now() - t0, stillStopped: Object.values(threadStates()).every((s) => s === 'T') };
} finally {
  process.kill(pid, 'SIGCONT');
}
let caughtUp: string;
try {
  await risk.whenDurable(ACCOUNT, 'creditLimit', limit + 1n, 60_000);
  caughtUp = 'durable';
} catch (e) {
  caughtUp = (e as Error).message;
}
await risk.fetchAdd(ACCOUNT, 'creditLimit', -1n);
const restored = await risk.read(ACCOUNT, 'creditLimit');
await risk.close();
const json = (v: unknown) => JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
console.log(json({ limit, stopped, caughtUp, restored }));
