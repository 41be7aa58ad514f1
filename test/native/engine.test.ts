// The engine from JS: echo through both rings with one wake per batch,
// placement checked against /proc, a clean and idempotent stop, and option
// validation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

import { loadAddon } from '../../src/native/addon.js';
import { Engine, RecordType, decodeEcho, type EngineRecord } from '../../src/native/engine.js';

function cpusAllowedList(tid: number): string {
  const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
  const line = status.split('\n').find((l) => l.startsWith('Cpus_allowed_list:'));
  assert.ok(line, 'Cpus_allowed_list in status');
  return line.split(':')[1]!.trim();
}

test('the addon reports which optional libraries were compiled in', () => {
  const { features } = loadAddon();
  assert.equal(typeof features.numa, 'boolean');
  assert.equal(typeof features.ibverbs, 'boolean');
  assert.equal(typeof features.hugePages.reserved2MiB, 'number');
  assert.equal(typeof features.hugePages.transparent, 'string');
});

test('echo of 100k records arrives complete and in order, with far fewer wake-ups than records', async () => {
  const total = 100_000;
  let received = 0;
  let bad = 0;
  let batches = 0;
  let lastStamp = 0n;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const engine = new Engine({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16 }, (records) => {
    batches++;
    for (const record of records) {
      const { payload, receivedNs } = decodeEcho(record);
      const seq = new DataView(payload.buffer, payload.byteOffset, 4).getUint32(0, true);
      if (seq !== received || payload.byteLength !== 4 + (seq % 29) || receivedNs < lastStamp) bad++;
      lastStamp = receivedNs;
      received++;
    }
    if (received === total) done();
  });
  await engine.start();
  try {
    const payloads: Uint8Array[] = [];
    for (let seq = 0; seq < total; seq++) {
      const p = new Uint8Array(4 + (seq % 29)).fill(seq & 0xff);
      new DataView(p.buffer).setUint32(0, seq, true);
      payloads.push(p);
    }
    for (let i = 0; i < total; i += 1000) await engine.echo(payloads.slice(i, i + 1000));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`only ${received} of ${total} echoes arrived`)), 30_000);
    });
    await Promise.race([all, timeout]).finally(() => clearTimeout(timer));
    const stats = engine.stats();
    assert.equal(received, total);
    assert.equal(bad, 0);
    assert.equal(stats.recordsIn, total);
    assert.equal(stats.recordsOut, total);
    assert.ok(stats.jsWakes >= 1);
    assert.ok(stats.jsWakes * 10 < total, `wakes ${stats.jsWakes} must be far fewer than ${total} records`);
    assert.ok(batches <= stats.jsWakes + 1000, `batches ${batches}`);
    console.log(`echo: ${total} records, ${stats.jsWakes} JS wakes, ${batches} batches, ` +
      `${stats.notifies} doorbells, ${stats.parks} parks, max duty cycle ${stats.maxCycleNs} ns`);
  } finally {
    await engine.stop();
  }
});

test('the placement report names a pinned CPU that matches the thread\'s Cpus_allowed_list', async () => {
  const engine = new Engine();
  const placement = await engine.start();
  try {
    assert.ok(placement.tid > 0);
    assert.equal(placement.pinned, true, placement.pinError);
    assert.ok(placement.cpu >= 0);
    assert.equal(cpusAllowedList(placement.tid), String(placement.cpu));
    assert.equal(placement.affinity, String(placement.cpu));
    assert.match(placement.cpuReason, /CPU \d+/);
    assert.ok(['libnuma node-local', 'first-touch'].includes(placement.memoryPolicy));
    assert.ok(['hugetlbfs-2MiB', 'transparent', 'none'].includes(placement.hugePages));
    assert.ok(placement.hugePagesReason.length > 0);
    assert.ok(['spin', 'yield', 'backoff'].includes(placement.idleStrategy));
  } finally {
    await engine.stop();
  }
});

test('a virtual device has no NUMA node and the report says so', async () => {
  const engine = new Engine({ device: 'lo' });
  const placement = await engine.start();
  await engine.stop();
  assert.equal(placement.numaNode, -1);
  assert.match(placement.numaSource, /virtual/);
});

test('stop joins the engine thread, frees the rings, and a second stop is harmless', async () => {
  const engine = new Engine();
  const { tid } = await engine.start();
  assert.equal(engine.running, true);
  assert.ok(existsSync(`/proc/self/task/${tid}`));
  await engine.stop();
  assert.equal(engine.running, false);
  // pthread_join returns a moment before the kernel unhashes the task.
  for (let i = 0; i < 100 && existsSync(`/proc/self/task/${tid}`); i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(existsSync(`/proc/self/task/${tid}`), false, 'the thread is gone');
  await engine.stop();
  await assert.rejects(engine.echo([new Uint8Array(1)]), /stopped engine/);
  assert.equal(engine.stats().running, false);
});

test('overlapping start and stop calls are serialised', async () => {
  const engine = new Engine();
  const [a, b] = await Promise.all([engine.start(), engine.start()]);
  assert.equal(a.tid, b.tid, 'the second start finds it running');
  await Promise.all([engine.stop(), engine.stop()]);
  assert.equal(engine.running, false);
  await engine.start();
  await engine.stop();
});

test('the ring ArrayBuffers are detached by stop, so stale views cannot reach freed memory', async () => {
  const native = new (loadAddon().Engine)();
  native.start();
  const rings = native.rings();
  assert.ok(rings.toEngine.byteLength > 0);
  assert.equal(native.rings().toEngine, rings.toEngine, 'the same buffer every call');
  native.stop();
  assert.equal(rings.toEngine.byteLength, 0);
  assert.equal(rings.fromEngine.byteLength, 0);
  assert.throws(() => native.rings(), /started engine/);
});

test('bad options are refused in one shape: the option, what it must be, the value given (RangeError for a number out of range, else TypeError)', () => {
  const cases: Array<[unknown, ErrorConstructor, string]> = [
    [{ idle: 'sleep' }, TypeError, "qpgate Engine: idle must be 'spin', 'yield' or 'backoff', got 'sleep'"],
    [{ toEngineCapacity: 3000 }, RangeError, 'qpgate Engine: toEngineCapacity must be a power of two from 1024 to 1073741824, got 3000'],
    [{ fromEngineCapacity: -1 }, RangeError, 'qpgate Engine: fromEngineCapacity must be an integer >= 0, got -1'],
    [{ fromEngineCapacity: '4096' }, TypeError, "qpgate Engine: fromEngineCapacity must be an integer >= 0, got '4096'"],
    [{ cpus: 'x-1' }, TypeError, "qpgate Engine: cpus must be a CPU list like '3' or '2-3,6', got 'x-1'"],
    [{ device: 42 }, TypeError, 'qpgate Engine: device must be a string, got 42'],
    [{ hugePages: 'yes' }, TypeError, "qpgate Engine: hugePages must be a boolean, got 'yes'"],
    [{ lendWhenParked: 1 }, TypeError, 'qpgate Engine: lendWhenParked must be a boolean, got 1'],
    [{ backoff: { maxParkNs: 0 } }, RangeError, 'qpgate Engine: backoff.maxParkNs must be an integer >= 1, got 0'],
    [{ backoff: { minParkNs: 5000, maxParkNs: 10 } }, RangeError, 'qpgate Engine: backoff.maxParkNs must be >= backoff.minParkNs (5000), got 10'],
    [{ idel: 'spin' }, TypeError, "qpgate Engine: unknown option 'idel' (known: device, cpus, idle, backoff, toEngineCapacity, fromEngineCapacity, hugePages, sysfsRoot, cycleThresholdNs, lendWhenParked, onWake)"],
    [{ onWake: 1 }, TypeError, 'qpgate Engine: onWake must be a function, got 1'],
    ['fast', TypeError, "qpgate Engine: options must be an object, got 'fast'"],
  ];
  const NativeEngine = loadAddon().Engine as unknown as new (o: unknown) => unknown;
  for (const [options, kind, message] of cases) {
    assert.throws(() => new NativeEngine(options), (err: unknown) => {
      assert.ok(err instanceof kind, `${kind.name} for ${JSON.stringify(options)}: ${String(err)}`);
      assert.equal(err.message, message);
      return true;
    });
  }
  assert.throws(() => new Engine({ idle: 'sleep' as 'spin' }), TypeError);
});

test('record types agree with the addon: same names, same numbers, none missing on either side', () => {
  assert.deepEqual({ ...RecordType }, { ...loadAddon().ringLayout.recordTypes });
  const record: EngineRecord = { type: 99, payload: new Uint8Array(8) };
  assert.throws(() => decodeEcho(record), TypeError);
});

test('a record handler that throws is counted and reported; the other handlers, the batch and the process go on', async () => {
  const batches: number[] = [];
  const engine = new Engine({}, (records) => batches.push(records.length));
  const seen: number[] = [];
  const reported: Array<[string, number]> = [];
  engine.onRecord(RecordType.echo, () => {
    throw new Error('handler bug');
  });
  engine.onRecord(RecordType.echo, (p) => seen.push(p[0]!));
  engine.onRecordHandlerError((err, type) => reported.push([(err as Error).message, type]));
  let uncaught: unknown;
  const onUncaught = (err: unknown): void => {
    uncaught = err;
  };
  process.on('uncaughtException', onUncaught);
  await engine.start();
  try {
    await engine.echo([Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(3)]);
    for (const end = Date.now() + 5000; seen.length < 3 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(batches.reduce((a, b) => a + b, 0), 3);
    assert.equal(engine.recordHandlerErrors, 3);
    assert.deepEqual(reported, [['handler bug', RecordType.echo], ['handler bug', RecordType.echo], ['handler bug', RecordType.echo]]);
    assert.equal(uncaught, undefined, 'nothing escaped to the process');
  } finally {
    process.off('uncaughtException', onUncaught);
    await engine.stop();
  }
});
