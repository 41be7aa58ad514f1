// Latency SLOs, evaluated continuously over sliding windows.
//
// An objective says "the pth percentile of <latency> stays at or below T over
// a window W", e.g. tick publish p99 ≤ 50 µs over 1 min and over 10 min.
// Every evaluation interval the evaluator takes one cumulative snapshot of
// the latency's counters; a window is the difference between the newest
// snapshot and the one W ago, so nothing is recorded per event in JS.
//
// Per objective and window it reports:
//   observed   the pth percentile over the window
//   compliant  the pth percentile is ≤ T. Counters straddling T count as
//              slower: conservative. A window with fewer than minEvents events
//              is not judged (compliant): the p99 of three orders is the
//              slowest of them, so one cold first order would read as a breach.
//              By default minEvents is 100 / (100 − p), the fewest events whose
//              pth percentile is not simply the slowest (100 for p99).
//   burn rate  (events slower than T / events) ÷ (1 − p/100): 1 spends the
//              error budget exactly over the window, above 1 faster. Alerts
//              use this (multi-window burn-rate alerts, config/prometheus).
import { LatencyCounts } from '../../native/latency-counts.js';

export interface SloObjective {
  name: string;
  /** Which latency: a key of the sources given to the evaluator. */
  latency: string;
  percentile: number;
  thresholdUs: number;
  windowsSeconds: number[];
  /** Events a window needs before it is judged (default defaultMinEvents(percentile)). */
  minEvents?: number;
}

/** The fewest events whose pth percentile is not simply the slowest of them: 100 for p99, 1000 for p99.9, 2 for p50. */
export function defaultMinEvents(percentile: number): number {
  // Rounded before the ceiling: 100 / (100 − 99.9) is 1000.0000000000036 in floating point.
  return Math.ceil(Number((100 / (100 - percentile)).toFixed(6)));
}

export interface WindowStatus {
  windowSeconds: number;
  /** Seconds of data the window actually covers (less than windowSeconds just after start). */
  coveredSeconds: number;
  events: number;
  slowEvents: number;
  observedUs: number;
  /** The window had minEvents events or more; one with fewer is compliant. */
  judged: boolean;
  compliant: boolean;
  burnRate: number;
}

export interface SloStatus {
  name: string;
  latency: string;
  percentile: number;
  thresholdUs: number;
  minEvents: number;
  compliant: boolean;
  windows: WindowStatus[];
}

/** Reads the cumulative counters of one latency (e.g. from the engine). */
export type LatencySource = () => LatencyCounts;

interface Snapshot {
  atMs: number;
  counts: LatencyCounts;
}

export class SloEvaluator {
  private readonly history = new Map<string, Snapshot[]>();
  private readonly maxWindowMs: number;
  private latest: SloStatus[] = [];

  constructor(
    readonly objectives: readonly SloObjective[],
    private readonly sources: Readonly<Record<string, LatencySource>>,
  ) {
    for (const o of objectives) {
      if (!sources[o.latency]) throw new Error(`SLO ${o.name}: no latency source named ${o.latency}`);
    }
    this.maxWindowMs = Math.max(0, ...objectives.flatMap((o) => o.windowsSeconds)) * 1000;
  }

  /** Takes a snapshot of every latency used and re-evaluates; returns the new status. */
  tick(nowMs: number = Date.now()): SloStatus[] {
    for (const latency of new Set(this.objectives.map((o) => o.latency))) {
      const snaps = this.history.get(latency) ?? [];
      snaps.push({ atMs: nowMs, counts: this.sources[latency]!() });
      // Keep one snapshot at or beyond the longest window, so it stays computable.
      while (snaps.length > 2 && nowMs - snaps[1]!.atMs >= this.maxWindowMs) snaps.shift();
      this.history.set(latency, snaps);
    }
    this.latest = this.objectives.map((o) => this.evaluate(o, nowMs));
    return this.latest;
  }

  status(): SloStatus[] {
    return this.latest;
  }

  private evaluate(o: SloObjective, nowMs: number): SloStatus {
    const snaps = this.history.get(o.latency)!;
    const newest = snaps[snaps.length - 1]!;
    const thresholdNs = o.thresholdUs * 1000;
    const minEvents = o.minEvents ?? defaultMinEvents(o.percentile);
    const windows = o.windowsSeconds.map((windowSeconds): WindowStatus => {
      // The newest snapshot taken at or before the window's start (or the oldest we have).
      const startMs = nowMs - windowSeconds * 1000;
      let base = snaps[0]!;
      for (const s of snaps) {
        if (s.atMs <= startMs) base = s;
        else break;
      }
      const delta = base === newest ? LatencyCounts.EMPTY : newest.counts.minus(base.counts);
      const slowEvents = delta.countAbove(thresholdNs);
      const observedUs = delta.valueAtPercentile(o.percentile) / 1000;
      const allowed = 1 - o.percentile / 100;
      const judged = delta.total >= minEvents;
      return {
        windowSeconds,
        coveredSeconds: (newest.atMs - base.atMs) / 1000,
        events: delta.total,
        slowEvents,
        observedUs,
        judged,
        // The percentile is within T exactly when at most total − ⌈p·total⌉ events are slower.
        compliant: !judged || slowEvents <= delta.total - Math.ceil((o.percentile / 100) * delta.total),
        burnRate: delta.total === 0 ? 0 : slowEvents / delta.total / allowed,
      };
    });
    return {
      name: o.name,
      latency: o.latency,
      percentile: o.percentile,
      thresholdUs: o.thresholdUs,
      minEvents,
      compliant: windows.every((w) => w.compliant),
      windows,
    };
  }
}
