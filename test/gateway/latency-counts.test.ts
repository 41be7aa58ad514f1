import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'hdr-histogram-js';
import {
  COUNTS_LENGTH,
  HIGHEST_TRACKABLE_NS,
  LatencyCounts,
  highestValueAtIndex,
  indexOf,
  valueAtIndex,
} from '../../src/native/latency-counts.js';

test('the counter layout is the engine\'s (HdrHistogram, 2 significant digits, 1 ns .. 2^36-1 ns in 3840 counters)', () => {
  assert.equal(COUNTS_LENGTH, 3840, 'kCountsLength in native/src/metrics/latency_histogram.h');
  // Counters 0..255 are 1 ns wide; each later half-bucket of 128 counters doubles the width.
  assert.deepEqual([valueAtIndex(255), highestValueAtIndex(255)], [255, 255]);
  assert.deepEqual([valueAtIndex(256), highestValueAtIndex(256)], [256, 257]);
  assert.deepEqual([valueAtIndex(384), highestValueAtIndex(384)], [512, 515]);
  assert.equal(highestValueAtIndex(COUNTS_LENGTH - 1), HIGHEST_TRACKABLE_NS);
  for (let i = 0; i < COUNTS_LENGTH; i++) {
    assert.equal(indexOf(valueAtIndex(i)), i);
    assert.equal(indexOf(highestValueAtIndex(i)), i);
    if (i > 0) assert.equal(valueAtIndex(i), highestValueAtIndex(i - 1) + 1, `counter ${i} starts where counter ${i - 1} ends`);
  }
});

test('percentiles of a known distribution match hdr-histogram-js', () => {
  const values: number[] = [];
  for (let i = 1; i <= 100_000; i++) values.push(1000 + ((i * 7919) % 50_000)); // 1 µs .. 51 µs
  values.push(2_000_000); // one 2 ms outlier
  const counts = LatencyCounts.fromValues(values);
  const reference = build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 2 });
  for (const v of values) reference.recordValue(v);
  assert.equal(counts.total, values.length);
  for (const p of [50, 90, 99, 99.9, 99.999, 100]) {
    assert.equal(counts.valueAtPercentile(p), reference.getValueAtPercentile(p), `p${p}`);
  }
  assert.equal(counts.toHdr().getValueAtPercentile(99), reference.getValueAtPercentile(99));
});

test('the difference of two cumulative snapshots holds only the events between them', () => {
  const first = LatencyCounts.fromValues([1000, 2000, 3000]);
  const second = LatencyCounts.fromValues([1000, 2000, 3000, 3000, 90_000]);
  const delta = second.minus(first);
  assert.equal(delta.total, 2);
  assert.equal(delta.countAbove(50_000), 1);
  assert.equal(delta.valueAtPercentile(50), highestValueAtIndex(indexOf(3000)));
});

test('counting events above a threshold is conservative at the counter that straddles it', () => {
  const counts = LatencyCounts.fromValues([10_000, 10_050, 20_000]);
  // 10 000 and 10 050 share a counter (2 significant digits); a threshold
  // inside that counter counts both as slower rather than guess.
  assert.equal(counts.countAbove(10_020), 3);
  assert.equal(counts.countAbove(highestValueAtIndex(indexOf(10_050))), 1);
  assert.equal(counts.countAbove(30_000), 0);
});

test('Prometheus cumulative buckets count the events at or below each bound', () => {
  const counts = LatencyCounts.fromValues([500, 900, 5000, 50_000, 5_000_000]);
  assert.deepEqual(counts.cumulativeAtOrBelow([1000, 10_000, 100_000, 1e9]), [2, 3, 4, 5]);
});

test('dense counters of the wrong length are refused', () => {
  assert.throws(() => LatencyCounts.fromDense(new Float64Array(10)), /expected 3840 entries, got 10/);
});
