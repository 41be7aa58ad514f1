// The counters and settings declared once in native/src (the .def lists)
// cannot drift from their TS side: each module of src/declared/ is exactly
// what `npm run docs:generate` makes of its .def (scripts/docs/declarations.ts),
// and a soft QP reports exactly the declared counters, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DECLARED_MODULES, entries, integer, list, repoPath } from '../../scripts/docs/declarations.js';
import { QP_COUNTERS, QP_METRICS } from '../../src/declared/qp-counters.js';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { freeLoopbackAddress } from '../support/loopback.js';

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
