// Runs `qpgate serve` as a child process, the way a user does, on a free port
// and a private state directory, and waits until its control plane answers.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QPGATE_BIN } from './paths.js';
import { freeLoopbackAddress } from './loopback.js';

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  stateDir: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** How to run `qpgate`: this checkout's bin by default, or e.g. `npx qpgate` in an installed project. */
export interface GatewayLaunch {
  command: string;
  argv: string[];
  cwd?: string;
  /** How long `qpgate ready` may take (default 15 s; node under qemu's TCG starts far slower). */
  readyTimeoutMs?: number;
}

export async function startGatewayProcess(
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
  launch: GatewayLaunch = { command: process.execPath, argv: [QPGATE_BIN] },
): Promise<GatewayProcess> {
  const stateDir = mkdtempSync(join(tmpdir(), 'qpgate-state-'));
  // The gateway opens a soft device on backend.address:4791: one address per gateway.
  const address = args.some((a) => a.startsWith('backend.address=')) ? [] : ['--set', `backend.address=${freeLoopbackAddress()}`];
  const child = spawn(launch.command, [...launch.argv, 'serve', '--port', '0', '--set', `state.dir=${stateDir}`, ...address, ...args], {
    cwd: launch.cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const readyMs = launch.readyTimeoutMs ?? 15_000;
    const timer = setTimeout(() => reject(new Error(`gateway did not become ready in ${readyMs / 1000} s:\n${out}`)), readyMs);
    const onData = (): void => {
      // Whole lines only: a chunk may end inside the ready line (parsing half of it threw, after the timer was cleared).
      for (const line of out.split('\n').slice(0, -1)) {
        if (!line.includes('"qpgate ready"')) continue;
        let url: string;
        try {
          url = (JSON.parse(line) as { url: string }).url;
        } catch {
          continue; // stderr interleaved into the line: keep waiting (the timer still runs)
        }
        clearTimeout(timer);
        resolve(url);
        return;
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before it was ready:\n${out}`));
    });
  });
  return { child, url, stateDir, output: () => out, exited };
}
