// Shared by the verbs-*.test.ts files: an engine with soft devices on
// loopback addresses, and QP bring-up as rc_pingpong / ud_pingpong do it.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { loadAddon, type NativeEngine } from '../../src/native/addon.js';
import {
  openDevice,
  type CompletionQueue,
  type Device,
  type MemoryRegion,
  type ProtectionDomain,
  type QpType,
  type QueuePair,
  type Wc,
} from '../../src/native/verbs.js';

export const QKEY = 0x11111111;

export function startEngine(): NativeEngine {
  const engine = new (loadAddon().Engine)({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false });
  engine.start();
  return engine;
}

export interface Node {
  readonly device: Device;
  readonly pd: ProtectionDomain;
  readonly cq: CompletionQueue;
  readonly buf: Buffer;
  readonly mr: MemoryRegion;
}

export function node(engine: NativeEngine, address: string, bytes = 64 * 1024): Node {
  const device = openDevice(engine, { address });
  const pd = device.allocPd();
  const cq = device.createCq(256);
  const buf = Buffer.alloc(bytes);
  const mr = pd.regMr(buf, ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC']);
  return { device, pd, cq, buf, mr };
}

export function createQp(n: Node, type: QpType): QueuePair {
  return n.pd.createQp({
    type,
    sendCq: n.cq,
    recvCq: n.cq,
    cap: { maxSendWr: 64, maxRecvWr: 64, maxSendSge: 2, maxRecvSge: 2, maxInlineData: 64 },
  });
}

export function udQp(n: Node, qkey = QKEY): QueuePair {
  const qp = createQp(n, 'UD');
  qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qkey });
  qp.modify({ state: 'RTR' });
  qp.modify({ state: 'RTS', sqPsn: 0 });
  return qp;
}

/** RC (or UC) pair a ⇄ b, both in RTS. */
export function connectPair(a: Node, b: Node, type: 'RC' | 'UC' = 'RC'): [QueuePair, QueuePair] {
  const qa = createQp(a, type);
  const qb = createQp(b, type);
  const access = type === 'RC' ? (['REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC'] as const) : (['REMOTE_WRITE'] as const);
  for (const qp of [qa, qb]) qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: [...access] });
  const bringUp = (qp: QueuePair, peer: Node, peerQpn: number, myPsn: number, peerPsn: number): void => {
    qp.modify({
      state: 'RTR',
      pathMtu: 1024,
      destQpNum: peerQpn,
      rqPsn: peerPsn,
      ahAttr: { dgid: peer.device.gid, hopLimit: 64 },
      ...(type === 'RC' ? { maxDestRdAtomic: 4, minRnrTimer: 1 } : {}),
    });
    qp.modify({
      state: 'RTS',
      sqPsn: myPsn,
      ...(type === 'RC' ? { timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 4 } : {}),
    });
  };
  bringUp(qa, b, qb.qpNum, 0x100, 0x200);
  bringUp(qb, a, qa.qpNum, 0x200, 0x100);
  return [qa, qb];
}

/** Polls `cq` until `n` completions arrived or `ms` passed. */
export async function pollN(cq: CompletionQueue, n: number, ms = 3000): Promise<Wc[]> {
  const out: Wc[] = [];
  const end = Date.now() + ms;
  while (out.length < n && Date.now() < end) {
    out.push(...cq.poll(16));
    if (out.length < n) await sleep(1);
  }
  return out;
}

export async function pollOne(cq: CompletionQueue, ms = 3000): Promise<Wc> {
  const [wc] = await pollN(cq, 1, ms);
  assert.ok(wc, 'a completion arrived');
  return wc;
}
