// Feed frames in TS: the golden vectors shared with the native tests (so TS
// and native agree byte for byte), round trips of every market-data message
// type through the generated static protobuf code, and garbage that gives a
// named error, never a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  BookAction,
  DEFAULT_FRAME_BYTES,
  FRAME_ERRORS,
  FRAME_HEADER_BYTES,
  FrameError,
  FrameFlags,
  FramePacker,
  MESSAGE_HEADER_BYTES,
  bookKey,
  encodeControlFrame,
  encodeFrame,
  parseFrame,
  tryParseFrame,
  type MessageInput,
} from '../../src/feed/frame.js';
import { BodyDecodeError, MessageType, decodeMessage, encodeMessage, int64, md, toBigInt, type MarketDataMessage } from '../../src/feed/messages.js';
import { qpgate } from '../../src/generated/qpgate.js';
import { REPO_ROOT } from '../support/paths.js';

interface GoldenFrame {
  name: string;
  flags: number;
  channel: number;
  session: number;
  firstSeq: bigint;
  sendTimeNs: bigint;
  count: number;
  bytes: Uint8Array;
  messages: Required<MessageInput>[];
}

function loadGolden(): { frames: GoldenFrame[]; bad: { error: string; bytes: Uint8Array }[] } {
  const text = readFileSync(join(REPO_ROOT, 'test/feed/golden/frames.txt'), 'utf8');
  const frames: GoldenFrame[] = [];
  const bad: { error: string; bytes: Uint8Array }[] = [];
  const unhex = (h: string): Uint8Array => (h === '-' ? new Uint8Array(0) : Uint8Array.from(Buffer.from(h, 'hex')));
  for (const line of text.split('\n')) {
    const p = line.trim().split(/\s+/);
    if (p[0] === 'frame') {
      frames.push({
        name: p[1]!,
        flags: Number(p[2]),
        channel: Number(p[3]),
        session: Number(p[4]),
        firstSeq: BigInt(p[5]!),
        sendTimeNs: BigInt(p[6]!),
        count: Number(p[7]),
        bytes: unhex(p[8]!),
        messages: [],
      });
    } else if (p[0] === 'msg') {
      frames.at(-1)!.messages.push({ type: Number(p[1]), instrumentId: Number(p[2]), key: Number(p[3]), action: Number(p[4]), body: unhex(p[5]!) });
    } else if (p[0] === 'bad') {
      bad.push({ error: p[1]!, bytes: unhex(p[2]!) });
    }
  }
  return { frames, bad };
}

test('TS parses every golden frame into the listed fields and encodes the fields into the listed bytes', () => {
  const { frames } = loadGolden();
  assert.ok(frames.length >= 5);
  for (const g of frames) {
    const f = parseFrame(g.bytes);
    assert.deepEqual(
      { ...f.header },
      { version: 1, flags: g.flags, channel: g.channel, session: g.session, firstSeq: g.firstSeq, sendTimeNs: g.sendTimeNs, messageCount: g.count, frameLength: g.bytes.length },
      g.name,
    );
    assert.equal(f.messages.length, g.messages.length);
    f.messages.forEach((m, i) => {
      const e = g.messages[i]!;
      assert.equal(m.seq, g.firstSeq + BigInt(i));
      assert.deepEqual([m.type, m.instrumentId, m.key, m.action], [e.type, e.instrumentId, e.key, e.action], `${g.name} #${i}`);
      assert.deepEqual(Buffer.from(m.body), Buffer.from(e.body));
      assert.equal(m.body.buffer, g.bytes.buffer, 'bodies are views, not copies');
    });
    const encoded =
      g.flags & (FrameFlags.HEARTBEAT | FrameFlags.END_OF_SESSION)
        ? encodeControlFrame(g.flags as 4 | 8, g.channel, g.session, g.firstSeq, g.sendTimeNs)
        : encodeFrame({ flags: g.flags, channel: g.channel, session: g.session, firstSeq: g.firstSeq, sendTimeNs: g.sendTimeNs }, g.messages);
    assert.deepEqual(Buffer.from(encoded), Buffer.from(g.bytes), g.name);
  }
});

test('TS rejects every golden bad vector with the same error name as native', () => {
  const { bad } = loadGolden();
  assert.ok(bad.length >= 10);
  for (const b of bad) {
    const r = tryParseFrame(b.bytes);
    assert.equal(r.ok, false, b.error);
    if (!r.ok) assert.equal(r.error.code, b.error);
  }
});

test('the golden live frame decodes into the instrument, quote, trade, level and halt it was built from', () => {
  const { frames } = loadGolden();
  const live = parseFrame(frames.find((f) => f.name === 'live_every_type')!.bytes);
  const [def, quote, trade, level, status] = live.messages.map((m) => decodeMessage(m)!.value);
  assert.equal((def as qpgate.marketdata.v1.InstrumentDefinition).symbol, 'ESZ6');
  assert.equal((def as qpgate.marketdata.v1.InstrumentDefinition).priceExponent, -2);
  assert.equal(toBigInt((quote as qpgate.marketdata.v1.Quote).bidPrice), 612525n);
  assert.equal((trade as qpgate.marketdata.v1.Trade).aggressorSide, md.Side.SIDE_BID);
  assert.equal((level as qpgate.marketdata.v1.BookLevelUpdate).level, 2);
  assert.equal(live.messages[3]!.key, bookKey(true, 2));
  assert.equal(live.messages[3]!.action, BookAction.MODIFY);
  assert.equal((status as qpgate.marketdata.v1.TradingStatus).status, md.TradingStatus.Status.STATUS_HALT);
});

const samples: MarketDataMessage[] = [
  { type: MessageType.MESSAGE_TYPE_HEARTBEAT, value: { nextSequence: 12345 } },
  {
    type: MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION,
    value: { instrumentId: 9, symbol: 'BTC-PERP', description: 'Bitcoin perpetual', priceExponent: -9, tickSize: 500_000_000, lotSize: 1000, currency: 'USD', channel: 3, bookDepth: 10 },
  },
  {
    type: MessageType.MESSAGE_TYPE_QUOTE,
    // A price beyond 2^53 survives exactly: int64 fields decode as Long.
    value: { instrumentId: 9, bidPrice: int64(9007199254740993n), bidSize: 5, bidOrderCount: 2, askPrice: int64(-9223372036854775808n), askSize: 1, askOrderCount: 1, exchangeTimeNs: int64(1700000000123456789n, true) },
  },
  { type: MessageType.MESSAGE_TYPE_TRADE, value: { instrumentId: 9, price: 67_000_500_000_000, size: 3, aggressorSide: md.Side.SIDE_ASK, tradeId: int64(18446744073709551615n, true) } },
  {
    type: MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE,
    value: { instrumentId: 9, action: md.BookLevelUpdate.Action.ACTION_DELETE, side: md.Side.SIDE_BID, level: 255, price: 0, size: 0, orderCount: 0 },
  },
  { type: MessageType.MESSAGE_TYPE_TRADING_STATUS, value: { instrumentId: 0, status: md.TradingStatus.Status.STATUS_RESUME, reason: 'circuit breaker lifted' } },
  { type: MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN, value: { channel: 3, session: 0xfffffffe, lastSequence: 99, messageCount: 4 } },
  { type: MessageType.MESSAGE_TYPE_SNAPSHOT_END, value: { channel: 3, session: 0xfffffffe, lastSequence: 99 } },
];

test('every message type round-trips through the generated static code inside a frame', () => {
  const inputs = samples.map(encodeMessage);
  const frame = encodeFrame({ channel: 3, session: 77, firstSeq: 1000n, sendTimeNs: 5n }, inputs, DEFAULT_FRAME_BYTES);
  const parsed = parseFrame(frame);
  assert.equal(parsed.messages.length, samples.length);
  parsed.messages.forEach((m, i) => {
    const sample = samples[i]!;
    const decoded = decodeMessage(m)!;
    assert.equal(decoded.type, sample.type);
    // Compare as JSON objects with 64-bit values as decimal strings.
    const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)));
    const typeName = MessageType[sample.type].replace('MESSAGE_TYPE_', '');
    const ctorName = typeName.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase()) as keyof typeof md;
    const ctor = md[ctorName] as unknown as { toObject(m: unknown, o: object): object; fromObject(o: object): unknown };
    const opts = { longs: String, enums: Number, defaults: false };
    assert.deepEqual(json(ctor.toObject(decoded.value, opts)), json(ctor.toObject(ctor.fromObject(sample.value), opts)), typeName);
    assert.equal(m.instrumentId, inputs[i]!.instrumentId);
  });
  assert.equal(toBigInt((decodeMessage(parsed.messages[2]!)!.value as qpgate.marketdata.v1.Quote).bidPrice), 9007199254740993n);
  assert.equal(parsed.messages[4]!.key, bookKey(false, 255));
  assert.equal(parsed.messages[4]!.action, BookAction.DELETE);
});

test('recovery messages round-trip and carry whole frames', () => {
  const rec = qpgate.recovery.v1;
  const frame = encodeFrame({ flags: FrameFlags.RETRANSMISSION, channel: 1, session: 5, firstSeq: 10n, sendTimeNs: 1n }, [encodeMessage(samples[2]!)]);
  const reply = rec.RetransmitReply.decode(
    rec.RetransmitReply.encode({ requestId: 7, status: rec.Status.STATUS_OK, channel: 1, session: 5, frames: [frame], oldestSequence: 1, nextSequence: 11 }).finish(),
  );
  assert.equal(reply.status, rec.Status.STATUS_OK);
  assert.equal(parseFrame(reply.frames[0]!).header.firstSeq, 10n);
  const gone = rec.RetransmitReply.decode(rec.RetransmitReply.encode({ status: rec.Status.STATUS_RANGE_GONE, oldestSequence: 500 }).finish());
  assert.equal(gone.status, rec.Status.STATUS_RANGE_GONE);
  const req = rec.RetransmitRequest.decode(rec.RetransmitRequest.encode({ channel: 1, session: 5, fromSequence: 3, count: 4 }).finish());
  assert.equal(toBigInt(req.fromSequence), 3n);
  const snap = rec.SnapshotRequest.decode(rec.SnapshotRequest.encode({ channel: 2, instrumentIds: [1, 2] }).finish());
  assert.deepEqual(snap.instrumentIds, [1, 2]);
});

test('the packer fills a frame, refuses what does not fit, and refuses what never fits', () => {
  const p = new FramePacker(1024);
  p.start(1, 9);
  const body = new Uint8Array(600);
  assert.equal(p.append({ type: 3, instrumentId: 1, body }), 'ok');
  assert.equal(p.append({ type: 3, instrumentId: 2, body }), 'frame_full');
  assert.equal(p.finish(1n, 0n).length, FRAME_HEADER_BYTES + MESSAGE_HEADER_BYTES + 600);
  p.start(1, 9);
  assert.equal(p.append({ type: 3, instrumentId: 1, body: new Uint8Array(p.maxBodyBytes + 1) }), 'too_large');
  assert.equal(p.append({ type: 0, instrumentId: 1, body }), 'bad_type');
  assert.throws(() => new FramePacker(4097), RangeError);
  assert.throws(() => encodeFrame({ channel: 1, session: 1, firstSeq: 1n, sendTimeNs: 0n }, [{ type: 3, instrumentId: 1, body: new Uint8Array(5000) }]), /too_large/);
});

test('garbage bytes give a named FrameError or a BodyDecodeError, never a crash', () => {
  let seed = 12345;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
  const base = encodeFrame({ channel: 3, session: 77, firstSeq: 1n, sendTimeNs: 5n }, samples.map(encodeMessage));
  const codes = new Set<string>();
  for (let i = 0; i < 20000; i++) {
    let buf: Uint8Array;
    if (i % 2 === 0) {
      buf = Uint8Array.from({ length: rand() % 80 }, rand);
    } else {
      buf = Uint8Array.from(base);
      for (let k = 0; k < 1 + (rand() % 4); k++) buf[rand() % buf.length] = rand();
    }
    const r = tryParseFrame(buf);
    if (!r.ok) {
      assert.ok(r.error instanceof FrameError);
      assert.ok((FRAME_ERRORS as readonly string[]).includes(r.error.code));
      codes.add(r.error.code);
      continue;
    }
    for (const m of r.frame.messages) {
      try {
        decodeMessage(m);
      } catch (e) {
        assert.ok(e instanceof BodyDecodeError, String(e));
      }
    }
  }
  assert.ok(codes.size >= 6, [...codes].join(','));
  assert.throws(() => parseFrame(new Uint8Array(3)), (e: unknown) => e instanceof FrameError && e.code === 'truncated_header' && /3 bytes/.test(e.message));
  assert.throws(() => decodeMessage({ type: 3, body: Uint8Array.from([0x0a, 0xff]) }), BodyDecodeError);
  assert.equal(decodeMessage({ type: 999, body: new Uint8Array(0) }), undefined);
});
