// The plain Node `dgram` UDP ping-pong the soft RC SEND ping-pong is compared
// with: a client on 127.0.0.1 (connected socket) and an echo server on
// 127.0.0.2 in a second Node process (spawned under `taskset -c
// <server-cpu>`), --size bytes each way, one message in flight. RTT per
// round trip (send → 'message' callback) in an HdrHistogram (3 digits),
// after --warmup round trips. Prints one `RESULT {json}` line.
//
//   node dist/bench/transport/node-pingpong.js [--size 64] [--iters 100000]
//        [--warmup 10000] [--server-cpu 0]
import dgram from 'node:dgram';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { build } from 'hdr-histogram-js';
import { spawnPinnedServer } from '../common/node-child.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : def;
}

async function server(): Promise<void> {
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    if (msg.length === 1 && msg[0] === 0x51) {
      sock.close();
      return;
    }
    sock.send(msg, rinfo.port, rinfo.address);
  });
  sock.bind(0, arg('server', '127.0.0.2'));
  await once(sock, 'listening');
  process.stdout.write(`PORT ${sock.address().port}\n`);
}

async function client(): Promise<void> {
  const size = Number(arg('size', '64'));
  const iters = Number(arg('iters', '100000'));
  const warmup = Number(arg('warmup', '10000'));
  const { child, port } = await spawnPinnedServer(fileURLToPath(import.meta.url), arg('server-cpu', '0'), [], 'echo server');

  const sock = dgram.createSocket('udp4');
  sock.bind(0, arg('client', '127.0.0.1'));
  await once(sock, 'listening');
  sock.connect(port, arg('server', '127.0.0.2'));
  await once(sock, 'connect');
  const hist = build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1, highestTrackableValue: 60e9 });
  const payload = Buffer.alloc(size, 0x78);
  let done = 0;
  let t0 = 0n;
  let sum = 0;
  const started = process.hrtime.bigint();
  await new Promise<void>((resolve) => {
    sock.on('message', () => {
      const rtt = Number(process.hrtime.bigint() - t0);
      if (done >= warmup) {
        hist.recordValue(rtt);
        sum += rtt;
      }
      if (++done === warmup + iters) {
        resolve();
        return;
      }
      t0 = process.hrtime.bigint();
      sock.send(payload);
    });
    t0 = process.hrtime.bigint();
    sock.send(payload);
  });
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  sock.send(Buffer.from([0x51]));
  await once(child, 'exit');
  sock.close();
  const us = (p: number): number => Number((hist.getValueAtPercentile(p) / 1000).toFixed(3));
  const result = {
    bench: 'node_pingpong',
    size,
    p50: us(50),
    p99: us(99),
    p999: us(99.9),
    max: Number((hist.maxValue / 1000).toFixed(3)),
    mean: Number((sum / iters / 1000).toFixed(3)),
    samples: hist.totalCount,
    rtt_per_s: Math.round((warmup + iters) / secs),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (arg('role', 'client') === 'server') await server();
else await client();
