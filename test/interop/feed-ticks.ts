// What the guest tests' gateway publishes, and the check that a subscriber
// got it byte for byte. The gateway's feed is the replay source (a looped
// tick file, src/feed/sources/replay.ts) so that what it published is known:
// TICKS distinct trades (trade_id = index + 1) on channel 1, one every
// SPACING_MS. A subscriber's `qpgate record` file, its snapshot records left
// out, must be one window of that loop: each record's header fields and
// protobuf body equal to the published record's, every one in turn, none
// missing (a frame lost on the wire and not recovered over RC breaks the run).
//
//   node dist/test/interop/feed-ticks.js write FILE   (the guest scripts, before the gateway starts)
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import { encodeMessage, md, MessageType } from '../../src/feed/messages.js';
import { parseTickFile, TickFileWriter, type TickRecord } from '../../src/feed/recording.js';

export const TICKS = 400;
const SPACING_MS = 20n;

/** The published loop: TICKS trades on 8 instruments, each distinct. */
export function writeReplayTicks(path: string): void {
  const w = new TickFileWriter(path);
  for (let i = 0; i < TICKS; i++) {
    const m = encodeMessage({
      type: MessageType.MESSAGE_TYPE_TRADE,
      value: md.Trade.create({ instrumentId: 1 + (i % 8), price: 10_000 + i, size: 1 + (i % 7), tradeId: i + 1, aggressorSide: 1 + (i % 2) }),
    });
    w.append({ channel: 1, ...m, snapshot: false }, BigInt(i) * SPACING_MS * 1_000_000n);
  }
  w.close();
}

export interface WindowCheck {
  /** Live records received (snapshot records left out). */
  live: number;
  /** Index in the published loop of the first one. */
  firstIndex: number;
  /** Times the received window passed the loop's end. */
  wraps: number;
}

const fields = (r: TickRecord) => `channel ${r.channel} type ${r.type} instrument ${r.instrumentId} key ${r.key} action ${r.action} body ${Buffer.from(r.body).toString('hex')}`;

/**
 * Throws unless the recording is one unbroken window of the published loop,
 * each record equal to the published one (both: tick files, in base64).
 */
export function checkFeedWindow(publishedBase64: string, recordingBase64: string): WindowCheck {
  const published = parseTickFile(Buffer.from(publishedBase64, 'base64'), 'the published loop').records;
  const received = parseTickFile(Buffer.from(recordingBase64, 'base64'), 'the recording').records.filter((r) => !r.snapshot);
  if (received.length === 0) throw new Error('the recording has no live records');
  const first = fields(received[0]!);
  const firstIndex = published.findIndex((p) => fields(p) === first);
  if (firstIndex < 0) throw new Error(`the first live record was never published: ${first}`);
  received.forEach((r, i) => {
    const want = published[(firstIndex + i) % published.length]!;
    if (fields(r) !== fields(want)) {
      throw new Error(`live record ${i} (published index ${(firstIndex + i) % published.length}) differs:\n  got  ${fields(r)}\n  want ${fields(want)}`);
    }
  });
  return { live: received.length, firstIndex, wraps: Math.floor((firstIndex + received.length - 1) / published.length) };
}

export interface RecordedFeed {
  /** The tick files, base64: what the gateway replayed, what the recorder wrote. */
  readonly published: string;
  readonly recording: string;
  /** `qpgate record`'s stdout. */
  readonly sub: string;
  /** `tc -s filter show dev NETDEV ingress` after the recording (lose_feed_frames in guest-gateway.sh). */
  readonly tc: string;
}

/**
 * Asserts that a recorder of `count` messages got the published loop byte for
 * byte although tc dropped frames of line A (and every frame of line B) on
 * their way in: a dropped frame's messages can then only have come over RC,
 * from the gateway's recovery service. (Its per-session reply counters on
 * /metrics go with the session when the recorder closes it.) Returns a line
 * for the test log.
 */
export function assertRecoveredFeed(r: RecordedFeed, count: number, where: string): string {
  assert.match(r.sub, new RegExp(`^recorded ${count} messages to `), where);
  const window = checkFeedWindow(r.published, r.recording);
  assert.ok(window.live >= count - 50, `${window.live} live records of ${count} (the rest a snapshot): ${where}`);
  const lost = Number(/random type determ[\s\S]*?dropped (\d+)/.exec(r.tc)?.[1] ?? NaN);
  assert.ok(lost > 0, `tc dropped no frame of line A:\n${r.tc}`);
  return `${window.live} live records from published index ${window.firstIndex}; tc dropped ${lost} frames of line A`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [verb, file] = process.argv.slice(2);
  if (verb === undefined) {
    // `node --test dist/test/` runs every file under test/ without arguments.
    console.log('# feed-ticks: the guest scripts run it as `write FILE`; nothing to do here');
  } else if (verb !== 'write' || file === undefined) {
    process.stderr.write('usage: feed-ticks.js write FILE\n');
    process.exit(2);
  } else {
    writeReplayTicks(file);
  }
}
