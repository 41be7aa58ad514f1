// A latency source a test drives: values recorded in ns into dense
// HdrHistogram-layout counters, as the engine's LatencyHistogram keeps them.
import { COUNTS_LENGTH, LatencyCounts, indexOf } from '../../src/native/latency-counts.js';

export class TestLatencyRecorder {
  readonly #dense = new Float64Array(COUNTS_LENGTH);
  total = 0;

  record(ns: number, times = 1): void {
    this.#dense[indexOf(ns)]! += times;
    this.total += times;
  }

  /** The readCounts function for registerLatency. */
  readonly read = (): LatencyCounts => LatencyCounts.fromDense(this.#dense);
}
