// The JS view of the engine's latency histograms (native/src/metrics/
// latency_histogram.h): HdrHistogram's layout with 2 significant digits and
// values in ns. The engine records; JS copies the counters once per
// evaluation tick or scrape, never per message.
import { Float64Histogram, build, type Histogram } from 'hdr-histogram-js';

export const HIGHEST_TRACKABLE_NS = 2 ** 36 - 1;
// The counter layout as hdr-histogram-js computes it: the engine's counters
// follow HdrHistogram's (native/src/metrics/latency_histogram.h).
const LAYOUT = new Float64Histogram(1, HIGHEST_TRACKABLE_NS, 2);
/** The engine's counter count (kCountsLength in native/src/metrics/latency_histogram.h). */
export const COUNTS_LENGTH = LAYOUT.countsArrayLength;

/** The lowest value (ns) that lands in counter i. */
export const valueAtIndex = (i: number): number => LAYOUT.valueFromIndex(i);

/** The highest value (ns) that lands in counter i. */
export const highestValueAtIndex = (i: number): number => LAYOUT.highestEquivalentValue(LAYOUT.valueFromIndex(i));

/** The counter a value (ns) lands in. */
export const indexOf = (valueNs: number): number => LAYOUT.countsArrayIndex(valueNs);

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
    return this.total === 0 ? 0 : this.toHdr().getValueAtPercentile(percentile);
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
