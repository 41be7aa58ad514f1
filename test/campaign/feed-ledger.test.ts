// The campaign's feed ledger (feed-ledger.ts) is what calls a loss silent; if
// it missed a hole, the campaign's "no silent loss" would prove nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { FeedMessage } from '../../src/feed/subscriber.js';
import { FeedLedger, uncovered } from './feed-ledger.js';

const msg = (seq: bigint, extra: Partial<FeedMessage> = {}): FeedMessage => ({ session: 7, seq, snapshot: false, recovered: false, ...extra }) as FeedMessage;

test('a hole no gap event covers is silent; a reported one is not', () => {
  const l = new FeedLedger();
  for (const s of [1n, 2n, 3n, 6n, 7n, 10n]) l.onMessage(msg(s));
  l.onGap({ channel: 1, fromSeq: 4n, count: 2n, recoverable: false });
  const s = l.summary();
  assert.deepEqual(s.silent, [{ from: 8n, end: 10n }]);
  assert.equal(s.reported, 2n);
  assert.equal(s.live, 6);
});

test('a late join starts at the snapshot; a later snapshot that skips ahead leaves a hole', () => {
  const l = new FeedLedger();
  l.onMessage(msg(100n, { snapshot: true }));
  l.onMessage(msg(101n));
  l.onMessage(msg(102n));
  l.onMessage(msg(200n, { snapshot: true }));
  l.onMessage(msg(201n));
  const s = l.summary(205n);
  assert.equal(s.first, 101n);
  assert.deepEqual(s.silent, [{ from: 103n, end: 201n }]);
  assert.equal(s.tail, 3n);
});

test('repeats and other sessions are counted, not accounted', () => {
  const l = new FeedLedger();
  l.onMessage(msg(1n));
  l.onMessage(msg(2n));
  l.onMessage(msg(2n));
  l.onMessage(msg(3n, { session: 8 }));
  const s = l.summary();
  assert.equal(s.outOfOrder, 1);
  assert.equal(s.foreign, 1);
  assert.deepEqual(s.silent, []);
});

test('uncovered() leaves what overlapping covers miss', () => {
  assert.deepEqual(uncovered([{ from: 1n, end: 20n }], [{ from: 5n, end: 8n }, { from: 1n, end: 3n }, { from: 7n, end: 10n }]), [
    { from: 3n, end: 5n },
    { from: 10n, end: 20n },
  ]);
});
