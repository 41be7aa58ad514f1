// `qpgate pingpong` against itself on loopback, RC and UD: the server in a
// child process (the ping-pong loop busy-polls, as the C tools do, so two
// ends cannot share one event loop), the client in this process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';

import { runPingpong } from '../../src/pingpong/pingpong.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { QPGATE_BIN } from '../support/paths.js';

for (const transport of ['rc', 'ud'] as const) {
  test(`${transport.toUpperCase()}: 200 round trips complete and the data comes back unchanged`, { timeout: 60_000 }, async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const server = spawn(process.execPath, [QPGATE_BIN, 'pingpong', '-t', transport, '-a', freeLoopbackAddress(), '-p', String(port), '-n', '200', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    server.stdout.on('data', (d: Buffer) => (out += d.toString()));
    server.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const lines: string[] = [];
    const result = await runPingpong({ transport, address: freeLoopbackAddress(), server: '127.0.0.1', port, iters: 200, check: true, print: (l) => lines.push(l) });
    const [code] = (await once(server, 'exit')) as [number];
    assert.equal(code, 0, `${out}${err}`);
    assert.equal(result.sent, 200);
    assert.equal(result.received, 200);
    assert.equal(result.checked, true);
    assert.match(lines.join('\n'), /200 iters in [0-9.]+ seconds = [0-9.]+ usec\/iter/);
    // --json: the result alone on stdout (one JSON document), the C tools' lines on stderr.
    const serverResult = JSON.parse(out) as { sent: number; received: number; counters: Record<string, number> };
    assert.match(err, /^  local address: /m);
    assert.equal(serverResult.sent, 200);
    assert.equal(serverResult.received, 200);
    // Both ends are qpgate: every packet carries IPv4 ID 0, so every ICRC was verified.
    assert.equal(serverResult.counters['ingress.icrc_unverifiable'], 0);
    assert.equal(serverResult.counters['wire.icrc_mismatch'], 0);
  });
}

test('a UD message larger than the MTU is refused before anything is opened', async () => {
  await assert.rejects(runPingpong({ transport: 'ud', address: '127.0.0.1', size: 2048, mtu: 1024 }), /a UD message cannot exceed the MTU \(2048 > 1024\)/);
});
