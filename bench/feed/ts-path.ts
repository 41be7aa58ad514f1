// Path 2 of the feed benchmark: the public TS API end to end, or its Node
// dgram anchor, in one process (publisher and subscriber side by side):
//
//   --impl qpgate  encodeMessage + createPublisher().publish() on a soft
//                  device, subscribe() on another, onMessage + decode()
//   --impl qpgate-batch  the batch APIs: each pass's ticks added to one
//                  MessageBatch (encoded there) and sent with publishBatch();
//                  subscribe() with onBatch, decode(i) read in place
//   --engine thread|driven  for the qpgate impls: the engine on its own
//                  pinned thread (default), or driven from the JS thread
//                  (Engine.startDriven: no second thread, publish() runs the
//                  duty cycles inline)
//   --impl dgram   the same encodeMessage, FramePacker frames sent with a
//                  dgram socket to the multicast group, a dgram socket
//                  joined to it parsing frames (parseFrame) and decoding
//                  every message (decodeMessage)
//
// A paced sender: tick i is due at t0 + i / --rate (process.hrtime.bigint,
// CLOCK_MONOTONIC); each event-loop pass publishes every tick due, with its
// due time in the quote's exchange_time_ns, and yields (setImmediate) so
// the receive side runs. Latency = decode time - due time, recorded in an
// HdrHistogram (hdr-histogram-js), so a sender that falls behind shows the
// delay (no coordinated omission). Only ticks published after --warmup are
// measured (by publish time: an offered rate above capacity still measures
// --seconds of sending, its latency growing with the backlog). Prints one `RESULT {json}` line.
import dgram from 'node:dgram';
import * as hdr from 'hdr-histogram-js';

import { Engine } from '../../src/native/engine.js';
import { FramePacker, parseFrame } from '../../src/feed/frame.js';
import { MessageType, decodeMessage, encodeMessage, type MarketDataMessage } from '../../src/feed/messages.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { MessageBatch } from '../../src/feed/message-batch.js';
import { createPublisher, type FeedPublisher } from '../../src/feed/publisher.js';
import { subscribe } from '../../src/feed/subscriber.js';

const args = process.argv.slice(2);
function opt(name: string, def: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? (args[i + 1] as string) : def;
}
const impl = opt('impl', 'qpgate');
const engineMode = opt('engine', 'thread');
const rate = Number(opt('rate', '10000'));
const seconds = Number(opt('seconds', '1'));
const warmup = Number(opt('warmup', '0.2'));
const group = opt('group', '239.79.0.1');
const port = Number(opt('port', '24991'));
const pubAddr = opt('pub-addr', '127.79.0.1');
const subAddr = opt('sub-addr', '127.79.0.2');
if (impl !== 'qpgate' && impl !== 'qpgate-batch' && impl !== 'dgram') throw new Error('--impl qpgate|qpgate-batch|dgram');
if (!(rate > 0)) throw new Error('--rate > 0');
if (engineMode !== 'thread' && engineMode !== 'driven') throw new Error('--engine thread|driven');

const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000_000, numberOfSignificantValueDigits: 3 });
// Set when the sender starts (after the engine, devices and sockets are up).
let t0 = 0n;
let measureFrom = BigInt(Number.MAX_SAFE_INTEGER);
let end = 0n;
const intervalNs = 1e9 / rate;
let sent = 0; // measured ticks published
let received = 0;
let firstRecv = 0n;
let lastRecv = 0n;
let firstSend = 0n;
let lastSend = 0n;

// askOrderCount 1 marks a measured tick (published after the warm-up).
function tick(i: number, due: bigint, measured: boolean): MarketDataMessage {
  return {
    type: MessageType.MESSAGE_TYPE_QUOTE,
    value: {
      instrumentId: 1 + (i % 1000), bidPrice: 10_000 + i, askPrice: 10_002 + i, bidSize: 5, askSize: 7,
      askOrderCount: measured ? 1 : 0, exchangeTimeNs: Number(due),
    },
  };
}

// Every decoded tick: latency from its due time.
function onTick(m: MarketDataMessage | undefined): void {
  if (m === undefined || m.type !== MessageType.MESSAGE_TYPE_QUOTE) return;
  if (m.value.askOrderCount !== 1) return;
  const due = BigInt(Number(m.value.exchangeTimeNs ?? 0));
  const now = process.hrtime.bigint();
  histogram.recordValue(Number(now - due));
  if (received === 0) firstRecv = now;
  lastRecv = now;
  received++;
}

// Runs the paced sender; `send` publishes the ticks due in one pass.
type Due = { i: number; due: bigint; measured: boolean };
async function pace(send: (ticks: Due[]) => void): Promise<void> {
  let i = 0;
  const due: Due[] = [];
  t0 = process.hrtime.bigint();
  measureFrom = t0 + BigInt(Math.round(warmup * 1e9));
  end = measureFrom + BigInt(Math.round(seconds * 1e9));
  await new Promise<void>((resolve) => {
    const pass = (): void => {
      const now = process.hrtime.bigint();
      if (now >= end) {
        resolve();
        return;
      }
      due.length = 0;
      // Cap a pass so a sender far behind still lets the receive side run.
      while (due.length < 4096) {
        const d = t0 + BigInt(Math.round(i * intervalNs));
        if (d > now) break;
        due.push({ i, due: d, measured: now >= measureFrom });
        i++;
      }
      if (due.length > 0) {
        send(due);
        for (const t of due) {
          if (!t.measured) continue;
          if (sent === 0) firstSend = now;
          lastSend = now;
          sent++;
        }
      }
      setImmediate(pass);
    };
    pass();
  });
}

// publishBatch: the pass's ticks encoded into one reused MessageBatch (a
// full one is published and refilled; a refused one waits a turn).
async function publishBatched(pub: FeedPublisher, batch: MessageBatch, ticks: Due[]): Promise<void> {
  for (const t of ticks) {
    if (batch.add(tick(t.i, t.due, t.measured))) continue;
    while (!pub.publishBatch(1, batch)) await new Promise((r) => setImmediate(r));
    batch.clear();
    batch.add(tick(t.i, t.due, t.measured));
  }
  while (!pub.publishBatch(1, batch)) await new Promise((r) => setImmediate(r));
  batch.clear();
}

async function runQpgate(batched: boolean): Promise<Record<string, number | string>> {
  const engine = new Engine({ toEngineCapacity: 1 << 22, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  if (engineMode === 'driven') await engine.startDriven();
  else await engine.start();
  const pub = createPublisher(engine, openFeedDevice(engine, { address: pubAddr }), { channels: [{ id: 1, groupA: group }] });
  const sub = await subscribe({
    engine,
    device: { address: subAddr },
    channels: [{ id: 1, groupA: group }],
    maxFrameSize: 1024,
    recvSlots: 1024,
    ...(batched
      ? { onBatch: (b) => { for (let i = 0; i < b.length; i++) onTick(b.decode(i)); } }
      : { onMessage: (m) => onTick(m.decode()) }),
  });
  await new Promise((r) => setTimeout(r, 20));
  const batch = new MessageBatch();
  let sending = Promise.resolve();
  await pace((ticks) => {
    if (!batched) {
      pub.publish(1, ticks.map((t) => encodeMessage(tick(t.i, t.due, t.measured))));
      return;
    }
    const copy = ticks.slice(); // pace() reuses its array
    sending = sending.then(() => publishBatched(pub, batch, copy));
  });
  await sending;
  await new Promise((r) => setTimeout(r, 300));
  const ps = pub.stats();
  const ss = sub.stats();
  pub.close();
  await sub.close();
  await engine.stop();
  return { retries: ps.retries, ring_full_drops: ss.ringFullDrops };
}

async function runDgram(): Promise<Record<string, number | string>> {
  const rx = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  await new Promise<void>((r) => rx.bind(port, group, () => r()));
  rx.addMembership(group, '127.0.0.1');
  rx.setRecvBufferSize(4 << 20);
  let bad = 0;
  rx.on('message', (buf) => {
    try {
      for (const m of parseFrame(buf).messages) onTick(decodeMessage(m));
    } catch {
      bad++;
    }
  });
  const tx = dgram.createSocket({ type: 'udp4' });
  await new Promise<void>((r) => tx.bind(0, '127.0.0.1', () => r()));
  tx.setMulticastInterface('127.0.0.1');
  tx.setMulticastLoopback(true);
  tx.setSendBufferSize(4 << 20);
  const packer = new FramePacker(1024);
  const session = 1 + Math.floor(Math.random() * 0xfffffffe);
  let seq = 1n;
  let errors = 0;
  const flush = (count: number): void => {
    if (count === 0) return;
    const frame = packer.finish(seq, process.hrtime.bigint());
    seq += BigInt(count);
    tx.send(frame, port, group, (err) => {
      if (err) errors++;
    });
  };
  await pace((ticks) => {
    packer.start(1, session);
    let n = 0;
    for (const t of ticks) {
      const m = encodeMessage(tick(t.i, t.due, t.measured));
      if (packer.append(m) === 'frame_full') {
        flush(n);
        packer.start(1, session);
        n = 0;
        packer.append(m);
      }
      n++;
    }
    flush(n);
  });
  await new Promise((r) => setTimeout(r, 300));
  tx.close();
  rx.close();
  return { bad_frames: bad, send_errors: errors };
}

const extra = impl === 'dgram' ? await runDgram() : await runQpgate(impl === 'qpgate-batch');
// From the end of the warm-up: a sender that published one burst still has a window.
const sendWindow = Number(lastSend - (firstSend < measureFrom ? firstSend : measureFrom)) / 1e9;
const recvWindow = Number(lastRecv - firstRecv) / 1e9;
const us = (p: number): number => histogram.getValueAtPercentile(p) / 1000;
process.stdout.write(
  `RESULT ${JSON.stringify({
    bench: impl === 'dgram' || engineMode === 'thread' ? `feed_ts_${impl}` : `feed_ts_${impl}_driven`,
    rate,
    clock: 'CLOCK_MONOTONIC (process.hrtime.bigint)',
    sent,
    received,
    sent_per_s: sendWindow > 0 ? Math.round(sent / sendWindow) : 0,
    recv_per_s: recvWindow > 0 ? Math.round(received / recvWindow) : 0,
    loss: sent > 0 ? 1 - received / sent : 1,
    p50: us(50),
    p99: us(99),
    p999: us(99.9),
    max: histogram.maxValue / 1000,
    ...extra,
  })}\n`,
);
process.exit(0);
