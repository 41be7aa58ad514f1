// The gateway logs what the engine thread reports going wrong (engine-faults.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { watchEngineFaults } from '../../src/native/engine-faults.js';
import { throwOnEngine } from '../../src/native/testing/engine-faults.js';

test('an engine task that threw is logged once, at error level, with the count', async () => {
  const e = new Engine({ hugePages: false, idle: 'backoff' });
  await e.start();
  const logged: Array<[object, string]> = [];
  const stop = watchEngineFaults(e, { error: (obj, msg) => logged.push([obj, msg]) }, 5);
  try {
    assert.throws(() => throwOnEngine(e, 'bad_alloc'), /out of memory \(std::bad_alloc\)/);
    await sleep(50);
    assert.deepEqual(logged, [[{ taskErrors: 1 }, 'engine tasks threw (their callers got the errors)']]);
  } finally {
    stop();
    e.stop();
  }
});
