// The plain Node TCP request/response that bench_orders_rc is compared with:
// a client (this process) with --sessions TCP connections to the Node
// gateway of node-tcp-gateway.ts (a second Node process spawned under
// `taskset -c <server-cpu>`, on 127.0.5.2), sending the same NewOrders
// (buy/sell alternating at one price, accounts 2k+1/2k+2) encoded with the
// product's TS client code (src/orders/messages.ts), each a u32 LE length +
// OrderMessage frame, and decoding every answer.
//
//   --mode pingpong    one order in flight, round robin over the sessions;
//                      order written -> its Ack decoded, in an HdrHistogram
//                      (3 digits) after --warmup orders; capped by --max-seconds
//   --mode throughput  up to --window orders in flight for --seconds after a
//                      0.2 s warm-up: Acks/s and post -> Ack under load
//
// Prints one `RESULT {json}` line.
//   node dist/bench/orders/node-tcp-orders.js [--mode pingpong] [--sessions 1]
//        [--iters 20000] [--warmup 2000] [--server-cpu 0]
import net from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'hdr-histogram-js';
import { spawnPinnedServer } from '../common/node-child.js';
import { decodeGatewayMessage, encodeHello, encodeRequest, Side } from '../../src/orders/messages.js';
import { NodeTcpGateway } from './node-tcp-gateway.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : def;
}
const SERVER = arg('server', '127.0.5.2');

async function server(): Promise<void> {
  const gw = new NodeTcpGateway(path.join(tmpdir(), `bench-orders-node-${process.pid}.journal`));
  gw.server.listen(0, SERVER);
  await once(gw.server, 'listening');
  process.stdout.write(`PORT ${(gw.server.address() as net.AddressInfo).port}\n`);
  // The client closes stdin when it is done.
  process.stdin.resume();
  process.stdin.on('end', () => {
    gw.close();
    process.exit(0);
  });
}

type OnAck = (session: number, clientOrderId: bigint) => void;

// One session: its socket, its answers framed and decoded.
class TcpSession {
  private held = Buffer.alloc(0);
  private lastClid = 0n;
  welcomed = false;
  fills = 0;
  onAck: OnAck = () => {};

  constructor(
    readonly index: number,
    readonly socket: net.Socket,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  send(bytes: Uint8Array): void {
    const frame = Buffer.allocUnsafe(4 + bytes.length);
    frame.writeUInt32LE(bytes.length, 0);
    frame.set(bytes, 4);
    this.socket.write(frame);
  }

  sendOrder(): bigint {
    const clid = ++this.lastClid;
    const buy = (clid & 1n) === 1n;
    this.send(
      encodeRequest({
        kind: 'newOrder',
        value: {
          clientOrderId: clid,
          instrumentId: 1,
          side: buy ? Side.SIDE_BUY : Side.SIDE_SELL,
          price: 100,
          quantity: 10,
          account: 2 * this.index + (buy ? 1 : 2),
        },
      }),
    );
    return clid;
  }

  private onData(chunk: Buffer): void {
    const buf = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    let at = 0;
    while (buf.length - at >= 4) {
      const n = buf.readUInt32LE(at);
      if (buf.length - at - 4 < n) break;
      const m = decodeGatewayMessage(buf.subarray(at + 4, at + 4 + n));
      at += 4 + n;
      if (m.kind === 'ack') this.onAck(this.index, m.clientOrderId);
      else if (m.kind === 'fill') this.fills++;
      else if (m.kind === 'welcome') this.welcomed = true;
      else throw new Error(`session ${this.index + 1}: unexpected ${m.kind} ${JSON.stringify(m, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
    }
    this.held = at < buf.length ? Buffer.from(buf.subarray(at)) : Buffer.alloc(0);
  }
}

async function client(): Promise<void> {
  const mode = arg('mode', 'pingpong');
  const sessions = Number(arg('sessions', '1'));
  const iters = Number(arg('iters', '20000'));
  const warmup = Number(arg('warmup', '2000'));
  const maxSeconds = Number(arg('max-seconds', '30'));
  const seconds = Number(arg('seconds', '2'));
  const window = Number(arg('window', '64'));
  const { child, port } = await spawnPinnedServer(fileURLToPath(import.meta.url), arg('server-cpu', '0'), ['--server', SERVER], 'gateway');

  // Connections in order: the gateway numbers sessions by accept order.
  const all: TcpSession[] = [];
  for (let i = 0; i < sessions; i++) {
    const socket = net.connect({ port, host: SERVER, localAddress: arg('client', '127.0.5.1') });
    await once(socket, 'connect');
    const s = new TcpSession(i, socket);
    all.push(s);
    s.send(encodeHello(0n));
    while (!s.welcomed) await once(socket, 'data');
  }

  const hist = build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1, highestTrackableValue: 60e9 });
  let sum = 0;
  let measured = 0;
  let measuredSeconds = 0;
  if (mode === 'pingpong') {
    let done = 0;
    let t0 = 0n;
    let waitingFor = 0n;
    let measuredFrom = process.hrtime.bigint();
    const giveUp = measuredFrom + BigInt(Math.round(maxSeconds * 1e9));
    await new Promise<void>((resolve) => {
      const next = (): void => {
        if (done === warmup) measuredFrom = process.hrtime.bigint();
        if (done === warmup + iters || (done > warmup && process.hrtime.bigint() > giveUp)) {
          resolve();
          return;
        }
        const s = all[done % sessions] as TcpSession;
        t0 = process.hrtime.bigint();
        waitingFor = s.sendOrder();
      };
      for (const s of all) {
        s.onAck = (session, clid): void => {
          if (session !== done % sessions || clid !== waitingFor) return;
          const rtt = Number(process.hrtime.bigint() - t0);
          if (done >= warmup) {
            hist.recordValue(rtt);
            sum += rtt;
            measured++;
          }
          done++;
          next();
        };
      }
      next();
    });
    measuredSeconds = Number(process.hrtime.bigint() - measuredFrom) / 1e9;
  } else {
    const sentAt = all.map(() => new Map<bigint, bigint>());
    const perSession = Math.max(1, Math.floor(window / sessions));
    const warmEnd = process.hrtime.bigint() + 200_000_000n;
    const end = warmEnd + BigInt(Math.round(seconds * 1e9));
    await new Promise<void>((resolve) => {
      const top = (s: TcpSession): void => {
        const m = sentAt[s.index] as Map<bigint, bigint>;
        while (m.size < perSession) m.set(s.sendOrder(), process.hrtime.bigint());
      };
      for (const s of all) {
        s.onAck = (session, clid): void => {
          const m = sentAt[session] as Map<bigint, bigint>;
          const now = process.hrtime.bigint();
          const t = m.get(clid) as bigint;
          m.delete(clid);
          if (now >= end) {
            if ([...sentAt].every((x) => x.size === 0)) resolve();
            return;
          }
          if (now >= warmEnd) {
            hist.recordValue(Number(now - t));
            sum += Number(now - t);
            measured++;
          }
          top(s);
        };
        top(s);
      }
    });
    measuredSeconds = seconds;
  }
  for (const s of all) s.socket.destroy();
  child.stdin.end();
  await once(child, 'exit');
  const us = (p: number): number => Number((hist.getValueAtPercentile(p) / 1000).toFixed(3));
  const result = {
    bench: `node_tcp_${mode}`,
    sessions,
    window: mode === 'pingpong' ? 1 : window,
    p50: us(50),
    p99: us(99),
    p999: us(99.9),
    max: Number((hist.maxValue / 1000).toFixed(3)),
    mean: Number((sum / Math.max(1, measured) / 1000).toFixed(3)),
    samples: hist.totalCount,
    orders_per_s: Math.round(measured / measuredSeconds),
    fills: all.reduce((n, s) => n + s.fills, 0),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (arg('role', 'client') === 'server') await server();
else await client();
