// Percentile summaries of the engine's latency histograms (publish latency,
// end-to-end latency at a subscriber) for feed stats. The counter layout and
// the percentile rule live in src/native/latency-counts.ts.
import { LatencyCounts } from '../native/latency-counts.js';

export interface LatencySummary {
  count: number;
  p50Ns: number;
  p99Ns: number;
  p999Ns: number;
  maxNs: number;
}

/** Percentiles (the highest value equivalent of the bucket, as HdrHistogram reports) from dense counts. */
export function summarize(counts: ArrayLike<number>): LatencySummary {
  const c = LatencyCounts.fromDense(counts);
  return {
    count: c.total,
    p50Ns: c.valueAtPercentile(50),
    p99Ns: c.valueAtPercentile(99),
    p999Ns: c.valueAtPercentile(99.9),
    maxNs: c.valueAtPercentile(100),
  };
}
