import assert from 'node:assert/strict';
import { test } from 'node:test';

import { formatNs } from '../../src/gateway/units.js';

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
