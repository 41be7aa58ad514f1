// Percentile summaries of the engine's latency histograms (publish latency,
// end-to-end latency at a subscriber) for feed stats. The counter layout and
// the percentiles are hdr-histogram-js's (src/native/latency-counts.ts).
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
  const h = c.toHdr();
  return {
    count: c.total,
    p50Ns: h.getValueAtPercentile(50),
    p99Ns: h.getValueAtPercentile(99),
    p999Ns: h.getValueAtPercentile(99.9),
    maxNs: h.getValueAtPercentile(100),
  };
}
