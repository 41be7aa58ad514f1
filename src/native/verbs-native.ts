// The addon's verbs objects as src/native/verbs.ts's classes wrap them
// (native/src/addon/verbs_wrap.cc makes them). @internal: use verbs.ts.
import { loadAddon, type NativeEngine } from './addon.js';
import type { AckRequests, QpType, QpState, AccessFlag, AhAttr, QpAttrInput, QpAttr, DeviceAttr, PortAttr, GidEntry, AsyncEvent, NetReport, DeviceCounters, Sge, Wc, Backend, InterfaceInfo, SrqInitAttr } from './verbs-types.js';

// ---------------------------------------------------------------- native shapes

export interface NativeMr {
  readonly addr: bigint;
  readonly length: number;
  readonly lkey: number;
  readonly rkey: number;
  readonly access: AccessFlag[];
  dereg(): void;
}
export interface NativeAh {
  readonly attr: Required<AhAttr>;
  destroy(): void;
}
export interface NativeCq {
  poll(max?: number): Wc[];
  pollInto(words: Uint32Array): number;
  busyPollInto(words: Uint32Array, budgetNs: number): number;
  readonly cqe: number;
  readonly handle: number;
  destroy(): void;
}
export interface NativeSrq {
  postRecv(wrs: readonly unknown[]): number;
  modify(attr: { maxWr?: number; srqLimit?: number }): void;
  query(): { maxWr: number; maxSge: number; srqLimit: number };
  destroy(): void;
}
export interface NativeQp {
  readonly qpNum: number;
  readonly type: QpType;
  readonly state: QpState;
  modify(attr: QpAttrInput): void;
  query(): QpAttr;
  postSend(wrs: readonly unknown[]): number;
  postRecv(wrs: readonly unknown[]): number;
  postRecvBatch(mr: NativeMr, words: Uint32Array, count: number): number;
  postSendBatch(mr: NativeMr, words: Uint32Array, count: number): number;
  attachMcast(group: string): void;
  detachMcast(group: string): void;
  counters(): Record<string, number>;
  setAckRequests(mode: AckRequests): void;
  destroy(): void;
}
export interface NativePd {
  regMr(memory: ArrayBuffer | ArrayBufferView, access: readonly AccessFlag[]): NativeMr;
  createAh(attr: AhAttr): NativeAh;
  createSrq(attr: SrqInitAttr): NativeSrq;
  createQp(init: Record<string, unknown>): NativeQp;
  dealloc(): void;
}
export interface NativeDevice {
  readonly name: string;
  readonly backend: Backend;
  readonly index: number;
  readonly maxRetryCnt: number;
  readonly gid: string;
  readonly gidIndex: number;
  readonly gidReport: string | null;
  readonly port: number;
  readonly address: string;
  readonly alternateGid: string | null;
  readonly ackHoldUs: number;
  readonly interface: InterfaceInfo;
  query(): DeviceAttr;
  queryPort(port?: number): PortAttr;
  queryGidTable(): GidEntry[];
  gidLinkUp(gidIndex: number): boolean;
  allocPd(): NativePd;
  createCq(depth: number, context?: bigint): NativeCq;
  getAsyncEvent(): AsyncEvent | null;
  counters(): DeviceCounters;
  netReport(): NetReport | null;
  close(): void;
}
export interface NativeVerbs {
  openDevice(engine: NativeEngine, options: Record<string, unknown>): NativeDevice;
  bufferAddress(buffer: ArrayBuffer | ArrayBufferView): bigint;
}

export function nativeVerbs(): NativeVerbs {
  const addon = loadAddon() as unknown as { verbs?: NativeVerbs };
  if (addon.verbs === undefined) throw new Error('qpgate: this build of the native addon has no verbs bindings');
  return addon.verbs;
}

/** Where a Buffer's bytes are, as the BigInt address an Sge carries. */
export function bufferAddress(buffer: ArrayBuffer | ArrayBufferView): bigint {
  return nativeVerbs().bufferAddress(buffer);
}
