// Samples a process's resident set and CPU time from /proc once a second, and
// decides whether they stayed flat: the mean of the last third of the samples
// (after a warm-up) against the mean of the first third.
import { readFileSync } from 'node:fs';

export interface ProcessSample {
  /** Seconds since sampling started. */
  t: number;
  rssKiB: number;
  /** CPU seconds (user + system) used since the previous sample, per second of wall time. */
  cpu: number;
}

export interface Flatness {
  samples: number;
  firstThird: number;
  lastThird: number;
  /** lastThird / firstThird − 1. */
  growth: number;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux (sysconf(_SC_CLK_TCK)), what /proc/<pid>/stat counts in

function cpuTicks(pid: number): number {
  // Fields after the ")" of the command name: state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

export class ProcessSampler {
  readonly samples: ProcessSample[] = [];
  readonly #timer: NodeJS.Timeout;
  readonly #start = Date.now();
  #lastTicks: number;
  #lastAt = Date.now();

  constructor(readonly pid: number, intervalMs = 1000) {
    this.#lastTicks = cpuTicks(pid);
    this.#timer = setInterval(() => this.#sample(), intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sample(): void {
    try {
      const ticks = cpuTicks(this.pid);
      const now = Date.now();
      this.samples.push({ t: (now - this.#start) / 1000, rssKiB: rssKiB(this.pid), cpu: (ticks - this.#lastTicks) / CLOCK_TICKS / ((now - this.#lastAt) / 1000) });
      this.#lastTicks = ticks;
      this.#lastAt = now;
    } catch {
      this.stop(); // the process is gone
    }
  }
}

/** First third vs last third of the samples taken `warmupS` seconds or more after the start. */
export function flatness(samples: readonly ProcessSample[], warmupS: number, value: (s: ProcessSample) => number): Flatness {
  const kept = samples.filter((s) => s.t >= warmupS).map(value);
  const third = Math.floor(kept.length / 3);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const firstThird = mean(kept.slice(0, third));
  const lastThird = mean(kept.slice(kept.length - third));
  return { samples: kept.length, firstThird, lastThird, growth: firstThird > 0 ? lastThird / firstThird - 1 : NaN };
}
