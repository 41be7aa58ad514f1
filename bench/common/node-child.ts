// The Node benchmarks' server half: this same script started again as a
// second Node process under `taskset -c <cpu>`, which prints `PORT <n>` once
// it listens. Its stdin is a pipe, so the client can end it by closing stdin.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export type ServerChild = ChildProcessByStdio<Writable, Readable, null>;

export async function spawnPinnedServer(script: string, cpu: string, argv: string[], what: string): Promise<{ child: ServerChild; port: number }> {
  const child = spawn('taskset', ['-c', cpu, process.execPath, script, '--role', 'server', ...argv], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /PORT (\d+)/.exec(text);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
  return { child, port };
}
