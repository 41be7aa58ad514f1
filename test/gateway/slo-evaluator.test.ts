import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LatencyCounts } from '../../src/native/latency-counts.js';
import { defaultMinEvents, SloEvaluator } from '../../src/gateway/slo/evaluator.js';

/** A cumulative latency source tests can add events to, like the engine's counters. */
function source() {
  const values: number[] = [];
  return {
    add: (ns: number, n = 1) => {
      for (let i = 0; i < n; i++) values.push(ns);
    },
    read: () => LatencyCounts.fromValues(values),
  };
}

const objective = { name: 'tick-publish-p99', latency: 'tick_publish', percentile: 99, thresholdUs: 50, windowsSeconds: [10, 60] };

test('an SLO is green while the percentile stays under its threshold', () => {
  const src = source();
  const slo = new SloEvaluator([objective], { tick_publish: src.read });
  slo.tick(0);
  src.add(20_000, 1000);
  const [status] = slo.tick(1000);
  assert.equal(status!.compliant, true);
  assert.equal(status!.windows[0]!.events, 1000);
  assert.equal(status!.windows[0]!.burnRate, 0);
  assert.ok(status!.windows[0]!.observedUs <= 20.2);
});

test('an SLO goes red when more than 1% of events exceed the threshold, and green again once the window has passed', () => {
  const src = source();
  const slo = new SloEvaluator([objective], { tick_publish: src.read });
  slo.tick(0);
  src.add(20_000, 980);
  src.add(400_000, 20); // 2 % slow: p99 is 400 µs
  let [status] = slo.tick(1000);
  assert.equal(status!.compliant, false);
  const ten = status!.windows[0]!;
  assert.equal(ten.slowEvents, 20);
  assert.ok(Math.abs(ten.burnRate - 2) < 1e-9, `burn rate ${ten.burnRate}`);
  assert.ok(ten.observedUs >= 400);

  // Healthy traffic for the next 11 s: the 10 s window is green again, the 60 s one still remembers.
  for (let t = 2000; t <= 12_000; t += 1000) {
    src.add(20_000, 1000);
    [status] = slo.tick(t);
  }
  assert.equal(status!.windows[0]!.compliant, true, 'the 10 s window no longer holds the slow events');
  assert.equal(status!.windows[0]!.slowEvents, 0);
  assert.equal(status!.windows[1]!.slowEvents, 20, 'the 60 s window still holds them');
  // 20 slow of 12 000 is under 1 %: the 60 s window is compliant too, burning budget at 0.17.
  assert.equal(status!.windows[1]!.events, 12_000);
  assert.equal(status!.windows[1]!.compliant, true);
  assert.ok(Math.abs(status!.windows[1]!.burnRate - 20 / 12_000 / 0.01) < 1e-9);
  assert.equal(status!.compliant, true);
});

test('exactly at the budget is compliant; one more slow event is not', () => {
  const src = source();
  const slo = new SloEvaluator([{ ...objective, windowsSeconds: [60] }], { tick_publish: src.read });
  slo.tick(0);
  src.add(10_000, 99);
  src.add(900_000, 1);
  assert.equal(slo.tick(1000)[0]!.compliant, true, '1 slow of 100 at p99');
  src.add(900_000, 1);
  assert.equal(slo.tick(2000)[0]!.compliant, false, '2 slow of 101 at p99');
});

test('an empty window is compliant with no burn', () => {
  const src = source();
  const slo = new SloEvaluator([objective], { tick_publish: src.read });
  const [status] = slo.tick(0);
  assert.equal(status!.compliant, true);
  assert.equal(status!.windows[0]!.events, 0);
});

test('an objective naming an unknown latency is refused', () => {
  assert.throws(() => new SloEvaluator([{ ...objective, latency: 'nope' }], {}), /SLO tick-publish-p99: no latency source named nope/);
});

test('minEvents: 100 / (100 - p) by default (the fewest events whose percentile is not the slowest), or as configured', () => {
  assert.deepEqual([50, 90, 99, 99.9, 99.99].map(defaultMinEvents), [2, 10, 100, 1000, 10000]);
  const counts = source();
  const ack = { name: 'x', latency: 'order_ack', percentile: 99, thresholdUs: 200, windowsSeconds: [60] };
  const few = new SloEvaluator([{ ...ack, minEvents: 3 }], { order_ack: counts.read });
  const many = new SloEvaluator([ack], { order_ack: counts.read });
  few.tick(0);
  many.tick(0);
  counts.add(400_000, 1);
  counts.add(30_000, 2);
  assert.deepEqual([few.tick(1000)[0]!.compliant, few.status()[0]!.windows[0]!.judged], [false, true]);
  assert.deepEqual([many.tick(1000)[0]!.compliant, many.status()[0]!.windows[0]!.judged], [true, false]);
});
