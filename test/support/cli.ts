// `qpgate <args>` as a child process, as a user runs it, without blocking the
// event loop (the gateway under test may live in this process).
import { spawn } from 'node:child_process';

import { QPGATE_BIN } from './paths.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to its exit (SIGKILL after timeoutMs) and collects all it printed. */
export function runCli(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return runProgram(process.execPath, [QPGATE_BIN, ...args], timeoutMs);
}

/** Any program, the same way (a shell around the CLI, `script` for a terminal). */
export function runProgram(file: string, args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
