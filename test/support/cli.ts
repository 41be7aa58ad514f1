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

/** The CLI with its stdin kept open: the test writes lines as it goes and waits for what it prints. */
export interface LiveCli {
  send(line: string): void;
  end(): void;
  /** Resolves once `stream` has printed a line matching `pattern`; rejects after timeoutMs with all it printed. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<CliResult>;
}

export function startCli(args: string[], env: NodeJS.ProcessEnv = {}): LiveCli {
  const child = spawn(process.execPath, [QPGATE_BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const printed = { stdout: '', stderr: '' };
  const changed = new Set<() => void>();
  const on = (stream: 'stdout' | 'stderr') => (d: Buffer) => {
    printed[stream] += d.toString();
    for (const f of changed) f();
  };
  child.stdout.on('data', on('stdout'));
  child.stderr.on('data', on('stderr'));
  const exited = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, ...printed })));
  return {
    send: (line) => void child.stdin.write(`${line}\n`),
    end: () => void child.stdin.end(),
    exited,
    waitFor: (stream, pattern, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!pattern.test(printed[stream])) return;
          clearTimeout(timer);
          changed.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          changed.delete(check);
          reject(new Error(`${stream} printed no line matching ${pattern} within ${timeoutMs} ms:\n--- stdout:\n${printed.stdout}\n--- stderr:\n${printed.stderr}`));
        }, timeoutMs);
        changed.add(check);
        check();
      }),
  };
}
