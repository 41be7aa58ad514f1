// A feed's memory: reserved (allocated and touched) on the JS thread before
// the engine takes it, so adding channels costs the engine's duty cycle only
// a hand-off; reported per channel; refused cleanly, the process and the
// engine alive, when the host cannot give it; and an exception in an engine
// task is the caller's error, never the end of the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { freemem } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { highestValueAtIndex } from '../../src/native/latency-counts.js';
import { throwOnEngine } from '../../src/native/testing/engine-faults.js';
import { resolveFeedsConfig } from '../../src/feed/config.js';
import { channelReservedBytes, feedReservedBytes } from '../../src/feed/memory.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { createPublisher } from '../../src/feed/publisher.js';

const GiB = 2 ** 30;
// The engine counts a duty cycle longer than this (cyclesOverThreshold). The
// add used to take 0.3 s a channel on the engine thread (8 channels: 2.7 s).
const STALL_NS = 50_000_000;

async function engine(): Promise<Engine> {
  const e = new Engine({ hugePages: false, idle: 'backoff', cycleThresholdNs: STALL_NS });
  await e.start();
  return e;
}

/** The longest duty cycle between two copies of the engine's cycle-time counts, ns (0: none). */
function longestCycle(before: Float64Array, after: Float64Array): number {
  for (let i = after.length - 1; i >= 0; i--) if (after[i]! > before[i]!) return highestValueAtIndex(i);
  return 0;
}

const channels = (n: number, net: number, extra: object = {}) =>
  Array.from({ length: n }, (_, i) => ({ id: i + 1, groupA: `239.79.${net}.${i + 1}`, ...extra }));

test('adding 8 channels of the default size stalls the engine for no duty cycle: the memory is reserved off the engine thread', async (t) => {
  const e = await engine();
  try {
    const dev = openFeedDevice(e, { address: '127.79.1.1' });
    await sleep(50);
    const over = e.stats().cyclesOverThreshold;
    const counts = e.cycleTimeCounts();
    const rss = process.memoryUsage().rss;
    const pub = createPublisher(e, dev, { channels: channels(8, 1) });
    await sleep(50);
    assert.equal(e.stats().cyclesOverThreshold - over, 0, 'a duty cycle over 50 ms while the channels were added');
    const longest = longestCycle(counts, e.cycleTimeCounts());
    const grew = process.memoryUsage().rss - rss;
    t.diagnostic(`longest duty cycle while adding 8 channels: ${(longest / 1e6).toFixed(3)} ms; RSS +${(grew / 2 ** 20).toFixed(0)} MiB`);
    assert.ok(longest < STALL_NS, `longest cycle ${longest} ns`);
    // The memory was really reserved (and touched) when createPublisher returned.
    const reserved = pub.stats().reservedBytes;
    assert.ok(grew > 0.9 * reserved, `RSS grew ${grew} B for ${reserved} B reserved`);
    pub.close();
  } finally {
    e.stop();
  }
});

test('each channel reports what it reserved, as the config arithmetic (src/feed/memory.ts) says', async () => {
  const e = await engine();
  try {
    const cfg = resolveFeedsConfig({
      channels: [
        { id: 1, groupA: '239.79.2.1', ring: { frames: 1000, bytes: 300_000 }, snapshotSlots: 77 },
        { id: 2, groupA: '239.79.2.2', frameSize: 2000, ring: { frames: 4096, bytes: 1 << 20 }, snapshotSlots: 1024 },
      ],
      sendSlots: 64,
    });
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.79.2.1' }), { channels: cfg.channels, sendSlots: cfg.sendSlots });
    const s = pub.stats();
    assert.deepEqual(s.channels.map((c) => c.reservedBytes), cfg.channels.map(channelReservedBytes));
    assert.equal(s.reservedBytes, feedReservedBytes(cfg));
    assert.equal(s.channels[0]!.reservedBytes, 300_000 + 16 * 1000 + 64 + 256 * 77 + 256 + 16 * 256);  // index: 2 × 77 → 256 entries
    pub.close();
  } finally {
    e.stop();
  }
});

test('a feed larger than the memory the host has is refused before anything is allocated; the engine goes on', async () => {
  const e = await engine();
  try {
    const dev = openFeedDevice(e, { address: '127.79.3.1' });
    const n = Math.ceil(freemem() / (2 * GiB)) + 2;
    const rss = process.memoryUsage().rss;
    assert.throws(
      () => createPublisher(e, dev, { channels: channels(n, 3, { ring: { frames: 65536, bytes: 2 * GiB - 1 } }) }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'ENOMEM');
        assert.match(err.message, /^feed publisher: reserving \d+\.\d GiB but the host has \d+\.\d GiB available \(MemAvailable, cgroup memory\.max\)$/);
        return true;
      },
    );
    assert.ok(process.memoryUsage().rss - rss < 64 * 2 ** 20, 'nothing was reserved');
    const pub = createPublisher(e, dev, { channels: channels(1, 3, { ring: { frames: 64, bytes: 65536 }, snapshotSlots: 64 }) });
    assert.ok(pub.session > 0);
    pub.close();
  } finally {
    e.stop();
  }
});

test('an allocation that fails while reserving (ulimit -v) is refused by name and the process lives on', () => {
  // A child under a virtual memory limit: the host has the memory, the process may not map it.
  const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const script = `
    const { Engine } = await import(${JSON.stringify(`${dist}/src/native/engine.js`)});
    const { openFeedDevice } = await import(${JSON.stringify(`${dist}/src/feed/native.js`)});
    const { createPublisher } = await import(${JSON.stringify(`${dist}/src/feed/publisher.js`)});
    const e = new Engine({ hugePages: false, idle: 'backoff' });
    await e.start();
    const dev = openFeedDevice(e, { address: '127.79.4.1' });
    try {
      createPublisher(e, dev, { channels: [1, 2, 3, 4].map((id) => ({ id, groupA: '239.79.4.' + id, ring: { frames: 65536, bytes: 2 ** 31 - 1 } })) });
      console.log('created');
    } catch (err) {
      console.log(err.code + ' ' + err.message);
    }
    const pub = createPublisher(e, dev, { channels: [{ id: 9, groupA: '239.79.4.9', ring: { frames: 64, bytes: 65536 }, snapshotSlots: 64 }] });
    console.log('alive ' + e.running + ' ' + (pub.session > 0));
    pub.close();
    e.stop();
  `;
  const r = spawnSync('bash', ['-c', `ulimit -v 3000000 && exec "${process.execPath}" --input-type=module -e "$0"`, script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `exit ${r.status} signal ${r.signal}: ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0]!, /^ENOMEM feed publisher: channel \d: the retransmission ring: out of memory reserving 2\.0 GiB \(std::bad_alloc\)$/);
  assert.equal(lines[1], 'alive true true');
});

test('a task that throws on the engine thread fails its caller with the message, is counted, and the engine goes on', async () => {
  const e = await engine();
  try {
    assert.throws(() => throwOnEngine(e, 'bad_alloc'), (err: Error & { code?: string }) => {
      assert.equal(err.message, 'engine task: out of memory (std::bad_alloc)');
      assert.equal(err.code, 'ENOMEM');
      return true;
    });
    assert.throws(() => throwOnEngine(e, 'runtime_error'), { message: 'engine task: a task failed on purpose' });
    assert.throws(() => throwOnEngine(e, 'other'), { message: 'engine task: an exception that is not a std::exception' });
    const s = e.stats();
    assert.equal(s.taskErrors, 3);
    assert.equal(s.agentsStopped, 0);
    assert.equal(s.running, true);
    // Still serving: a publisher is made and runs.
    const pub = createPublisher(e, openFeedDevice(e, { address: '127.79.5.1' }), { channels: channels(1, 5, { ring: { frames: 64, bytes: 65536 }, snapshotSlots: 64 }) });
    const cycles = e.stats().dutyCycles;
    await sleep(20);
    assert.ok(e.stats().dutyCycles > cycles);
    pub.close();
  } finally {
    e.stop();
  }
});
