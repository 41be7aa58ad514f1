// The plain Node `dgram` multicast publish/subscribe the soft UD multicast is
// compared with. The publisher (this process) spawns --subs subscriber
// processes under `taskset -c <sub-cpu>`; subscribers join --group on
// interface 127.0.0.1 (SO_RCVBUF 4 MiB), the publisher sets
// IP_MULTICAST_IF 127.0.0.1 + loopback and sends --datagram-byte datagrams
// (a sequence number in the first 8 bytes, a fresh Buffer each) as fast as
// it can for --seconds, in bursts of 64 send() calls per setImmediate.
// Subscribers count datagrams and sequence gaps. Prints one `RESULT {json}` line.
//
//   node dist/bench/transport/node-mcast.js [--subs 1] [--datagram 88]
//        [--seconds 2] [--sub-cpu 0] [--group 239.77.2.1] [--port 24791]
import dgram from 'node:dgram';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Readable, Writable } from 'node:stream';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : def;
}

const group = arg('group', '239.77.2.1');
const port = Number(arg('port', '24791'));

interface SubReport {
  received: number;
  gaps: number;
  firstNs: number;
  lastNs: number;
}

async function subscriber(): Promise<void> {
  const sock = dgram.createSocket({ type: 'udp4', reuseAddr: true, recvBufferSize: 4 << 20 });
  const r: SubReport = { received: 0, gaps: 0, firstNs: 0, lastNs: 0 };
  let expect = 0;
  sock.on('message', (msg) => {
    const t = Number(process.hrtime.bigint());
    if (r.received === 0) r.firstNs = t;
    r.lastNs = t;
    r.received++;
    const seq = msg.readUInt32LE(0) + msg.readUInt32LE(4) * 2 ** 32;
    if (seq > expect) r.gaps += seq - expect;
    if (seq + 1 > expect) expect = seq + 1;
  });
  sock.bind(port, group);
  await once(sock, 'listening');
  sock.addMembership(group, '127.0.0.1');
  process.stdout.write('READY\n');
  process.stdin.once('data', () => {
    process.stdout.write(`SUB ${JSON.stringify(r)}\n`);
    sock.close();
    process.stdin.destroy();
  });
}

async function publisher(): Promise<void> {
  const subs = Number(arg('subs', '1'));
  const datagram = Number(arg('datagram', '88'));
  const seconds = Number(arg('seconds', '2'));
  const subCpu = arg('sub-cpu', '0');
  const self = fileURLToPath(import.meta.url);
  const kids: ChildProcessByStdio<Writable, Readable, null>[] = [];
  const reports: Promise<SubReport>[] = [];
  const readies: Promise<void>[] = [];
  for (let i = 0; i < subs; i++) {
    const child = spawn(
      'taskset',
      ['-c', subCpu, process.execPath, self, '--role', 'sub', '--group', group, '--port', String(port)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    kids.push(child);
    let text = '';
    readies.push(
      new Promise((resolve) => {
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('READY')) resolve();
        });
      }),
    );
    reports.push(
      new Promise((resolve, reject) => {
        child.on('exit', (code) => {
          const m = /SUB (\{.*\})/.exec(text);
          if (m) resolve(JSON.parse(m[1] as string) as SubReport);
          else reject(new Error(`subscriber exited (${code}) without a report`));
        });
      }),
    );
  }
  await Promise.all(readies);

  const sock = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 << 20 });
  sock.bind(0, '127.0.0.1');
  await once(sock, 'listening');
  sock.setMulticastInterface('127.0.0.1');
  sock.setMulticastLoopback(true);
  sock.connect(port, group);
  await once(sock, 'connect');
  let seq = 0;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(seconds * 1e9));
  await new Promise<void>((resolve) => {
    const burst = (): void => {
      for (let i = 0; i < 64; i++) {
        const b = Buffer.allocUnsafe(datagram);
        b.fill(0x6d, 8);
        b.writeUInt32LE(seq % 2 ** 32, 0);
        b.writeUInt32LE(Math.floor(seq / 2 ** 32), 4);
        sock.send(b);
        seq++;
      }
      if (process.hrtime.bigint() < end) setImmediate(burst);
      else resolve();
    };
    burst();
  });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  await new Promise((r) => setTimeout(r, 200));
  for (const k of kids) k.stdin.write('s');
  const got = await Promise.all(reports);
  sock.close();
  let rateSum = 0;
  let lossSum = 0;
  let lossMax = 0;
  for (const r of got) {
    const w = (r.lastNs - r.firstNs) / 1e9;
    rateSum += w > 0 ? r.received / w : 0;
    const loss = seq > 0 ? 1 - r.received / seq : 1;
    lossSum += loss;
    lossMax = Math.max(lossMax, loss);
  }
  const result = {
    bench: 'node_mcast',
    datagram,
    subs,
    sent: seq,
    sent_per_s: Math.round(seq / secs),
    recv_per_s_per_sub: Math.round(rateSum / subs),
    loss_mean: Number((lossSum / subs).toFixed(5)),
    loss_max: Number(lossMax.toFixed(5)),
    seconds: Number(secs.toFixed(3)),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (arg('role', 'pub') === 'sub') await subscriber();
else await publisher();
