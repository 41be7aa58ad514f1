// The counters and settings declared once in native/src (the .def lists)
// cannot drift from their TS side: each module of src/declared/ is exactly
// what `npm run docs:generate` makes of its .def (scripts/docs/declarations.ts),
// and a soft QP, the engine, the feed's publisher and subscriber and the
// order service report exactly the declared counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DECLARED_MODULES, entries, integer, list, repoPath } from '../../scripts/docs/declarations.js';
import { QP_COUNTERS, QP_METRICS } from '../../src/declared/qp-counters.js';
import { ENGINE_COUNTERS, ENGINE_METRICS } from '../../src/declared/engine-counters.js';
import { FEED_CHANNEL_COUNTERS, FEED_PUBLISHER_COUNTERS, FEED_SUBSCRIBER_CHANNEL_COUNTERS, FEED_SUBSCRIBER_COUNTERS } from '../../src/declared/feed-counters.js';
import { ORDER_HANDLER_COUNTERS, ORDER_MARKET_DATA_COUNTERS, ORDER_METRICS, ORDER_SERVICE_COUNTERS } from '../../src/declared/order-counters.js';
import { OrderService } from '../../src/orders/service.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { nativeDeviceOf, nativeFeed, openFeedDevice } from '../../src/feed/native.js';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

for (const [path, generate] of Object.entries(DECLARED_MODULES)) {
  test(`${path} is what npm run docs:generate makes of its .def`, () => {
    assert.equal(readFileSync(repoPath(path), 'utf8'), generate(), `${path} differs from its .def: run npm run docs:generate`);
  });
}

test('the .def reader takes each entry line of one list, quoted commas and `1 << 20` included', () => {
  const def = '#define A(X) \\\n  X(a, "one, two", 1 << 20) \\\n  /* a section */ \\\n  X(b, "", 3\'600\'000)\n#define B(X) \\\n  X(c, "", 1)\n';
  assert.deepEqual(entries(list(def, 'A'), 'X'), [
    ['a', 'one, two', '1 << 20'],
    ['b', '', "3'600'000"],
  ]);
  assert.equal(integer('1 << 20'), 1 << 20);
  assert.equal(integer("3'600'000"), 3_600_000);
  assert.throws(() => integer('kMax'), /not an integer the declarations may use: kMax/);
});

test('a soft QP reports exactly the declared counters, in order, and each qpgate_qp_* family reads declared ones', async () => {
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  try {
    const pd = device.allocPd();
    const cq = device.createCq(4);
    const qp = pd.createQp({ type: 'RC', sendCq: cq });
    assert.deepEqual(Object.keys(qp.counters()), QP_COUNTERS.map((c) => c.name));
    const names = new Set<string>(QP_COUNTERS.map((c) => c.name));
    for (const family of QP_METRICS) {
      assert.ok(family.counters.length > 0, `${family.name} is fed by no counter`);
      for (const { counter } of family.counters) assert.ok(names.has(counter), `${family.name}: ${counter}`);
    }
    qp.destroy();
    cq.destroy();
    pd.dealloc();
  } finally {
    device.close();
    await engine.stop();
  }
});

test('the engine reports exactly its declared counters, a kFlag one as a boolean, and each qpgate_engine_* family reads declared ones', async () => {
  const engine = new Engine({ hugePages: false });
  await engine.start();
  try {
    const stats = engine.stats() as unknown as Record<string, unknown>;
    for (const c of ENGINE_COUNTERS) assert.equal(typeof stats[c.js], c.kind === 'kFlag' ? 'boolean' : 'number', c.js);
    const declared = new Set<string>(ENGINE_COUNTERS.map((c) => c.js));
    const others = ['running', 'notifies', 'faults', 'toEngineUsed', 'toEngineCapacity', 'fromEngineUsed', 'fromEngineCapacity'];
    assert.deepEqual(Object.keys(stats).filter((k) => !declared.has(k)), others, 'a counter the engine reports is not in engine_counters.def');
    for (const family of ENGINE_METRICS) for (const { counter } of family.counters) assert.ok(declared.has(counter), `${family.name}: ${counter}`);
  } finally {
    await engine.stop();
  }
});

test('a feed publisher, its channels, a subscriber and its channels report exactly the declared counters, in order', async () => {
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openFeedDevice(engine, { address: freeLoopbackAddress() });
  const feed = nativeFeed();
  const channels = [{ id: 1, groupA: '239.78.9.1' }];
  const pub = feed.createPublisher(engine.native, nativeDeviceOf(device), { channels });
  const sub = feed.createSubscriber(engine.native, nativeDeviceOf(device), { channels });
  const names = (list: ReadonlyArray<{ js: string }>) => list.map((c) => c.js);
  try {
    const { publishLatencyCount: _p, channels: pubChannels, ...publisher } = pub.stats();
    assert.deepEqual(Object.keys(publisher), names(FEED_PUBLISHER_COUNTERS));
    assert.deepEqual(Object.keys(pubChannels[0]!), ['id', ...names(FEED_CHANNEL_COUNTERS)]);
    const { channels: subChannels, recovery: _r, ...subscriber } = sub.stats();
    assert.deepEqual(Object.keys(subscriber), names(FEED_SUBSCRIBER_COUNTERS));
    const extra = ['latencyCount', 'frameCounters', 'rejectedFrames'];
    assert.deepEqual(Object.keys(subChannels[0]!), ['id', ...names(FEED_SUBSCRIBER_CHANNEL_COUNTERS), ...extra]);
  } finally {
    sub.close();
    pub.close();
    device.close();
    await engine.stop();
  }
});

test('the order service reports its declared counters first, in order, then only what stats() derives, and each qpgate_order_* family reads declared ones', async () => {
  const stateDir = join(mkdtempSync(join(tmpdir(), 'qpgate-decl-')), 'state');
  const config = loadConfig({ env: {}, overrides: [`state.dir=${stateDir}`] });
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  const service = new OrderService(engine, device, config.orders, { stateDir, feeds: config.feeds });
  try {
    service.start();
    const keys = Object.keys(service.stats()!);
    const declared = [...ORDER_HANDLER_COUNTERS, ...ORDER_SERVICE_COUNTERS, ...ORDER_MARKET_DATA_COUNTERS].map((c) => c.js);
    assert.deepEqual(keys.slice(0, declared.length), declared);
    const derived = ['rejects', 'decodeErrors', 'journalRecords', 'journalSyncs', 'journalReplayed', 'journalTornTailBytes', 'durablePosition', 'clientOrderIds', 'ackLatencyCount', 'resendBytes', 'openOrders', 'rejectsByReason', 'decodeErrorsByKind', 'journalFailure', 'lastRebuildFailure'];
    assert.deepEqual(keys.slice(declared.length), derived, 'a counter stats() reports is not in order_counters.def');
    const names = new Set<string>(declared);
    for (const family of ORDER_METRICS) for (const { counter } of family.counters) assert.ok(names.has(counter), `${family.name}: ${counter}`);
  } finally {
    service.close();
    device.close();
    await engine.stop();
  }
});

test('the status page sums the NAK families of qp_counters.def, and shows only declared QP counters', () => {
  const page = readFileSync(repoPath('src/gateway/control/status-page/index.html'), 'utf8');
  const listed = (name: string): string[] => {
    const m = new RegExp(`var ${name} = \\[([^\\]]*)\\]`).exec(page);
    assert.ok(m, `the status page declares ${name}`);
    return [...m[1]!.matchAll(/'([a-z_]+)'/g)].map((x) => x[1]!);
  };
  const family = (name: string): string[] => QP_METRICS.find((f) => f.name === name)!.counters.map((c) => c.counter);
  assert.deepEqual(listed('NAKS_RECEIVED'), family('qpgate_qp_naks_received_total'));
  assert.deepEqual(listed('NAKS_SENT'), family('qpgate_qp_naks_sent_total'));
  const declared = new Set<string>(QP_COUNTERS.map((c) => c.name));
  for (const [, name] of page.matchAll(/\bc\.([a-z_]+)\b/g)) {
    if (name!.includes('_') || name === 'timeouts') assert.ok(declared.has(name!), `status page reads q.counters.${name}, which qp_counters.def does not declare`);
  }
});
