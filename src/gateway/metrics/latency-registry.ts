// Latency sources by name, and their Prometheus export.
//
// A latency source is a function returning the cumulative counters of a
// native latency histogram (LatencyCounts: HdrHistogram layout, values in ns).
// The feed registers `tick_publish`, order entry `order_ack`:
//
//   state.latency.registerLatency('tick_publish', 'Tick enqueue to on the wire.', () =>
//     LatencyCounts.fromDense(engine.tickPublishCounts()));
//
// /metrics then exports qpgate_tick_publish_latency_seconds as a Prometheus
// histogram, and SLOs whose `latency` is that name start being evaluated.
// Counters are read when Prometheus scrapes (and when the SLO evaluator ticks),
// never per event: JS does no per-message work.
import type { Registry } from 'prom-client';
import { LatencyCounts, valueAtIndex, highestValueAtIndex } from '../../native/latency-counts.js';

/** Bucket upper bounds in seconds: 1 µs to 10 s, 1-2-5 steps (µs resolution where it matters). */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1, 2, 5, 10,
];
const BUCKETS_NS = LATENCY_BUCKETS_SECONDS.map((s) => Math.round(s * 1e9));

export type ReadCounts = () => LatencyCounts;

export interface LatencySourceInfo {
  readonly name: string;
  readonly help: string;
  readonly metricName: string;
  readonly read: ReadCounts;
}

const NAME = /^[a-z][a-z0-9_]*$/;

/** `qpgate_<name>_latency_seconds`. */
export const latencyMetricName = (name: string): string => `qpgate_${name}_latency_seconds`;

export class LatencyRegistry {
  readonly #sources = new Map<string, LatencySourceInfo>();
  readonly #listeners = new Set<(name: string) => void>();
  readonly #registries = new Set<Registry>();

  /**
   * Registers a latency source. `name` is snake_case ('tick_publish'); SLO
   * objectives refer to it, /metrics exports it as qpgate_<name>_latency_seconds.
   * Returns a function that unregisters it.
   */
  registerLatency(name: string, help: string, readCounts: ReadCounts): () => void {
    if (!NAME.test(name)) throw new TypeError(`registerLatency: name must be snake_case ([a-z][a-z0-9_]*), got ${JSON.stringify(name)}`);
    if (this.#sources.has(name)) throw new Error(`registerLatency: a latency named ${name} is already registered`);
    const info: LatencySourceInfo = { name, help, metricName: latencyMetricName(name), read: readCounts };
    this.#sources.set(name, info);
    for (const r of this.#registries) r.registerMetric(histogramMetric(info) as never);
    for (const l of this.#listeners) l(name);
    return () => {
      if (this.#sources.get(name) !== info) return;
      this.#sources.delete(name);
      for (const r of this.#registries) r.removeSingleMetric(info.metricName);
    };
  }

  has(name: string): boolean {
    return this.#sources.has(name);
  }

  names(): string[] {
    return [...this.#sources.keys()].sort();
  }

  get(name: string): LatencySourceInfo | undefined {
    return this.#sources.get(name);
  }

  /** The cumulative counts of a source, or undefined when none is registered. */
  read(name: string): LatencyCounts | undefined {
    return this.#sources.get(name)?.read();
  }

  /** Called with the name of every source registered from now on. */
  onRegister(listener: (name: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Exports every source, present and future, as a histogram in `registry`. */
  exportTo(registry: Registry): void {
    this.#registries.add(registry);
    for (const info of this.#sources.values()) registry.registerMetric(histogramMetric(info) as never);
  }
}

/**
 * A prom-client metric (the shape Registry.metrics() reads) whose values are
 * computed from the source's counts when scraped. `_sum` is estimated from
 * each counter's midpoint (HdrHistogram keeps counts, not a sum): within
 * 1/256 of the true sum.
 */
export function histogramMetric(info: LatencySourceInfo) {
  return {
    name: info.metricName,
    help: info.help,
    type: 'histogram' as const,
    aggregator: 'sum' as const,
    reset(): void {},
    async get() {
      const counts = info.read();
      return { name: info.metricName, help: info.help, type: 'histogram' as const, aggregator: 'sum' as const, values: histogramValues(info.metricName, counts) };
    },
  };
}

export function histogramValues(metricName: string, counts: LatencyCounts) {
  const cumulative = counts.cumulativeAtOrBelow(BUCKETS_NS);
  const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
  LATENCY_BUCKETS_SECONDS.forEach((le, i) => values.push({ metricName: `${metricName}_bucket`, labels: { le }, value: cumulative[i]! }));
  values.push({ metricName: `${metricName}_bucket`, labels: { le: '+Inf' }, value: counts.total });
  values.push({ metricName: `${metricName}_sum`, labels: {}, value: estimatedSumSeconds(counts) });
  values.push({ metricName: `${metricName}_count`, labels: {}, value: counts.total });
  return values;
}

export function estimatedSumSeconds(counts: LatencyCounts): number {
  let ns = 0;
  for (let k = 0; k < counts.indices.length; k++) {
    const i = counts.indices[k]!;
    ns += ((valueAtIndex(i) + highestValueAtIndex(i)) / 2) * counts.counts[k]!;
  }
  return ns / 1e9;
}

/** Percentiles and the non-empty bucket counts, for /v1/status and the status page. */
export function latencySummary(info: LatencySourceInfo) {
  const counts = info.read();
  const hdr = counts.toHdr();
  const us = (p: number): number => hdr.getValueAtPercentile(p) / 1000;
  const cumulative = counts.cumulativeAtOrBelow(BUCKETS_NS);
  return {
    name: info.name,
    metric: info.metricName,
    help: info.help,
    count: counts.total,
    p50Us: us(50),
    p90Us: us(90),
    p99Us: us(99),
    p999Us: us(99.9),
    maxUs: us(100),
    /** Per bucket (not cumulative); leUs null is the overflow bucket above 10 s. */
    buckets: [
      ...LATENCY_BUCKETS_SECONDS.map((le, i): { leUs: number | null; count: number } => ({
        leUs: Math.round(le * 1e6),
        count: cumulative[i]! - (i > 0 ? cumulative[i - 1]! : 0),
      })),
      { leUs: null, count: counts.total - (cumulative[cumulative.length - 1] ?? 0) },
    ],
  };
}
