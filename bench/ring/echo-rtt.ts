// JS -> engine -> JS round trip through the SPSC rings: closed loop, one
// batch in flight, for batch sizes 1/16/256 and the backoff and spin idle
// strategies. Reports RTT per record (send time of its batch -> handler
// call; RTT like Aeron, not half of it), the two one-way legs using the
// engine's CLOCK_MONOTONIC receive stamp (process.hrtime is the same clock),
// and records/s.
//
//   node dist/bench/ring/echo-rtt.js [--seconds 3] [--warmup 0.5] [--json]
import { build, type Histogram } from 'hdr-histogram-js';

import { Engine, decodeEcho, type EngineRecord } from '../../src/native/engine.js';
import type { IdleStrategyName } from '../../src/native/addon.js';

interface Args {
  seconds: number;
  warmup: number;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { seconds: 3, warmup: 0.5, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--seconds') args.seconds = Number(argv[++i]);
    else if (a === '--warmup') args.warmup = Number(argv[++i]);
    else if (a === '--json') args.json = true;
    else throw new Error(`unknown argument ${a}; expected --seconds N, --warmup N, --json`);
  }
  return args;
}

const histogram = (): Histogram =>
  build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1, highestTrackableValue: 60e9 });

interface Result {
  idle: IdleStrategyName;
  batch: number;
  records: number;
  recordsPerSecond: number;
  rttUs: { p50: number; p99: number; p999: number; max: number };
  toEngineUs: { p50: number; p99: number };
  fromEngineUs: { p50: number; p99: number };
  jsWakes: number;
  doorbells: number;
  parks: number;
}

const us = (h: Histogram, q: number): number => Math.round(h.getValueAtPercentile(q) / 10) / 100;

async function run(idle: IdleStrategyName, batch: number, args: Args): Promise<Result> {
  const rtt = histogram();
  const toEngine = histogram();
  const fromEngine = histogram();
  let sentAt = 0n;
  let outstanding = 0;
  let recording = false;
  let release: () => void = () => {};
  const engine = new Engine({ idle }, (records: readonly EngineRecord[]) => {
    const now = process.hrtime.bigint();
    for (const record of records) {
      if (recording) {
        const { receivedNs } = decodeEcho(record);
        rtt.recordValue(Number(now - sentAt));
        toEngine.recordValue(Math.max(1, Number(receivedNs - sentAt)));
        fromEngine.recordValue(Math.max(1, Number(now - receivedNs)));
      }
    }
    outstanding -= records.length;
    if (outstanding === 0) release();
  });
  await engine.start();
  const payloads = Array.from({ length: batch }, () => new Uint8Array(16));
  const roundTrip = async (): Promise<void> => {
    const done = new Promise<void>((resolve) => (release = resolve));
    outstanding = batch;
    sentAt = process.hrtime.bigint();
    await engine.echo(payloads);
    await done;
  };
  const warmEnd = Date.now() + args.warmup * 1000;
  while (Date.now() < warmEnd) await roundTrip();
  const before = engine.stats();
  recording = true;
  let records = 0;
  const start = process.hrtime.bigint();
  const end = Date.now() + args.seconds * 1000;
  while (Date.now() < end) {
    await roundTrip();
    records += batch;
  }
  const elapsedS = Number(process.hrtime.bigint() - start) / 1e9;
  const after = engine.stats();
  await engine.stop();
  return {
    idle,
    batch,
    records,
    recordsPerSecond: Math.round(records / elapsedS),
    rttUs: { p50: us(rtt, 50), p99: us(rtt, 99), p999: us(rtt, 99.9), max: us(rtt, 100) },
    toEngineUs: { p50: us(toEngine, 50), p99: us(toEngine, 99) },
    fromEngineUs: { p50: us(fromEngine, 50), p99: us(fromEngine, 99) },
    jsWakes: after.jsWakes - before.jsWakes,
    doorbells: after.notifies - before.notifies,
    parks: after.parks - before.parks,
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const results: Result[] = [];
  for (const idle of ['backoff', 'spin'] as const) {
    for (const batch of [1, 16, 256]) results.push(await run(idle, batch, args));
  }
  if (args.json) {
    console.log(JSON.stringify(results, null, 2));
    return;
  }
  console.log(`echo RTT through the rings, 16 B payloads, ${args.seconds}s per row after ${args.warmup}s warm-up (us)`);
  console.log('idle     batch  records/s   RTT p50   p99   p99.9     max | JS->eng p50  p99 | eng->JS p50  p99 | wakes/batch doorbells/batch parks');
  for (const r of results) {
    const batches = r.records / r.batch;
    console.log(
      [
        r.idle.padEnd(8),
        String(r.batch).padStart(5),
        String(r.recordsPerSecond).padStart(10),
        r.rttUs.p50.toFixed(1).padStart(9),
        r.rttUs.p99.toFixed(1).padStart(6),
        r.rttUs.p999.toFixed(1).padStart(7),
        r.rttUs.max.toFixed(0).padStart(7),
        '|',
        r.toEngineUs.p50.toFixed(1).padStart(11),
        r.toEngineUs.p99.toFixed(1).padStart(5),
        '|',
        r.fromEngineUs.p50.toFixed(1).padStart(11),
        r.fromEngineUs.p99.toFixed(1).padStart(5),
        '|',
        (r.jsWakes / batches).toFixed(2).padStart(11),
        (r.doorbells / batches).toFixed(2).padStart(15),
        String(r.parks).padStart(6),
      ].join(' '),
    );
  }
}

await main();
