// `qpgate record` → tick file → the replay source (`qpgate replay`,
// feeds.source=replay) → subscribers, and `qpgate subscribe` printing ticks
// and stats: the commands as a user runs them, against in-process gateways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { readTickFile, TickFileError, TickFileWriter } from '../../src/feed/recording.js';
import { subscribe, type FeedMessage } from '../../src/feed/subscriber.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { runCli, runProgram } from '../support/cli.js';
import { QPGATE_BIN } from '../support/paths.js';

const TOKEN = 'admin-token-record-0123456789';

function group(): string {
  return `239.79.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
}

async function gateway(feedYaml: string): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-rec-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `control:\n  tokens:\n    - {name: ops, scope: admin, token: ${TOKEN}}\norders:\n  enabled: false\nfeeds:\n${feedYaml}`);
  const config = loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`] });
  return startGateway(config, createLogger('silent'), { handleSignals: false });
}

test('a tick file keeps every field, and a cut-short file is read up to its last whole record', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-tick-'));
  const path = join(dir, 'ticks.bin');
  const w = new TickFileWriter(path);
  w.append({ channel: 1, type: 3, instrumentId: 7, key: 9, action: 2, body: Uint8Array.of(1, 2, 3), snapshot: false }, 1_000n);
  w.append({ channel: 2, type: 4, instrumentId: 8, key: 0, action: 0, body: new Uint8Array(0), snapshot: true }, 1_500n);
  w.close();
  const f = readTickFile(path);
  assert.equal(f.truncatedBytes, 0);
  assert.deepEqual(
    f.records.map((r) => ({ ...r, body: [...r.body] })),
    [
      { atNs: 0n, channel: 1, type: 3, instrumentId: 7, key: 9, action: 2, snapshot: false, body: [1, 2, 3] },
      { atNs: 500n, channel: 2, type: 4, instrumentId: 8, key: 0, action: 0, snapshot: true, body: [] },
    ],
  );
  // The recorder killed mid-write: a partial record at the end.
  const whole = readTickFile(path);
  writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from([40, 0, 0, 0, 1, 2])]));
  const cut = readTickFile(path);
  assert.equal(cut.records.length, whole.records.length);
  assert.equal(cut.truncatedBytes, 6);
  writeFileSync(path, 'not a tick file');
  assert.throws(() => readTickFile(path), (e: unknown) => e instanceof TickFileError && /not a qpgate tick file \(no QPGTICK1 header\)/.test((e as Error).message));
});

/** `qpgate subscribe --stats` on a pseudo-terminal of rows x cols (util-linux script), as the terminal received it. */
async function statsOnTerminal(url: string, rows: string, cols: string): Promise<string> {
  const cmd = `stty rows ${rows} cols ${cols}; "${process.execPath}" "${QPGATE_BIN}" subscribe --url ${url} --token ${TOKEN} --address ${freeLoopbackAddress()} --stats --seconds 2.5`;
  const r = await runProgram('script', ['-qfec', cmd, '/dev/null']);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

test('qpgate record writes a live channel, and the replay source publishes it again in order', { timeout: 120_000 }, async () => {
  const liveGroup = group();
  const live = await gateway(`  channels:\n    - {id: 1, groupA: "${liveGroup}"}\n  instruments: {count: 20}\n  synthetic: {enabled: true, ratePerSec: 3000}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-rec-out-'));
  const file = join(dir, 'ticks.bin');
  let records;
  try {
    const rec = await runCli(['record', '--url', live.url, '--token', TOKEN, '--channel', '1', '--address', freeLoopbackAddress(), '--count', '300', '--out', file]);
    assert.equal(rec.code, 0, rec.stderr);
    assert.match(rec.stdout, /^recorded \d+ messages to /m);
    assert.match(rec.stdout, /^recorded 300 messages to /m);
    records = readTickFile(file).records;
    assert.equal(records.length, 300, '--count 300 records exactly 300');
    assert.ok(records.every((r) => r.channel === 1 && r.type > 0 && !r.snapshot));
    for (let i = 1; i < records.length; i++) assert.ok(records[i]!.atNs >= records[i - 1]!.atNs, 'receive times never go back');
    // A channel the gateway does not have is refused by name.
    const bad = await runCli(['subscribe', '--url', live.url, '--token', TOKEN, '--channel', '9', '--count', '1']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /qpgate subscribe: feed "default" has no channel 9 \(it has 1\)/);
  } finally {
    await live.close();
  }

  // Replay it, looping at the recorded pace, on another gateway and group.
  const replayGroup = group();
  const replay = await gateway(`  channels:\n    - {id: 1, groupA: "${replayGroup}"}\n  source: replay\n  replay: {dir: "${dir}", file: "ticks.bin", speed: 1, loop: true}\n`);
  const got: FeedMessage[] = [];
  const sub = await subscribe({ engineOptions: {}, device: { address: freeLoopbackAddress() }, channels: [{ id: 1, groupA: replayGroup }], onMessage: (m) => got.push(m) });
  try {
    const deadline = Date.now() + 30_000;
    while (got.length < records.length + 50 && Date.now() < deadline) await sleep(20);
    assert.ok(got.length >= records.length + 50, `received ${got.length}`);
    // Joined somewhere in a loop: from there on, the file's records in order, wrapping around.
    const key = (r: { type: number; instrumentId: number; body: Uint8Array }) => `${r.type}/${r.instrumentId}/${Buffer.from(r.body).toString('hex')}`;
    const want = records.map(key);
    const first = key(got[0]!);
    const starts = want.flatMap((k, i) => (k === first ? [i] : []));
    const fits = starts.some((s) => got.every((m, j) => key(m) === want[(s + j) % want.length]));
    assert.ok(fits, 'the replay is the recording, in order, looping');
    for (let j = 1; j < got.length; j++) assert.equal(got[j]!.seq, got[j - 1]!.seq + 1n, 'one sequence, no gap');

    // qpgate subscribe prints the ticks, and --stats the rates and latency.
    const ticks = await runCli(['subscribe', '--url', replay.url, '--token', TOKEN, '--address', freeLoopbackAddress(), '--count', '20']);
    assert.equal(ticks.code, 0, ticks.stderr);
    const lines = ticks.stdout.trim().split('\n');
    assert.equal(lines.length, 20, '--count 20 prints exactly 20 lines');
    for (const l of lines) assert.match(l, /^ch 1 seq \d+ [A-Z_]+ instrument \d+ /);
    // --json: one object per line, as many as asked; --seconds takes decimals.
    const json = await runCli(['subscribe', '--url', replay.url, '--token', TOKEN, '--address', freeLoopbackAddress(), '--json', '--count', '5', '--seconds', '30.5']);
    assert.equal(json.code, 0, json.stderr);
    const objects = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { channel: number; seq: string; type: string });
    assert.equal(objects.length, 5);
    for (const o of objects) {
      assert.equal(o.channel, 1);
      assert.match(o.seq, /^\d+$/);
      assert.match(o.type, /^[A-Z_]+$/);
    }
    // A reader that goes away (| head) ends the subscription quietly, status 0.
    const piped = await runProgram('bash', ['-c', `"${process.execPath}" "${QPGATE_BIN}" subscribe --url ${replay.url} --token ${TOKEN} --address ${freeLoopbackAddress()} | head -n 2 >/dev/null; echo "\${PIPESTATUS[0]}"`]);
    assert.equal(piped.stderr, '', 'no stack trace when the pipe closes');
    assert.equal(piped.stdout.trim(), '0');
    const badOut = await runCli(['record', '--url', replay.url, '--token', TOKEN, '--count', '1', '--out', '/nonexistent-dir/ticks.bin']);
    assert.equal(badOut.code, 1);
    assert.match(badOut.stderr, /^qpgate record: cannot write \/nonexistent-dir\/ticks\.bin: ENOENT/);
    assert.equal(badOut.stderr.trim().split('\n').length, 1, 'one line, no stack');
    const zero = await runCli(['subscribe', '--url', replay.url, '--token', TOKEN, '--address', freeLoopbackAddress(), '--seconds', '0']);
    assert.equal(zero.code, 1);
    assert.equal(zero.stderr, 'qpgate subscribe: --seconds must be a number of seconds, more than 0 (1.5 is fine), got "0"\n');
    const stats = await runCli(['subscribe', '--url', replay.url, '--token', TOKEN, '--address', freeLoopbackAddress(), '--stats', '--seconds', '2']);
    assert.equal(stats.code, 0, stats.stderr);
    assert.match(stats.stdout, /\d+ s {2}\d+ msgs {2}\d+\/s {2}gaps 0 {2}dups \d+ {2}recovered 0 {2}lost 0 {2}latency p50 [\d.]+ (ns|µs|ms|s) {2}p99 [\d.]+ (ns|µs|ms|s)/);
    // On a terminal the line is rewritten in place: each render after the first moves up and erases the one before.
    const onTerminal = await statsOnTerminal(replay.url, '24', '200');
    const renders = onTerminal.split(/\r\n/).filter((l) => /msgs/.test(l));
    assert.ok(renders.length >= 2, JSON.stringify(onTerminal));
    for (const r of renders.slice(1)) assert.match(r, /\x1b\[1A\x1b\[2K\x1b\[G\d+ s {2}\d+ msgs /);
    // A terminal nobody sized (0 rows) gets plain lines rather than nothing.
    const unsized = await statsOnTerminal(replay.url, '0', '0');
    assert.match(unsized, /^\d+ s {2}\d+ msgs .*\r\n$/s);
    assert.ok(!unsized.includes('\x1b['), JSON.stringify(unsized));
  } finally {
    await sub.close();
    await replay.close();
  }
});

test('qpgate replay refuses a file that is not a tick file before starting anything', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-rec-bad-'));
  const path = join(dir, 'bad.bin');
  writeFileSync(path, 'garbage');
  const r = await runCli(['replay', path]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /qpgate replay: .*bad\.bin: not a qpgate tick file/);
  const missing = await runCli(['replay', join(dir, 'nope.bin')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /qpgate replay: ENOENT/);
});
