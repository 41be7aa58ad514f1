// `qpgate subscribe` shows prices with their instrument's exponent, learnt
// from the instrument's definition: before it a price is its mantissa and
// "e?", after it an exact decimal; --json keeps the mantissas exact (decimal
// strings) with the exponent beside them. The gateway replays a tick file in a
// loop (a definition, then quotes), so every run sees the definition go by.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { encodeMessage, int64, MessageType } from '../../src/feed/messages.js';
import { TickFileWriter } from '../../src/feed/recording.js';
import { formatPrice } from '../../src/feed/tick-format.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';
import { runCli, type CliResult } from '../support/cli.js';
import { freeLoopbackAddress } from '../support/loopback.js';

const TOKEN = 'feed-token-prices-0123456789';
const INT64_MAX = '9223372036854775807';

/** One definition of instrument 7 (exponent -2, tick 25), then nine quotes, 1 ms apart. */
function tickFile(dir: string): void {
  const w = new TickFileWriter(join(dir, 'prices.bin'));
  const put = (m: ReturnType<typeof encodeMessage>, i: number) => w.append({ channel: 1, key: 0, action: 0, snapshot: false, ...m }, BigInt(i) * 1_000_000n);
  put(encodeMessage({ type: MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION, value: { instrumentId: 7, symbol: 'SYN7', priceExponent: -2, tickSize: 25, lotSize: 1, currency: 'USD', channel: 1, bookDepth: 5 } }), 0);
  for (let i = 1; i < 10; i++) {
    put(encodeMessage({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 7, bidPrice: 10125, bidSize: 3, bidOrderCount: 2, askPrice: int64(INT64_MAX), askSize: 4, askOrderCount: 1 } }), i);
  }
  w.close();
}

async function gateway(): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-prices-'));
  tickFile(dir);
  const file = join(dir, 'config.yaml');
  const group = `239.80.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  writeFileSync(
    file,
    `control:\n  tokens:\n    - {name: feedapp, scope: read, token: ${TOKEN}}\norders:\n  enabled: false\n` +
      `feeds:\n  channels:\n    - {id: 1, groupA: "${group}"}\n  source: replay\n  replay: {dir: "${dir}", file: "prices.bin", speed: 1, loop: true}\n`,
  );
  const config = loadConfig({ env: {}, file, overrides: ['control.port=0', `state.dir=${dir}`, `backend.address=${freeLoopbackAddress()}`] });
  return startGateway(config, createLogger('silent'), { handleSignals: false });
}

function subscribeCli(gw: Gateway, extra: string[]): Promise<CliResult> {
  return runCli(['subscribe', '--url', gw.url, '--token', TOKEN, '--address', freeLoopbackAddress(), '--count', '40', ...extra]);
}

test('a price is its mantissa × 10^exponent, exact at any size', () => {
  assert.equal(formatPrice(10125n, -2), '101.25');
  assert.equal(formatPrice(5n, -3), '0.005');
  assert.equal(formatPrice(-5n, -3), '-0.005');
  assert.equal(formatPrice(-10125n, -2), '-101.25');
  assert.equal(formatPrice(7n, 2), '700');
  assert.equal(formatPrice(0n, -9), '0.000000000');
  assert.equal(formatPrice(9223372036854775807n, -9), '9223372036.854775807', 'int64 max: no float on the way');
});

test('qpgate subscribe prints a price with its exponent once the definition went by, and --json keeps exact integers', { timeout: 120_000 }, async () => {
  const gw = await gateway();
  try {
    const text = await subscribeCli(gw, []);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 40);
    let defined = false;
    let decimals = 0;
    for (const l of lines) {
      if (/ INSTRUMENT_DEFINITION /.test(l)) {
        assert.match(l, /^ch 1 seq \d+ INSTRUMENT_DEFINITION instrument 7 SYN7 price exponent -2, tick 0\.25, lot 1 USD, depth 5$/);
        defined = true;
      } else if (defined) {
        assert.match(l, /^ch 1 seq \d+ QUOTE instrument 7 bid 3 @ 101\.25 \(2\) ask 4 @ 92233720368547758\.07 \(1\)$/, 'exact at int64 max');
        decimals++;
      } else {
        assert.match(l, /^ch 1 seq \d+ QUOTE instrument 7 bid 3 @ 10125e\? \(2\) ask 4 @ 9223372036854775807e\? \(1\)$/, 'the mantissa until the exponent is known');
      }
    }
    assert.ok(decimals > 0, text.stdout);

    const json = await subscribeCli(gw, ['--json']);
    assert.equal(json.code, 0, json.stderr);
    let exponent: number | null = null;
    for (const l of json.stdout.trimEnd().split('\n')) {
      const o = JSON.parse(l) as { type: string; priceExponent?: number | null; body: Record<string, unknown> };
      if (o.type === 'INSTRUMENT_DEFINITION') {
        assert.equal(o.body['priceExponent'], -2);
        assert.equal(o.body['tickSize'], '25', 'an int64 field is a decimal string');
        exponent = -2;
        continue;
      }
      assert.equal(o.priceExponent, exponent, l);
      assert.equal(o.body['bidPrice'], '10125');
      assert.equal(o.body['askPrice'], INT64_MAX, 'the mantissa, exact');
    }
    assert.equal(exponent, -2, json.stdout);
  } finally {
    await gw.close();
  }
});
