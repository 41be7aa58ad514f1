// The out-of-band exchange of rdma-core's ibv_rc_pingpong and ibv_ud_pingpong
// (libibverbs/examples), so `qpgate pingpong` can stand on either side of
// them. Over one TCP connection (default port 18515):
//
//   client → server   "LLLL:QQQQQQ:PPPPPP:GGGG…G\0"   (52 bytes)
//   server → client   the same, for the server's QP (written after the
//                     server has taken its QP to RTS)
//   client → server   "done\0"                         (5 bytes)
//
// LLLL is the LID (0 on RoCE), QQQQQQ the QPN and PPPPPP the first PSN, in
// lower-case hex, zero-padded; GGGG…G is the 16-byte GID as 32 hex digits in
// wire order (gid_to_wire_gid prints each big-endian 32-bit word, which is
// the bytes in order). The trailing NUL is part of the message: the C tools
// read and write sizeof msg bytes exactly.
import net from 'node:net';

export const DEFAULT_PORT = 18515;
export const DEST_MESSAGE_BYTES = 52;
const DONE = Buffer.from('done\0', 'latin1');

export interface PingpongDest {
  readonly lid: number;
  readonly qpn: number;
  readonly psn: number;
  /** IPv6 text form, e.g. '::ffff:10.77.2.2'. */
  readonly gid: string;
}

export function formatDest(dest: PingpongDest): Buffer {
  const hex = (v: number, width: number) => v.toString(16).padStart(width, '0');
  const text = `${hex(dest.lid & 0xffff, 4)}:${hex(dest.qpn & 0xffffff, 6)}:${hex(dest.psn & 0xffffff, 6)}:${gidToWire(dest.gid)}`;
  const out = Buffer.alloc(DEST_MESSAGE_BYTES);
  out.write(text, 'latin1');
  return out;
}

/** Parses what formatDest (or the C tools' sprintf) wrote; throws naming what is wrong. */
export function parseDest(message: Buffer): PingpongDest {
  const end = message.indexOf(0);
  const text = message.subarray(0, end < 0 ? message.length : end).toString('latin1');
  const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,6}):([0-9a-f]{1,6}):([0-9a-f]{32})$/i.exec(text);
  if (m === null) throw new Error(`pingpong exchange: expected "LID:QPN:PSN:GID" in hex, got ${JSON.stringify(text)}`);
  return { lid: parseInt(m[1]!, 16), qpn: parseInt(m[2]!, 16), psn: parseInt(m[3]!, 16), gid: wireToGid(m[4]!) };
}

/** 16 GID bytes as 32 hex digits, in order. */
export function gidToWire(gid: string): string {
  return gidBytes(gid).toString('hex');
}

export function wireToGid(wire: string): string {
  const b = Buffer.from(wire, 'hex');
  if (b.length !== 16) throw new Error(`pingpong exchange: a GID is 32 hex digits, got ${JSON.stringify(wire)}`);
  const mapped = b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
  if (mapped) return `::ffff:${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(b.readUInt16BE(i).toString(16));
  return words.join(':');
}

function gidBytes(gid: string): Buffer {
  const out = Buffer.alloc(16);
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/i.exec(gid);
  if (v4 !== null) {
    out[10] = 0xff;
    out[11] = 0xff;
    for (let i = 0; i < 4; ++i) out[12 + i] = Number(v4[i + 1]);
    return out;
  }
  if (!net.isIPv6(gid)) throw new Error(`pingpong exchange: not a GID: ${JSON.stringify(gid)}`);
  const [head, tail] = gid.includes('::') ? gid.split('::') : [gid, undefined];
  const headWords = head === '' || head === undefined ? [] : head.split(':');
  const tailWords = tail === undefined || tail === '' ? [] : tail.split(':');
  const words = [...headWords, ...Array<string>(8 - headWords.length - tailWords.length).fill('0'), ...tailWords];
  words.forEach((w, i) => out.writeUInt16BE(parseInt(w, 16), i * 2));
  return out;
}

/** Reads exactly `n` bytes (the C tools' single read() of sizeof msg; TCP may split it). */
function readExactly(socket: net.Socket, n: number, what: string, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const timer = setTimeout(() => finish(new Error(`pingpong exchange: timed out waiting for ${what}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      have += chunk.length;
      if (have < n) return;
      const all = Buffer.concat(chunks);
      if (have > n) socket.unshift(all.subarray(n));
      finish(undefined, all.subarray(0, n));
    };
    const onEnd = () => finish(new Error(`pingpong exchange: the peer closed the connection before ${what} (${have} of ${n} bytes)`));
    const onError = (err: Error) => finish(err);
    function finish(err?: Error, data?: Buffer) {
      clearTimeout(timer);
      socket.off('data', onData).off('end', onEnd).off('error', onError);
      socket.pause();
      if (err !== undefined) reject(err);
      else resolve(data!);
    }
    socket.on('data', onData).once('end', onEnd).once('error', onError);
    socket.resume();
  });
}

function write(socket: net.Socket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
}

/**
 * Client side (the C tools' pp_client_exch_dest): connect, send ours, read
 * the server's, send "done". The caller connects its QP afterwards.
 */
export async function clientExchange(host: string, port: number, mine: PingpongDest, timeoutMs = 30_000): Promise<PingpongDest> {
  const socket = await connectWithRetry(host, port, timeoutMs);
  try {
    await write(socket, formatDest(mine));
    const theirs = parseDest(await readExactly(socket, DEST_MESSAGE_BYTES, "the server's address", timeoutMs));
    await write(socket, DONE);
    return theirs;
  } finally {
    socket.end();
  }
}

/**
 * Server side (pp_server_exch_dest): accept one client, read its address,
 * let `connect` take our QP to RTS towards it, then send ours and wait for
 * "done" — so the client cannot send before our QP can receive.
 */
export async function serverExchange(
  port: number,
  mine: PingpongDest,
  connect: (peer: PingpongDest) => void,
  options: { host?: string; timeoutMs?: number; onListening?: (port: number) => void } = {},
): Promise<PingpongDest> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const server = net.createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: options.host ?? '0.0.0.0', exclusive: true }, () => resolve());
  });
  options.onListening?.((server.address() as net.AddressInfo).port);
  try {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`pingpong exchange: no client connected within ${timeoutMs} ms`)), timeoutMs);
      server.once('connection', (s: net.Socket) => {
        clearTimeout(timer);
        resolve(s);
      });
    });
    try {
      const peer = parseDest(await readExactly(socket, DEST_MESSAGE_BYTES, "the client's address", timeoutMs));
      connect(peer);
      await write(socket, formatDest(mine));
      const done = await readExactly(socket, DONE.length, '"done"', timeoutMs);
      if (!done.equals(DONE)) throw new Error(`pingpong exchange: expected "done", got ${JSON.stringify(done.toString('latin1'))}`);
      return peer;
    } finally {
      socket.end();
    }
  } finally {
    server.close();
  }
}

async function connectWithRetry(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  // The C client gives up at once; retrying for a while lets a script start
  // both sides without a sleep in between.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ host, port }, () => {
          s.off('error', reject);
          s.pause();
          resolve(s);
        });
        s.once('error', reject);
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ECONNREFUSED' && code !== 'ENOENT') || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
