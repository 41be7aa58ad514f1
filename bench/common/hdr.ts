// The round-trip histograms of the Node benchmarks: HdrHistogram (3 digits,
// ns) and the RESULT fields they report, µs.
import { build, type Histogram } from 'hdr-histogram-js';

export function roundTripHistogram(): Histogram {
  return build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1, highestTrackableValue: 60e9 });
}

/** p50/p99/p99.9/max/mean in µs and the sample count; `sumNs` is the sum of the recorded values. */
export function roundTripFields(hist: Histogram, sumNs: number): Record<string, number> {
  const us = (ns: number): number => Number((ns / 1000).toFixed(3));
  return {
    p50: us(hist.getValueAtPercentile(50)),
    p99: us(hist.getValueAtPercentile(99)),
    p999: us(hist.getValueAtPercentile(99.9)),
    max: us(hist.maxValue),
    mean: us(sumNs / Math.max(1, hist.totalCount)),
    samples: hist.totalCount,
  };
}
