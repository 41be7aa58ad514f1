// Results of repeated benchmark runs and the aligned tables bench/feed/run.ts
// prints: every program's RESULT row kept per key, medians (min–max) over
// runs, and ratio verdicts.
import path from 'node:path';

import { table as textTable } from '../../src/common/table.js';

export type Row = Record<string, number | string>;

export interface BenchArgs {
  quick: boolean;
  runs: number; // 1 with --quick
  buildDir: string; // absolute
  jsonOut: string; // '' = no raw dump
}

// [--runs N] [--quick] [--build-dir dir] [--json file]; an unknown option is an error.
export function parseBenchArgs(argv: string[], root: string): BenchArgs {
  const values = new Map<string, string>();
  let quick = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--quick') quick = true;
    else if (['--runs', '--build-dir', '--json'].includes(a) && i + 1 < argv.length) values.set(a, argv[++i] as string);
    else throw new Error(`bench: unknown argument ${a}; expected --runs N, --quick, --build-dir dir, --json file`);
  }
  return {
    quick,
    runs: quick ? 1 : Number(values.get('--runs') ?? '5'),
    buildDir: path.resolve(root, values.get('--build-dir') ?? 'native/build-bench'),
    jsonOut: values.get('--json') ?? '',
  };
}

function medianOfList(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

// sockperf's client summary: percentiles and the mean, µs as printed
// (one-way in ping-pong mode); undefined when it printed none (a failure).
export function parseSockperf(out: string): { p50: number; p99: number; p999: number; mean: number } | undefined {
  const at = (p: string): number => {
    const m = new RegExp(`percentile ${p} =\\s*([\\d.]+)`).exec(out);
    return m ? Number(m[1]) : NaN;
  };
  const p50 = at('50\\.000');
  if (!Number.isFinite(p50)) return undefined;
  const mean = /avg-latency=([\d.]+)/.exec(out);
  return { p50, p99: at('99\\.000'), p999: at('99\\.900'), mean: mean ? Number(mean[1]) : NaN };
}

export function fmt(x: number): string {
  if (!Number.isFinite(x)) return '-';
  if (x >= 100000) return `${(x / 1000).toFixed(0)}k`;
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

// PASS / MISS, or '-' when a side is missing (a program failed or sockperf is absent).
export function ratioVerdict(ratio: number, ok: (x: number) => boolean): string {
  if (!Number.isFinite(ratio)) return '-';
  return ok(ratio) ? 'PASS' : 'MISS';
}

export class Results {
  private readonly rows = new Map<string, Row[]>();

  keep(key: string, row: Row | undefined): void {
    if (!row) return;
    const list = this.rows.get(key) ?? [];
    list.push(row);
    this.rows.set(key, list);
  }
  has(key: string): boolean {
    return this.rows.has(key);
  }
  values(key: string, field: string | ((r: Row) => number)): number[] {
    const get = typeof field === 'string' ? (r: Row): number => Number(r[field]) : field;
    return (this.rows.get(key) ?? []).map(get).filter((x) => Number.isFinite(x));
  }
  median(key: string, field: string): number {
    return medianOfList(this.values(key, field));
  }
  medianOf(key: string, get: (r: Row) => number): number {
    return medianOfList(this.values(key, get));
  }
  max(key: string, field: string): number {
    const v = this.values(key, field);
    return v.length ? Math.max(...v) : NaN;
  }
  // "median (min–max)" over runs, or the one value.
  cell(key: string, field: string): string {
    const v = this.values(key, field);
    if (v.length === 0) return '-';
    const m = fmt(medianOfList(v));
    return v.length === 1 ? m : `${m} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})`;
  }
  pct(x: number): string {
    return Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '-';
  }
  raw(): Record<string, Row[]> {
    return Object.fromEntries(this.rows);
  }
}

/** A titled table of the report (src/common/table.ts lays it out). */
export function table(title: string, header: string[], rows: string[][]): void {
  process.stdout.write(`\n${title}\n${textTable(header, rows)}\n`);
}
