// The JS view of the engine's latency histograms (native/src/metrics/
// latency_histogram.h): HdrHistogram's layout with 2 significant digits and
// values in ns. The engine records; JS copies the counters once per
// evaluation tick or scrape, never per message.
import { build, type Histogram } from 'hdr-histogram-js';

export const SUB_BUCKET_HALF_COUNT_MAGNITUDE = 7;
const SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
export const HIGHEST_TRACKABLE_NS = 2 ** 36 - 1;
export const COUNTS_LENGTH = (36 - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1) + 2) * SUB_BUCKET_HALF_COUNT;

/** The lowest value (ns) that lands in counter i: HdrHistogram's valueFromIndex. */
export function valueAtIndex(i: number): number {
  let bucket = (i >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1;
  let subBucket = (i & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
  if (bucket < 0) {
    subBucket -= SUB_BUCKET_HALF_COUNT;
    bucket = 0;
  }
  return subBucket * 2 ** bucket;
}

/** The highest value (ns) that lands in counter i. */
export function highestValueAtIndex(i: number): number {
  return i + 1 < COUNTS_LENGTH ? valueAtIndex(i + 1) - 1 : HIGHEST_TRACKABLE_NS;
}

/**
 * A sparse copy of a histogram's counters: latency distributions touch a few
 * hundred of the 3840 counters, so windows of many snapshots stay small.
 */
export class LatencyCounts {
  private constructor(
    readonly indices: Uint16Array,
    readonly counts: Float64Array,
    readonly total: number,
  ) {}

  static readonly EMPTY = new LatencyCounts(new Uint16Array(0), new Float64Array(0), 0);

  /** From the engine's dense counters (BigUint64Array view or a plain array). */
  static fromDense(dense: ArrayLike<bigint | number>): LatencyCounts {
    if (dense.length !== COUNTS_LENGTH) {
      throw new RangeError(`latency counters: expected ${COUNTS_LENGTH} entries, got ${dense.length}`);
    }
    const idx: number[] = [];
    const cnt: number[] = [];
    let total = 0;
    for (let i = 0; i < COUNTS_LENGTH; i++) {
      const c = Number(dense[i]);
      if (c !== 0) {
        idx.push(i);
        cnt.push(c);
        total += c;
      }
    }
    return new LatencyCounts(Uint16Array.from(idx), Float64Array.from(cnt), total);
  }

  /** From raw values in ns (tests and JS-side recorders). */
  static fromValues(valuesNs: Iterable<number>): LatencyCounts {
    const dense = new Float64Array(COUNTS_LENGTH);
    for (const v of valuesNs) dense[indexOf(Math.min(Math.max(0, Math.round(v)), HIGHEST_TRACKABLE_NS))]! += 1;
    return LatencyCounts.fromDense(dense);
  }

  /** this − earlier: the events recorded between two cumulative snapshots. */
  minus(earlier: LatencyCounts): LatencyCounts {
    if (earlier.total === 0) return this;
    const idx: number[] = [];
    const cnt: number[] = [];
    let total = 0;
    let j = 0;
    for (let k = 0; k < this.indices.length; k++) {
      const i = this.indices[k]!;
      while (j < earlier.indices.length && earlier.indices[j]! < i) j++;
      const before = j < earlier.indices.length && earlier.indices[j] === i ? earlier.counts[j]! : 0;
      const c = this.counts[k]! - before;
      if (c > 0) {
        idx.push(i);
        cnt.push(c);
        total += c;
      }
    }
    return new LatencyCounts(Uint16Array.from(idx), Float64Array.from(cnt), total);
  }

  /** Events slower than thresholdNs (a counter straddling the threshold counts as slower: conservative). */
  countAbove(thresholdNs: number): number {
    let n = 0;
    for (let k = this.indices.length - 1; k >= 0; k--) {
      const i = this.indices[k]!;
      if (highestValueAtIndex(i) <= thresholdNs) break;
      n += this.counts[k]!;
    }
    return n;
  }

  /** The value (ns) at a percentile (0–100], as HdrHistogram reports it (the counter's highest value); 0 when empty. */
  valueAtPercentile(percentile: number): number {
    if (this.total === 0) return 0;
    const wanted = Math.max(1, Math.ceil((percentile / 100) * this.total));
    let seen = 0;
    for (let k = 0; k < this.indices.length; k++) {
      seen += this.counts[k]!;
      if (seen >= wanted) return highestValueAtIndex(this.indices[k]!);
    }
    return highestValueAtIndex(this.indices[this.indices.length - 1]!);
  }

  /** Events at or below each bound (ns), for Prometheus' cumulative `le` buckets. */
  cumulativeAtOrBelow(boundsNs: readonly number[]): number[] {
    const out = new Array<number>(boundsNs.length).fill(0);
    for (let k = 0; k < this.indices.length; k++) {
      const top = highestValueAtIndex(this.indices[k]!);
      for (let b = 0; b < boundsNs.length; b++) if (top <= boundsNs[b]!) out[b]! += this.counts[k]!;
    }
    return out;
  }

  /** An hdr-histogram-js Histogram with the same counts (for percentile tables and encoding). */
  toHdr(): Histogram {
    const h = build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 2 });
    for (let k = 0; k < this.indices.length; k++) h.recordValueWithCount(valueAtIndex(this.indices[k]!), this.counts[k]!);
    return h;
  }
}

/** HdrHistogram's countsArrayIndex for 2 significant digits, lowest value 1. */
export function indexOf(value: number): number {
  const v = Math.floor(value);
  // Bucket = position of the highest bit above the sub-bucket range.
  const magnitude = v <= 255 ? 7 : Math.floor(Math.log2(v));
  let bucket = magnitude - SUB_BUCKET_HALF_COUNT_MAGNITUDE;
  // Guard Math.log2 rounding at exact powers of two.
  if (2 ** (bucket + SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1) <= v) bucket++;
  if (bucket > 0 && 2 ** (bucket + SUB_BUCKET_HALF_COUNT_MAGNITUDE) > v) bucket--;
  const subBucket = Math.floor(v / 2 ** bucket);
  return ((bucket + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + subBucket - SUB_BUCKET_HALF_COUNT;
}
