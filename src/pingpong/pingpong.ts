// `qpgate pingpong`: rdma-core's ibv_rc_pingpong / ibv_ud_pingpong on the
// soft RoCEv2 backend, so either end of those tools can be qpgate and the
// other a kernel (rxe) or hardware device. The QP set-up, the exchange
// (exchange.ts) and the ping-pong loop follow the C tools step for step:
//
//   both sides post rx_depth receives; the client sends first; each side
//   sends its next message once its previous send completed and a message
//   arrived; it ends when both `iters` sends and receives completed.
//
// RC: RTR with max_dest_rd_atomic 1, min_rnr_timer 12, hop limit 1; RTS with
// timeout 14, retry_cnt 7, rnr_retry 7, max_rd_atomic 1 (as pp_connect_ctx).
// UD: Q_Key 0x11111111, receive buffers 40 bytes longer for the GRH, an
// address handle with hop limit 64, messages no larger than the path MTU.
//
// Unlike the C tools, a stalled run ends: no completion for `stallMs` fails
// with the device's drop counters (the usual cause against rxe or a NIC is
// the receive mode: their IPv4 ID is not 0, which a plain UDP socket cannot
// see, so only --receive-mode af-packet verifies their ICRC; docs/protocol.md §1.8).
import { randomInt } from 'node:crypto';

import { Engine } from '../native/engine.js';
import {
  openDevice,
  type AddressHandle,
  type CompletionQueue,
  type Device,
  type IcrcPolicy,
  type MemoryRegion,
  type PathMtu,
  type ProtectionDomain,
  type ReceiveMode,
  type QueuePair,
  type Wc,
} from '../native/verbs.js';
import { clientExchange, DEFAULT_PORT, serverExchange, type PingpongDest } from './exchange.js';

export const UD_QKEY = 0x11111111;
const GRH_BYTES = 40;
const RECV_WRID = 1n;
const SEND_WRID = 2n;

export interface PingpongOptions {
  readonly transport: 'rc' | 'ud';
  /** The soft device's IPv4 address (it must belong to an interface). */
  readonly address: string;
  /** Client mode: the server's host name or address. Server mode when absent. */
  readonly server?: string;
  readonly port?: number;
  /** Message bytes; default 4096 (rc) or 1024 (ud), as the C tools. */
  readonly size?: number;
  readonly iters?: number;
  readonly mtu?: PathMtu;
  readonly rxDepth?: number;
  /** Client: fill the buffer with a pattern first and check it came back intact after the last round trip. */
  readonly check?: boolean;
  readonly icrcPolicy?: IcrcPolicy;
  /** 'af-packet' checks the ICRC of rxe / NIC peers against their real IP header (needs CAP_NET_RAW). */
  readonly receiveMode?: ReceiveMode;
  /** Fail when nothing completes for this long (default 10 s). */
  readonly stallMs?: number;
  /** Where the C tools' lines go (default stdout). */
  readonly print?: (line: string) => void;
  /** Server: called with the TCP port once listening (tests use port 0). */
  readonly onListening?: (port: number) => void;
}

export interface PingpongResult {
  readonly local: PingpongDest;
  readonly remote: PingpongDest;
  readonly iters: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly usecPerIter: number;
  /** Sent and received SENDs (each side counts its own). */
  readonly sent: number;
  readonly received: number;
  /** Client with `check`: the pattern survived every round trip. */
  readonly checked: boolean | undefined;
  /**
   * The device's counters (`net.`, `wire.`, `ingress.`) and the QP's (`qp.`),
   * read once the QP is gone, so no packet of this run leaves after them.
   */
  readonly counters: Readonly<Record<string, number>>;
}

interface Context {
  readonly device: Device;
  readonly pd: ProtectionDomain;
  readonly cq: CompletionQueue;
  readonly buf: Buffer;
  readonly mr: MemoryRegion;
  readonly qp: QueuePair;
  ah?: AddressHandle;
}

export async function runPingpong(options: PingpongOptions): Promise<PingpongResult> {
  const transport = options.transport;
  const size = options.size ?? (transport === 'rc' ? 4096 : 1024);
  const iters = options.iters ?? 1000;
  const mtu = options.mtu ?? 1024;
  const rxDepth = options.rxDepth ?? 500;
  const port = options.port ?? DEFAULT_PORT;
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`pingpong: size must be a positive integer, got ${size}`);
  if (transport === 'ud' && size > mtu) throw new RangeError(`pingpong: a UD message cannot exceed the MTU (${size} > ${mtu})`);
  if (!Number.isInteger(iters) || iters < 1) throw new RangeError(`pingpong: iters must be a positive integer, got ${iters}`);
  if (!Number.isInteger(rxDepth) || rxDepth < 2) throw new RangeError(`pingpong: rx depth must be at least 2, got ${rxDepth}`);

  const engine = new Engine({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false });
  await engine.start();
  let ctx: Context | undefined;
  try {
    ctx = open(engine, options, transport, size, rxDepth);
    const routsStart = postRecvs(ctx, transport, size, rxDepth);
    const local: PingpongDest = { lid: 0, qpn: ctx.qp.qpNum, psn: randomInt(0, 1 << 24), gid: ctx.device.gid };
    print(`  local address:  ${describe(local)}`);
    const c = ctx;
    const connect = (peer: PingpongDest) => connectQp(c, transport, local.psn, peer, mtu);
    let remote: PingpongDest;
    if (options.server !== undefined) {
      remote = await clientExchange(options.server, port, local);
      connect(remote);
    } else {
      remote = await serverExchange(port, local, connect, {
        onListening: (p) => {
          print(`  waiting for a client on TCP port ${p}`);
          options.onListening?.(p);
        },
      });
    }
    print(`  remote address: ${describe(remote)}`);
    const pattern = options.server !== undefined && options.check === true ? fillPattern(ctx, transport, size) : undefined;
    const loop = pingpongLoop(ctx, transport, size, iters, remote, options.server !== undefined, routsStart, rxDepth, options.stallMs ?? 10_000);
    const bytes = size * iters * 2;
    const usec = loop.seconds * 1e6;
    print(`${bytes} bytes in ${loop.seconds.toFixed(2)} seconds = ${((bytes * 8) / usec).toFixed(2)} Mbit/sec`);
    print(`${iters} iters in ${loop.seconds.toFixed(2)} seconds = ${(usec / iters).toFixed(2)} usec/iter`);
    const checked = pattern === undefined ? undefined : payloadOf(ctx, transport, size).equals(pattern);
    if (checked === false) print('invalid data: the buffer that came back differs from the one sent');
    const counters = finalCounters(ctx);
    print(`  soft device counters: ${Object.entries(counters).filter(([k, v]) => v !== 0 && /icrc|drop|accepted|malformed/.test(k)).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    return { local, remote, iters, bytes, seconds: loop.seconds, usecPerIter: usec / iters, sent: loop.sent, received: loop.received, checked, counters };
  } finally {
    close(ctx);
    await engine.stop();
  }
}

function open(engine: Engine, options: PingpongOptions, transport: 'rc' | 'ud', size: number, rxDepth: number): Context {
  const device = openDevice(engine, {
    address: options.address,
    icrcPolicy: options.icrcPolicy ?? 'strict',
    receiveMode: options.receiveMode ?? 'plain-udp',
  });
  const pd = device.allocPd();
  const cq = device.createCq(rxDepth + 1);
  const buf = Buffer.alloc(transport === 'ud' ? size + GRH_BYTES : size, 0x7b);
  const mr = pd.regMr(buf, ['LOCAL_WRITE']);
  const qp = pd.createQp({
    type: transport === 'rc' ? 'RC' : 'UD',
    sendCq: cq,
    cap: { maxSendWr: 1, maxRecvWr: rxDepth, maxSendSge: 1, maxRecvSge: 1 },
  });
  if (transport === 'rc') qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: [] });
  else qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qkey: UD_QKEY });
  return { device, pd, cq, buf, mr, qp };
}

function connectQp(ctx: Context, transport: 'rc' | 'ud', psn: number, peer: PingpongDest, mtu: PathMtu): void {
  if (transport === 'rc') {
    ctx.qp.modify({
      state: 'RTR',
      pathMtu: mtu,
      destQpNum: peer.qpn,
      rqPsn: peer.psn,
      maxDestRdAtomic: 1,
      minRnrTimer: 12,
      ahAttr: { dgid: peer.gid, hopLimit: 1, sgidIndex: 0 },
    });
    ctx.qp.modify({ state: 'RTS', timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: psn, maxRdAtomic: 1 });
    return;
  }
  ctx.qp.modify({ state: 'RTR' });
  ctx.qp.modify({ state: 'RTS', sqPsn: psn });
  ctx.ah = ctx.pd.createAh({ dgid: peer.gid, hopLimit: 64, sgidIndex: 0 });
}

function postRecvs(ctx: Context, transport: 'rc' | 'ud', size: number, n: number): number {
  const length = transport === 'ud' ? size + GRH_BYTES : size;
  const wrs = Array.from({ length: n }, () => ({ wrId: RECV_WRID, sgList: [ctx.mr.sge(0, length)] }));
  return ctx.qp.postRecv(wrs);
}

function postSend(ctx: Context, transport: 'rc' | 'ud', size: number, remote: PingpongDest): void {
  if (transport === 'rc') {
    ctx.qp.postSend([{ wrId: SEND_WRID, sgList: [ctx.mr.sge(0, size)] }]);
    return;
  }
  ctx.qp.postSend([
    { wrId: SEND_WRID, sgList: [ctx.mr.sge(GRH_BYTES, size)], ah: ctx.ah!, remoteQpn: remote.qpn, remoteQkey: UD_QKEY },
  ]);
}

function pingpongLoop(
  ctx: Context,
  transport: 'rc' | 'ud',
  size: number,
  iters: number,
  remote: PingpongDest,
  client: boolean,
  routsStart: number,
  rxDepth: number,
  stallMs: number,
): { seconds: number; sent: number; received: number } {
  let routs = routsStart;
  let pending = RECV_WRID;
  if (client) {
    postSend(ctx, transport, size, remote);
    pending |= SEND_WRID;
  }
  const start = process.hrtime.bigint();
  let lastProgress = start;
  let scnt = 0;
  let rcnt = 0;
  while (rcnt < iters || scnt < iters) {
    const wcs = ctx.cq.poll(2);
    const now = process.hrtime.bigint();
    if (wcs.length === 0) {
      if (Number(now - lastProgress) / 1e6 > stallMs) throw stalled(ctx, scnt, rcnt, iters, stallMs);
      continue;
    }
    lastProgress = now;
    for (const wc of wcs) {
      failOnError(wc, scnt, rcnt);
      if (wc.wrId === SEND_WRID) ++scnt;
      else if (wc.wrId === RECV_WRID) {
        if (--routs <= 1) routs += postRecvs(ctx, transport, size, rxDepth - routs);
        ++rcnt;
      } else throw new Error(`pingpong: completion for unknown wr_id ${wc.wrId}`);
      pending &= ~wc.wrId;
      if (scnt < iters && pending === 0n) {
        postSend(ctx, transport, size, remote);
        pending = RECV_WRID | SEND_WRID;
      }
    }
  }
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, sent: scnt, received: rcnt };
}

function failOnError(wc: Wc, scnt: number, rcnt: number): void {
  if (wc.status === 'IBV_WC_SUCCESS') return;
  throw new Error(`pingpong: failed status ${wc.status} for wr_id ${wc.wrId} (after ${scnt} sends, ${rcnt} receives)`);
}

function stalled(ctx: Context, scnt: number, rcnt: number, iters: number, stallMs: number): Error {
  const counters = flatCounters(ctx.device);
  const drops = Object.entries(counters).filter(([k, v]) => v !== 0 && /icrc|drop|mismatch|malformed|unverifiable/.test(k));
  const hint =
    (counters['wire.icrc_mismatch'] ?? 0) > 0
      ? ' — packets failed the ICRC check: a peer whose IPv4 ID is not 0 (rxe, a NIC) needs --receive-mode af-packet (or --icrc count-unverifiable)'
      : '';
  return new Error(
    `pingpong: no completion for ${stallMs} ms after ${scnt}/${iters} sends and ${rcnt}/${iters} receives; ` +
      `device counters: ${drops.map(([k, v]) => `${k}=${v}`).join(' ') || 'no drops'}${hint}`,
  );
}

function fillPattern(ctx: Context, transport: 'rc' | 'ud', size: number): Buffer {
  const payload = payloadOf(ctx, transport, size);
  for (let i = 0; i < size; ++i) payload[i] = (i * 31 + 7) & 0xff;
  return Buffer.from(payload);
}

function payloadOf(ctx: Context, transport: 'rc' | 'ud', size: number): Buffer {
  return transport === 'ud' ? ctx.buf.subarray(GRH_BYTES, GRH_BYTES + size) : ctx.buf.subarray(0, size);
}

// The last packet of a run can leave after its completion: the responder
// writes the receive WC before it sends the ACK (as rxe does), and the ACK
// waits in the device's transmit queue for the next pass of the duty cycle
// (native/src/verbs/soft/soft_device.cc, DeviceCore::do_work). Destroying the
// QP and then its CQ are two engine tasks; each runs at the top of a duty
// cycle, so the pass between them has sent what the QP queued last. What the
// device counted after that is all the run sent.
function finalCounters(ctx: Context): Record<string, number> {
  const qp = ctx.qp.counters();
  ctx.ah?.destroy();
  ctx.ah = undefined;
  ctx.qp.destroy();
  ctx.cq.destroy();
  const out = flatCounters(ctx.device);
  for (const [k, v] of Object.entries(qp)) out[`qp.${k}`] = v;
  return out;
}

function flatCounters(device: Device): Record<string, number> {
  const c = device.counters();
  const out: Record<string, number> = {};
  for (const [group, values] of Object.entries(c) as Array<[string, Readonly<Record<string, number>>]>) {
    for (const [k, v] of Object.entries(values)) out[`${group}.${k}`] = v;
  }
  return out;
}

function describe(d: PingpongDest): string {
  const hex = (v: number, w: number) => v.toString(16).padStart(w, '0');
  return `LID 0x${hex(d.lid, 4)}, QPN 0x${hex(d.qpn, 6)}, PSN 0x${hex(d.psn, 6)}, GID ${d.gid}`;
}

function close(ctx: Context | undefined): void {
  if (ctx === undefined) return;
  ctx.ah?.destroy();
  ctx.qp.destroy();
  ctx.mr.dereg();
  ctx.cq.destroy();
  ctx.pd.dealloc();
  ctx.device.close();
}
