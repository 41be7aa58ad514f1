// The floor under any Node request/response: a bare Node `net` echo (a
// second Node process under `taskset -c <server-cpu>` writes back what it
// reads) and a client writing 32 bytes (about a NewOrder's encoding) and
// waiting for them to come back, one in flight, setNoDelay on both sides.
//
// Prints one `RESULT {json}` line (µs, HdrHistogram 3 digits).
//   node dist/bench/orders/node-tcp-echo.js [--iters 20000] [--warmup 2000] [--server-cpu 0]
import net from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { roundTripFields, roundTripHistogram } from '../common/hdr.js';
import { spawnPinnedServer } from '../common/node-child.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : def;
}
const SERVER = arg('server', '127.0.5.2');
const SIZE = 32;

async function server(): Promise<void> {
  const srv = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('data', (chunk) => socket.write(chunk));
  });
  srv.listen(0, SERVER);
  await once(srv, 'listening');
  process.stdout.write(`PORT ${(srv.address() as net.AddressInfo).port}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

async function client(): Promise<void> {
  const iters = Number(arg('iters', '20000'));
  const warmup = Number(arg('warmup', '2000'));
  const maxSeconds = Number(arg('max-seconds', '30'));
  const { child, port } = await spawnPinnedServer(fileURLToPath(import.meta.url), arg('server-cpu', '0'), ['--server', SERVER], 'echo server');
  const socket = net.connect({ port, host: SERVER, localAddress: arg('client', '127.0.5.1') });
  await once(socket, 'connect');
  socket.setNoDelay(true);
  const hist = roundTripHistogram();
  const payload = Buffer.alloc(SIZE, 7);
  let sum = 0;
  let done = 0;
  let got = 0;
  let t0 = 0n;
  const giveUp = process.hrtime.bigint() + BigInt(Math.round(maxSeconds * 1e9));
  await new Promise<void>((resolve) => {
    const send = (): void => {
      t0 = process.hrtime.bigint();
      socket.write(payload);
    };
    socket.on('data', (chunk: Buffer) => {
      got += chunk.length;
      if (got < SIZE) return;
      got -= SIZE;
      const rtt = Number(process.hrtime.bigint() - t0);
      if (done >= warmup) {
        hist.recordValue(rtt);
        sum += rtt;
      }
      done++;
      if (done === warmup + iters || (done > warmup && process.hrtime.bigint() > giveUp)) resolve();
      else send();
    });
    send();
  });
  socket.destroy();
  child.stdin.end();
  await once(child, 'exit');
  const result = {
    bench: 'node_tcp_echo',
    ...roundTripFields(hist, sum),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (arg('role', 'client') === 'server') await server();
else await client();
