import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseDurationMs } from '../../src/gateway/slo/duration.js';
import { formatNs } from '../../src/common/units.js';

test('durations are printed in the unit that keeps them readable: ns, µs, ms, s', () => {
  assert.equal(formatNs(850), '850 ns');
  assert.equal(formatNs(8_700), '8.70 µs');
  assert.equal(formatNs(36_800), '36.8 µs');
  assert.equal(formatNs(3_200_000), '3.20 ms');
  assert.equal(formatNs(8_397_000), '8.40 ms');
  assert.equal(formatNs(1_500_000_000), '1.50 s');
  assert.equal(formatNs(0), '0.00 ns');
  assert.equal(formatNs(undefined), '-');
  assert.equal(formatNs(null), '-');
});

test('config durations read as written: "500ms", "1.5s", "10m", "1h", "1d"; anything else is refused by name', () => {
  assert.equal(parseDurationMs('500ms'), 500);
  assert.equal(parseDurationMs('1.5s'), 1500);
  assert.equal(parseDurationMs('10m'), 600_000);
  assert.equal(parseDurationMs('1h'), 3_600_000);
  assert.equal(parseDurationMs('1d'), 86_400_000);
  for (const bad of ['10', '10 s', '-1s', '1w', 's', '']) {
    assert.throws(() => parseDurationMs(bad), { message: `expected a duration like "10s", "1m", "10m", got ${JSON.stringify(bad)}` }, bad);
  }
});
