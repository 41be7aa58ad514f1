// Samples a process's resident set and CPU time from /proc once a second, and
// decides whether they stayed flat: the mean of the last third of the samples
// (after a warm-up) against the mean of the first third.
import { readFileSync } from 'node:fs';

export interface ProcessSample {
  /** Seconds since sampling started. */
  t: number;
  rssKiB: number;
  /** RssAnon / RssFile / RssShmem of /proc/<pid>/status: what the resident set is made of. */
  anonKiB: number;
  fileKiB: number;
  shmemKiB: number;
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

function residentKiB(pid: number): Pick<ProcessSample, 'rssKiB' | 'anonKiB' | 'fileKiB' | 'shmemKiB'> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) : NaN;
  };
  return { rssKiB: kib('VmRSS'), anonKiB: kib('RssAnon'), fileKiB: kib('RssFile'), shmemKiB: kib('RssShmem') };
}

/** One mapping of /proc/<pid>/smaps: its range and name, and its resident KiB. */
export interface Mapping {
  range: string;
  name: string;
  rssKiB: number;
}

export function readMappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+-[0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) out.push({ range: head[1]!, name: head[2] || '[anon]', rssKiB: 0 });
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && out.length > 0) out[out.length - 1]!.rssKiB = Number(rss[1]);
  }
  return out;
}

/** The mappings whose resident set grew most from `before` to `after` (by range; a new range counts from 0). */
export function mappingGrowth(before: readonly Mapping[], after: readonly Mapping[], top = 12): Array<Mapping & { grewKiB: number }> {
  const was = new Map(before.map((m) => [m.range, m.rssKiB]));
  return after
    .map((m) => ({ ...m, grewKiB: m.rssKiB - (was.get(m.range) ?? 0) }))
    .filter((m) => m.grewKiB !== 0)
    .sort((a, b) => b.grewKiB - a.grewKiB)
    .slice(0, top);
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
      this.samples.push({ t: (now - this.#start) / 1000, ...residentKiB(this.pid), cpu: (ticks - this.#lastTicks) / CLOCK_TICKS / ((now - this.#lastAt) / 1000) });
      this.#lastTicks = ticks;
      this.#lastAt = now;
    } catch {
      this.stop(); // the process is gone
    }
  }
}

/** Samples after the warm-up that flatness() needs to mean anything: two or more in each third. */
export const MIN_FLATNESS_SAMPLES = 6;

/** First third vs last third of the samples taken `warmupS` seconds or more after the start. */
export function flatness(samples: readonly ProcessSample[], warmupS: number, value: (s: ProcessSample) => number): Flatness {
  const kept = samples.filter((s) => s.t >= warmupS).map(value);
  const third = Math.floor(kept.length / 3);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const firstThird = mean(kept.slice(0, third));
  const lastThird = mean(kept.slice(kept.length - third));
  return { samples: kept.length, firstThird, lastThird, growth: firstThird > 0 ? lastThird / firstThird - 1 : NaN };
}
