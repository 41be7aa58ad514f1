// The verbs interface from TypeScript: a device on an engine (soft RoCEv2 or libibverbs),
// and its protection domains, memory regions, completion queues, queue
// pairs, address handles and shared receive queues — ibverbs' objects and
// names, in camelCase (ibv_qp_attr.dest_qp_num → destQpNum).
//
//   const device = openDevice(engine, { address: '127.0.0.2' });
//   const pd = device.allocPd();
//   const cq = device.createCq(256);
//   const mr = pd.regMr(Buffer.alloc(4096), ['LOCAL_WRITE', 'REMOTE_WRITE']);
//   const qp = pd.createQp({ type: 'RC', sendCq: cq, recvCq: cq, cap: { maxSendWr: 64, maxRecvWr: 64 } });
//   qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: ['REMOTE_WRITE'] });
//   qp.modify({ state: 'RTR', pathMtu: 1024, destQpNum, rqPsn, ahAttr: { dgid }, maxDestRdAtomic: 1, minRnrTimer: 12 });
//   qp.modify({ state: 'RTS', sqPsn, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 1 });
//   qp.postSend([{ wrId: 1n, opcode: 'SEND', sgList: [mr.sge(0, 64)] }]);
//   cq.poll(16);
//
// Every call runs synchronously on the engine thread (Engine::run_on_engine):
// it returns when the operation has run there. When the engine is parked that
// costs a wake-up (tens of µs) per call: this is the control path and the
// path for tests and tools, not the per-packet data path (which stays inside
// the engine). The engine must be started for packets to move; objects may be
// made before it starts.
//
// Errors are `VerbsError`s: `code` is the errno name ibverbs would return
// ('EINVAL', 'ENOMEM', 'EADDRINUSE'...), `message` says what was wrong and
// what was expected; a failed post also has `badWrIndex` (WRs before it were
// posted). Malformed arguments throw TypeErrors naming the field.
//
// Memory: a registered buffer is kept alive by its MemoryRegion until
// dereg(); in the soft backend the TARGET'S engine thread performs remote
// READ/WRITE/atomics on it, so JS must not transfer or detach that buffer.
// 64-bit values (wrId, addresses, atomic operands) are BigInts.
import { loadAddon, type NativeEngine } from './addon.js';

// ---------------------------------------------------------------- vocabulary

export type QpType = 'RC' | 'UC' | 'UD';
/** When an RC requester asks for ACKs (native/src/verbs/types.h AckRequests). */
export type AckRequests = 'per-message' | 'window';
export type QpState = 'RESET' | 'INIT' | 'RTR' | 'RTS' | 'SQD' | 'SQE' | 'ERR';
export type AccessFlag = 'LOCAL_WRITE' | 'REMOTE_WRITE' | 'REMOTE_READ' | 'REMOTE_ATOMIC';
/** Path MTU in bytes. */
export type PathMtu = 256 | 512 | 1024 | 2048 | 4096;
export type WrOpcode =
  | 'SEND'
  | 'SEND_WITH_IMM'
  | 'RDMA_WRITE'
  | 'RDMA_WRITE_WITH_IMM'
  | 'RDMA_READ'
  | 'ATOMIC_CMP_AND_SWP'
  | 'ATOMIC_FETCH_AND_ADD';
/** ibv_wc_status names. */
export type WcStatus =
  | 'IBV_WC_SUCCESS'
  | 'IBV_WC_LOC_LEN_ERR'
  | 'IBV_WC_LOC_QP_OP_ERR'
  | 'IBV_WC_LOC_EEC_OP_ERR'
  | 'IBV_WC_LOC_PROT_ERR'
  | 'IBV_WC_WR_FLUSH_ERR'
  | 'IBV_WC_MW_BIND_ERR'
  | 'IBV_WC_BAD_RESP_ERR'
  | 'IBV_WC_LOC_ACCESS_ERR'
  | 'IBV_WC_REM_INV_REQ_ERR'
  | 'IBV_WC_REM_ACCESS_ERR'
  | 'IBV_WC_REM_OP_ERR'
  | 'IBV_WC_RETRY_EXC_ERR'
  | 'IBV_WC_RNR_RETRY_EXC_ERR'
  | 'IBV_WC_LOC_RDD_VIOL_ERR'
  | 'IBV_WC_REM_INV_RD_REQ_ERR'
  | 'IBV_WC_REM_ABORT_ERR'
  | 'IBV_WC_INV_EECN_ERR'
  | 'IBV_WC_INV_EEC_STATE_ERR'
  | 'IBV_WC_FATAL_ERR'
  | 'IBV_WC_RESP_TIMEOUT_ERR'
  | 'IBV_WC_GENERAL_ERR'
  | 'IBV_WC_TM_ERR'
  | 'IBV_WC_TM_RNDV_INCOMPLETE';
/** WcStatus by its ibv_wc_status code (cq.pollInto gives the code). */
export const WC_STATUS_NAMES: readonly WcStatus[] = [
  'IBV_WC_SUCCESS', 'IBV_WC_LOC_LEN_ERR', 'IBV_WC_LOC_QP_OP_ERR', 'IBV_WC_LOC_EEC_OP_ERR', 'IBV_WC_LOC_PROT_ERR',
  'IBV_WC_WR_FLUSH_ERR', 'IBV_WC_MW_BIND_ERR', 'IBV_WC_BAD_RESP_ERR', 'IBV_WC_LOC_ACCESS_ERR', 'IBV_WC_REM_INV_REQ_ERR',
  'IBV_WC_REM_ACCESS_ERR', 'IBV_WC_REM_OP_ERR', 'IBV_WC_RETRY_EXC_ERR', 'IBV_WC_RNR_RETRY_EXC_ERR',
  'IBV_WC_LOC_RDD_VIOL_ERR', 'IBV_WC_REM_INV_RD_REQ_ERR', 'IBV_WC_REM_ABORT_ERR', 'IBV_WC_INV_EECN_ERR',
  'IBV_WC_INV_EEC_STATE_ERR', 'IBV_WC_FATAL_ERR', 'IBV_WC_RESP_TIMEOUT_ERR', 'IBV_WC_GENERAL_ERR', 'IBV_WC_TM_ERR',
  'IBV_WC_TM_RNDV_INCOMPLETE',
];
export type WcOpcode =
  | 'IBV_WC_SEND'
  | 'IBV_WC_RDMA_WRITE'
  | 'IBV_WC_RDMA_READ'
  | 'IBV_WC_COMP_SWAP'
  | 'IBV_WC_FETCH_ADD'
  | 'IBV_WC_RECV'
  | 'IBV_WC_RECV_RDMA_WITH_IMM';

/** An error of the verbs interface: `code` is the errno name, as ibverbs would return it. */
export interface VerbsError extends Error {
  readonly code: string;
  readonly errno: number;
  /** Failed posts: the index of the first WR not posted (the ones before it were). */
  readonly badWrIndex?: number;
}

/** True when `e` is an Error thrown by a verbs call (it has an errno `code`). */
export function isVerbsError(e: unknown): e is VerbsError {
  return e instanceof Error && typeof (e as { code?: unknown }).code === 'string' && typeof (e as { errno?: unknown }).errno === 'number';
}

// ---------------------------------------------------------------- attributes

/** ibv_ah_attr for RoCEv2: `dgid` is '::ffff:a.b.c.d', an IPv4 address, or an MGID / IPv4 group. */
export interface AhAttr {
  readonly dgid: string;
  readonly sgidIndex?: number;
  /** IPv4 TOS byte (DSCP << 2 | ECN). */
  readonly trafficClass?: number;
  /** IPv4 TTL. Default 64. */
  readonly hopLimit?: number;
  readonly sl?: number;
  readonly flowLabel?: number;
  readonly portNum?: number;
  /** RoCEv2 UDP source port; 0 = derived from the QPNs (rxe's rules). */
  readonly udpSport?: number;
}

export interface QpCap {
  readonly maxSendWr?: number;
  readonly maxRecvWr?: number;
  readonly maxSendSge?: number;
  readonly maxRecvSge?: number;
  readonly maxInlineData?: number;
}

/** ibv_modify_qp: the attributes present make the mask (IBV_QP_STATE for `state`, IBV_QP_AV for `ahAttr`, ...). */
export interface QpAttrInput {
  readonly state?: QpState;
  readonly curState?: QpState;
  readonly enSqdAsyncNotify?: boolean;
  readonly qpAccessFlags?: readonly AccessFlag[];
  readonly pkeyIndex?: number;
  readonly port?: number;
  readonly qkey?: number;
  readonly ahAttr?: AhAttr;
  readonly pathMtu?: PathMtu;
  /** Local ACK timeout code: 4.096 µs × 2^timeout, 0 = infinite. */
  readonly timeout?: number;
  readonly retryCnt?: number;
  /** 7 = infinite. */
  readonly rnrRetry?: number;
  readonly rqPsn?: number;
  readonly maxRdAtomic?: number;
  readonly minRnrTimer?: number;
  readonly sqPsn?: number;
  readonly maxDestRdAtomic?: number;
  readonly cap?: QpCap;
  readonly destQpNum?: number;
  /** IBV_QP_ALT_PATH: the alternate path (RC; soft backend: docs/protocol.md §1.10). */
  readonly altPath?: AltPath;
  /** IBV_QP_PATH_MIG_STATE: 'REARM' (or 'ARMED') arms the alternate path, 'MIGRATED' moves to it. */
  readonly pathMigState?: MigState;
}

/** ibv_qp_attr's path migration state (IBA 17.2.8). */
export type MigState = 'MIGRATED' | 'REARM' | 'ARMED';

/** Which of its paths a session's RC QP runs on (native/src/verbs/rc_path.h; /v1/sessions shows it). */
export interface RcPathInfo {
  /** 'primary' or 'alternate'; null when no alternate path was armed (one end has one address). */
  readonly activePath: 'primary' | 'alternate' | null;
  /** 'ARMED': it can migrate; 'MIGRATED': it did (or was not armed again); null without an alternate path. */
  readonly pathMigState: MigState | null;
  /** Migrations of the QP (its counter path_migrations). */
  readonly pathMigrations: number;
}

/** ibv_qp_attr's alt_ah_attr, alt_pkey_index, alt_port_num, alt_timeout. */
export interface AltPath {
  readonly ahAttr: AhAttr;
  readonly pkeyIndex?: number;
  readonly port?: number;
  /** The alternate path's local ACK timeout code. */
  readonly timeout?: number;
}

/** ibv_query_qp. */
export interface QpAttr {
  readonly qpNum: number;
  readonly type: QpType;
  readonly state: QpState;
  readonly pathMtu: PathMtu;
  readonly qkey: number;
  readonly rqPsn: number;
  readonly sqPsn: number;
  readonly destQpNum: number;
  readonly qpAccessFlags: AccessFlag[];
  readonly cap: Required<QpCap>;
  readonly ahAttr: Required<AhAttr>;
  readonly pkeyIndex: number;
  readonly port: number;
  readonly timeout: number;
  readonly retryCnt: number;
  readonly rnrRetry: number;
  readonly minRnrTimer: number;
  readonly maxRdAtomic: number;
  readonly maxDestRdAtomic: number;
  readonly sqDraining: boolean;
  readonly sqSigAll: boolean;
  readonly pathMigState: MigState;
  readonly altPath: { readonly ahAttr: Required<AhAttr>; readonly pkeyIndex: number; readonly port: number; readonly timeout: number };
  /** Soft backend: send WRs posted and not yet completed. */
  readonly sendWrsOutstanding?: number;
  /** Soft backend: receive WRs posted and not yet consumed. */
  readonly recvWrsPosted?: number;
}

export interface DeviceAttr {
  readonly fwVer: string;
  readonly nodeGuid: bigint;
  readonly maxMrSize: bigint;
  readonly vendorId: number;
  readonly vendorPartId: number;
  readonly maxQp: number;
  readonly maxQpWr: number;
  readonly maxSge: number;
  readonly maxCq: number;
  readonly maxCqe: number;
  readonly maxMr: number;
  readonly maxPd: number;
  readonly maxQpRdAtom: number;
  readonly maxQpInitRdAtom: number;
  readonly maxSrq: number;
  readonly maxSrqWr: number;
  readonly maxSrqSge: number;
  readonly maxMcastGrp: number;
  readonly maxMcastQpAttach: number;
  readonly maxAh: number;
  readonly maxInlineData: number;
  readonly maxPkeys: number;
  readonly localCaAckDelay: number;
  readonly physPortCnt: number;
}

export interface PortAttr {
  readonly state: 'PORT_NOP' | 'PORT_DOWN' | 'PORT_INIT' | 'PORT_ARMED' | 'PORT_ACTIVE' | 'PORT_ACTIVE_DEFER';
  readonly maxMtu: PathMtu;
  /** The largest IB MTU the interface MTU carries (1500 → 1024, lo → 4096). */
  readonly activeMtu: PathMtu;
  readonly gidTblLen: number;
  readonly maxMsgSz: number;
  readonly badPkeyCntr: number;
  readonly qkeyViolCntr: number;
  readonly pkeyTblLen: number;
}

export interface GidEntry {
  readonly index: number;
  readonly gid: string;
  /** The sysfs gid_attrs/types spelling; the soft device's entries are all 'RoCE v2'. */
  readonly type: 'RoCE v2' | 'RoCE v1' | 'IB';
  /** ibv: the interface the entry belongs to. */
  readonly netdev?: string;
}

export interface AsyncEvent {
  /** 'IBV_EVENT_QP_FATAL', 'IBV_EVENT_SRQ_LIMIT_REACHED', ... */
  readonly type: string;
  /** ibv_event_type_str(). */
  readonly description: string;
  readonly element: 'DEVICE' | 'PORT' | 'QP' | 'CQ' | 'SRQ';
  /** QPN, CQ handle, SRQ handle or port number. */
  readonly elementId: number;
  readonly context: bigint;
}

/** How the device receives and checks, and what the kernel granted (net.h NetReport). */
export interface NetReport {
  /**
   * 'plain-udp': the ICRC is checked against an IPv4-ID-0 pseudo header;
   * 'af-packet': against the real IP header (docs/protocol.md §1.8).
   */
  readonly receiveMode: ReceiveMode;
  readonly icrcPolicy: IcrcPolicy;
  readonly rcvbufGranted: number;
  readonly sndbufGranted: number;
  /** What the start-up probe saw of our own IPv4 ID. */
  readonly ipv4Id: 'zero' | 'non_zero' | 'unverified';
  readonly ipv4IdDetail: string;
  readonly sourcePortMode: string;
}

/** Named counters: socket level (net), decode/ICRC (wire), and ingress drops by reason. */
export interface DeviceCounters {
  /** The soft device's sockets, wire decoding and ingress checks; empty objects for ibv. */
  readonly net: Readonly<Record<string, number>>;
  readonly wire: Readonly<Record<string, number>>;
  readonly ingress: Readonly<Record<string, number>>;
  /** ibv: async events the engine took, by type ('IBV_EVENT_PORT_ERR'), and `lost` (dropped: not taken by getAsyncEvent in time). */
  readonly asyncEvents: Readonly<Record<string, number>>;
  /** ibv: completion events the engine took from the device's completion channel (each re-armed a CQ), and failures to take them; 0 for soft. */
  readonly completionEvents: { readonly events: number; readonly errors: number };
}

// ---------------------------------------------------------------- work requests

/** ibv_sge. `mr.sge(offset, length)` makes one. */
export interface Sge {
  readonly addr: bigint;
  readonly length: number;
  readonly lkey: number;
}

/**
 * A scatter/gather entry: an Sge, or a Buffer/typed array — which must lie
 * inside a MemoryRegion of the QP's PD, or be the data of an `inline` send.
 */
export type SgeInput = Sge | Uint8Array;

export interface SendWr {
  readonly wrId?: bigint;
  /** Default 'SEND'. */
  readonly opcode?: WrOpcode;
  readonly sgList?: readonly SgeInput[];
  /** *_WITH_IMM: 32 bits, host order. */
  readonly immData?: number;
  /** RDMA_* and ATOMIC_*. */
  readonly remoteAddr?: bigint;
  readonly rkey?: number;
  /** FETCH_AND_ADD: the addend; CMP_AND_SWP: the compare value. */
  readonly compareAdd?: bigint;
  readonly swap?: bigint;
  /** UD. */
  readonly ah?: AddressHandle;
  /** UD; 0xFFFFFF for a multicast AH. */
  readonly remoteQpn?: number;
  readonly remoteQkey?: number;
  /** Default true (IBV_SEND_SIGNALED). */
  readonly signaled?: boolean;
  readonly inline?: boolean;
  readonly solicited?: boolean;
  readonly fence?: boolean;
}

export interface RecvWr {
  readonly wrId?: bigint;
  readonly sgList?: readonly SgeInput[];
}

/** ibv_wc. */
export interface Wc {
  readonly wrId: bigint;
  readonly status: WcStatus;
  /** Meaningful only when status is IBV_WC_SUCCESS, as in ibverbs. */
  readonly opcode: WcOpcode;
  /** Receives: bytes placed (UD: including the 40-byte GRH area). */
  readonly byteLen: number;
  readonly qpNum: number;
  readonly vendorErr: number;
  readonly immData?: number;
  /** Successful receives: the sender's QPN (UD). */
  readonly srcQp?: number;
  readonly grh?: boolean;
}

/**
 * cq.pollInto's layout: WC_WORDS u32 words per completion, at these
 * offsets (native/src/addon/verbs_convert.h). status is the ibv_wc_status
 * code (WC_STATUS_NAMES), opcode the ibv_wc_opcode code (IBV_WC_RECV = 128).
 */
export const WC_WORDS = 6;
export const WcWord = { wrIdLow: 0, wrIdHigh: 1, status: 2, opcode: 3, byteLen: 4, qpNum: 5 } as const;
/** qp.postRecvBatch's layout: three u32 words per receive (wr_id, offset in the MR, length). */
export const RECV_WR_WORDS = 3;
/** qp.postSendBatch's layout: five u32 words per SEND, at these offsets. */
export const SEND_WR_WORDS = 5;
export const SendWrWord = { wrIdLow: 0, wrIdHigh: 1, offset: 2, length: 3, flags: 4 } as const;
/** The ibv_send_flags bits of a SendWrWord.flags word (native/src/verbs/types.h SendFlag). */
export const SendFlagBit = { fence: 1, signaled: 2, solicited: 4, inline: 8 } as const;

// ---------------------------------------------------------------- native shapes

interface NativeMr {
  readonly addr: bigint;
  readonly length: number;
  readonly lkey: number;
  readonly rkey: number;
  readonly access: AccessFlag[];
  dereg(): void;
}
interface NativeAh {
  readonly attr: Required<AhAttr>;
  destroy(): void;
}
interface NativeCq {
  poll(max?: number): Wc[];
  pollInto(words: Uint32Array): number;
  busyPollInto(words: Uint32Array, budgetNs: number): number;
  readonly cqe: number;
  readonly handle: number;
  destroy(): void;
}
interface NativeSrq {
  postRecv(wrs: readonly unknown[]): number;
  modify(attr: { maxWr?: number; srqLimit?: number }): void;
  query(): { maxWr: number; maxSge: number; srqLimit: number };
  destroy(): void;
}
interface NativeQp {
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
interface NativePd {
  regMr(memory: ArrayBuffer | ArrayBufferView, access: readonly AccessFlag[]): NativeMr;
  createAh(attr: AhAttr): NativeAh;
  createSrq(attr: SrqInitAttr): NativeSrq;
  createQp(init: Record<string, unknown>): NativeQp;
  dealloc(): void;
}
interface NativeDevice {
  readonly name: string;
  readonly backend: Backend;
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
  allocPd(): NativePd;
  createCq(depth: number, context?: bigint): NativeCq;
  getAsyncEvent(): AsyncEvent | null;
  counters(): DeviceCounters;
  netReport(): NetReport | null;
  close(): void;
}
interface NativeVerbs {
  openDevice(engine: NativeEngine, options: Record<string, unknown>): NativeDevice;
  bufferAddress(buffer: ArrayBuffer | ArrayBufferView): bigint;
}

function nativeVerbs(): NativeVerbs {
  const addon = loadAddon() as unknown as { verbs?: NativeVerbs };
  if (addon.verbs === undefined) throw new Error('qpgate: this build of the native addon has no verbs bindings');
  return addon.verbs;
}

/** Where a Buffer's bytes are, as the BigInt address an Sge carries. */
export function bufferAddress(buffer: ArrayBuffer | ArrayBufferView): bigint {
  return nativeVerbs().bufferAddress(buffer);
}

// ---------------------------------------------------------------- objects

export type IcrcPolicy = 'strict' | 'count-unverifiable';
/** How a soft device reads packets, and so what its ICRC check can cover (docs/protocol.md §1.8). */
export type ReceiveMode = 'plain-udp' | 'af-packet';

/** 'soft': RoCEv2 in user space over UDP; 'ibv': libibverbs (a RoCE NIC, or the kernel's rxe). */
export type Backend = 'soft' | 'ibv';

/** openDevice's options for a soft device (kind 'soft', the default). */
export interface OpenDeviceOptions {
  readonly kind?: 'soft';
  /** The device's IPv4 address ('127.0.0.2'); it must belong to an interface (lo owns 127/8). */
  readonly address?: string;
  /** Or an interface name ('eth0', 'lo'): its first IPv4 address. */
  readonly name?: string;
  /** Device name; default 'qpgate_soft_<address>'. */
  readonly deviceName?: string;
  /**
   * A second IPv4 address of this host (or an interface name): GID index 1,
   * the source of RC alternate paths (automatic path migration,
   * docs/protocol.md §1.10). Needs receiveMode 'plain-udp'.
   */
  readonly alternateAddress?: string;
  /**
   * 'strict' (default): a packet whose ICRC does not match the IPv4-ID-0
   * pseudo header is dropped (counted as wire.icrc_mismatch) — only peers
   * that send ID 0, like qpgate's soft backend, get through. 'count-
   * unverifiable': accepted and counted as ingress.icrc_unverifiable (for
   * rxe / NIC peers, whose IPv4 ID a plain socket cannot see).
   */
  readonly icrcPolicy?: IcrcPolicy;
  /**
   * 'plain-udp' (default): UDP sockets, no privilege needed. 'af-packet': an
   * AF_PACKET socket sees each packet's real IP header, so the ICRC of every
   * sender — rxe and NICs, whose IPv4 ID is not 0 — is verified and
   * icrcPolicy does not apply; needs CAP_NET_RAW (EPERM otherwise).
   */
  readonly receiveMode?: ReceiveMode;
  /** Socket buffer sizes asked for (the grant is in netReport()). */
  readonly rcvbuf?: number;
  readonly sndbuf?: number;
  /** Default true: each RoCEv2 source port gets its own socket (docs/protocol.md §1.1). */
  readonly perFlowSourcePort?: boolean;
  /** Default true: check at open that our datagrams carry IPv4 ID 0 (needs CAP_NET_RAW to look). */
  readonly probeIpv4Id?: boolean;
}

export interface InterfaceInfo {
  readonly name: string;
  readonly address: string;
  readonly mtu: number;
  readonly loopback: boolean;
}

/** openDevice's options for an RDMA device through libibverbs. */
export interface OpenIbvDeviceOptions {
  readonly kind: 'ibv';
  /** The RDMA device: 'rxe0', 'mlx5_0' (ibv_devices lists them). */
  readonly name: string;
  /** Default 1. */
  readonly port?: number;
  /** The source GID entry; default: the RoCE v2 IPv4-mapped GID of the port's interface (gidReport says which and why). */
  readonly gidIndex?: number;
  /** The interface (or one of its IPv4 addresses) whose GID to choose; default: the one the port's GIDs name. */
  readonly interface?: string;
}

/** Anything that carries a native engine: the addon's Engine, or a wrapper exposing it as `native`. */
export type EngineLike = NativeEngine | { readonly native: NativeEngine };

function nativeEngineOf(engine: EngineLike): NativeEngine {
  const maybe = engine as { native?: NativeEngine };
  return maybe.native !== undefined ? maybe.native : (engine as NativeEngine);
}

/**
 * ibv_open_device for the soft backend: a RoCEv2 device on one IPv4
 * address, driven by `engine`'s thread. EADDRINUSE when another device (in
 * this or another process) owns <address>:4791; EADDRNOTAVAIL when no
 * interface has the address; ENODEV for an unknown interface.
 */
export function openDevice(engine: EngineLike, options: OpenDeviceOptions | OpenIbvDeviceOptions): Device {
  return new Device(openNativeDevice(nativeEngineOf(engine), options));
}

/** An ibv device that would not open: its name and port with the reason (code: ENETDOWN for a port not ACTIVE, ENODEV, EINVAL...). */
export class IbvOpenError extends Error {
  override readonly name = 'IbvOpenError';
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly device: string,
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** @internal The addon's openDevice; an ibv device's failure as an IbvOpenError. */
export function openNativeDevice(engine: NativeEngine, options: OpenDeviceOptions | OpenIbvDeviceOptions): NativeDevice {
  try {
    return nativeVerbs().openDevice(engine, { ...options });
  } catch (err) {
    if (!('kind' in options) || options.kind !== 'ibv') throw err;
    const e = err as Error & { code?: string };
    throw new IbvOpenError(e.message, e.code, options.name, options.port ?? 1, { cause: err });
  }
}

/**
 * @internal The native device behind a Device, for qpgate's own test-only
 * modules (src/native/testing/). Not part of the API.
 */
export const kNativeDevice: unique symbol = Symbol('qpgate.verbs.nativeDevice');

export class Device {
  readonly #native: NativeDevice;
  /** @internal */
  constructor(native: NativeDevice) {
    this.#native = native;
  }
  /** @internal */
  get [kNativeDevice](): unknown {
    return this.#native;
  }
  /** 'qpgate_soft_127.0.0.2'. */
  get name(): string {
    return this.#native.name;
  }
  get backend(): Backend {
    return this.#native.backend;
  }
  /** The source GID: '::ffff:a.b.c.d' (soft: index 0; ibv: the chosen entry). */
  get gid(): string {
    return this.#native.gid;
  }
  get gidIndex(): number {
    return this.#native.gidIndex;
  }
  /** The source GID of RC alternate paths (a soft device opened with alternateAddress), or null: no automatic path migration. */
  get alternateGid(): string | null {
    return this.#native.alternateGid;
  }
  /**
   * How long this device's RC responder holds the ACK of a request that did
   * not ask for one (µs; 0: never sends one, as rxe): told to the peer in the
   * session handshake, which may then ask for ACKs to the window only.
   */
  get ackHoldUs(): number {
    return this.#native.ackHoldUs;
  }
  /** ibv: which GID entry was chosen and why, for the log; null for soft. */
  get gidReport(): string | null {
    return this.#native.gidReport;
  }
  /** The port in use (soft: 1). */
  get port(): number {
    return this.#native.port;
  }
  get address(): string {
    return this.#native.address;
  }
  get interface(): InterfaceInfo {
    return this.#native.interface;
  }
  /** ibv_query_device. */
  query(): DeviceAttr {
    return this.#native.query();
  }
  /** ibv_query_port; default: the port in use (the soft device has port 1). */
  queryPort(port = this.port): PortAttr {
    return this.#native.queryPort(port);
  }
  /** ibv_query_gid over the table: index 0 is the RoCEv2 IPv4-mapped GID. */
  queryGidTable(): GidEntry[] {
    return this.#native.queryGidTable();
  }
  allocPd(): ProtectionDomain {
    return new ProtectionDomain(this.#native.allocPd());
  }
  /** ibv_create_cq with `depth` entries (1..32767). */
  createCq(depth: number, context?: bigint): CompletionQueue {
    return new CompletionQueue(this.#native.createCq(depth, context));
  }
  /** The next asynchronous event, or null (never blocks). */
  getAsyncEvent(): AsyncEvent | null {
    return this.#native.getAsyncEvent();
  }
  counters(): DeviceCounters {
    return this.#native.counters();
  }
  /** The soft device's receive path; null for ibv. */
  netReport(): NetReport | null {
    return this.#native.netReport();
  }
  /** Releases the device handle; its sockets close once its last PD/CQ/QP is gone too. */
  close(): void {
    this.#native.close();
  }
}

export interface SrqInitAttr {
  readonly maxWr: number;
  readonly maxSge?: number;
  readonly srqLimit?: number;
}

export interface CreateQpOptions {
  readonly type: QpType;
  readonly sendCq: CompletionQueue;
  /** Default: sendCq. */
  readonly recvCq?: CompletionQueue;
  readonly srq?: SharedReceiveQueue;
  readonly cap?: QpCap;
  /** Every send WR completes, signaled or not. */
  readonly sqSigAll?: boolean;
  readonly qpContext?: bigint;
}

export class ProtectionDomain {
  readonly #native: NativePd;
  readonly #mrs = new Set<MemoryRegion>();
  /** @internal */
  constructor(native: NativePd) {
    this.#native = native;
  }
  /**
   * ibv_reg_mr over a Buffer, typed array or ArrayBuffer. The region holds
   * the memory until dereg(). REMOTE_WRITE/REMOTE_ATOMIC need LOCAL_WRITE (EINVAL).
   */
  regMr(memory: ArrayBuffer | ArrayBufferView, access: readonly AccessFlag[] = []): MemoryRegion {
    const mr = new MemoryRegion(this.#native.regMr(memory, access), memory, (m) => this.#mrs.delete(m));
    this.#mrs.add(mr);
    return mr;
  }
  /** ibv_create_ah: where UD sends go. */
  createAh(attr: AhAttr): AddressHandle {
    return new AddressHandle(this.#native.createAh(attr));
  }
  createSrq(attr: SrqInitAttr): SharedReceiveQueue {
    return new SharedReceiveQueue(this.#native.createSrq(attr), this);
  }
  /** ibv_create_qp. The QP starts in RESET. */
  createQp(options: CreateQpOptions): QueuePair {
    const init: Record<string, unknown> = {
      type: options.type,
      sendCq: options.sendCq[nativeOf](),
      recvCq: (options.recvCq ?? options.sendCq)[nativeOf](),
      cap: options.cap ?? {},
      sqSigAll: options.sqSigAll ?? false,
    };
    if (options.srq !== undefined) init['srq'] = options.srq[nativeOf]();
    if (options.qpContext !== undefined) init['qpContext'] = options.qpContext;
    return new QueuePair(this.#native.createQp(init), this);
  }
  /** The registered region holding [view, view + length), if any. */
  findMr(view: Uint8Array): MemoryRegion | undefined {
    const addr = bufferAddress(view);
    const end = addr + BigInt(view.byteLength);
    for (const mr of this.#mrs) {
      if (addr >= mr.addr && end <= mr.addr + BigInt(mr.length)) return mr;
    }
    return undefined;
  }
  /** @internal Resolves Buffer entries of an sgList to Sges (inline sends keep the bytes). */
  resolveSgList(list: readonly SgeInput[] | undefined, inline: boolean, where: string): unknown[] | undefined {
    if (list === undefined) return undefined;
    return list.map((entry, i) => {
      if (!(entry instanceof Uint8Array)) return entry;
      const mr = this.findMr(entry);
      if (mr !== undefined) return { addr: bufferAddress(entry), length: entry.byteLength, lkey: mr.lkey };
      if (inline) return entry;
      throw new TypeError(`${where}.sgList[${i}]: the buffer lies in no MemoryRegion of this PD (register it, or send it inline)`);
    });
  }
  dealloc(): void {
    this.#native.dealloc();
  }
}

const nativeOf = Symbol('qpgate.verbs.native');

export class MemoryRegion {
  /** @internal */
  readonly [nativeOf]: () => NativeMr;
  readonly #native: NativeMr;
  readonly #memory: ArrayBuffer | ArrayBufferView;
  readonly #onDereg: (mr: MemoryRegion) => void;
  /** The VA remote peers use (remoteAddr): the buffer's own address. */
  readonly addr: bigint;
  readonly length: number;
  readonly lkey: number;
  /** Meaningful when access has a REMOTE_* flag. */
  readonly rkey: number;
  readonly access: readonly AccessFlag[];
  /** @internal */
  constructor(native: NativeMr, memory: ArrayBuffer | ArrayBufferView, onDereg: (mr: MemoryRegion) => void) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
    this.#memory = memory;
    this.#onDereg = onDereg;
    this.addr = native.addr;
    this.length = native.length;
    this.lkey = native.lkey;
    this.rkey = native.rkey;
    this.access = native.access;
  }
  /** The registered memory. */
  get memory(): ArrayBuffer | ArrayBufferView {
    return this.#memory;
  }
  /** An Sge over [offset, offset + length) of this region. */
  sge(offset = 0, length = this.length - offset): Sge {
    if (offset < 0 || length < 0 || offset + length > this.length) {
      throw new RangeError(`mr.sge: [${offset}, ${offset + length}) is outside the region's ${this.length} bytes`);
    }
    return { addr: this.addr + BigInt(offset), length, lkey: this.lkey };
  }
  /** ibv_dereg_mr: after it returns no local or remote access reaches the memory. */
  dereg(): void {
    this.#native.dereg();
    this.#onDereg(this);
  }
}

export class AddressHandle {
  /** @internal */
  readonly [nativeOf]: () => NativeAh;
  readonly #native: NativeAh;
  /** @internal */
  constructor(native: NativeAh) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
  }
  get attr(): Required<AhAttr> {
    return this.#native.attr;
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class CompletionQueue {
  /** @internal */
  readonly [nativeOf]: () => NativeCq;
  readonly #native: NativeCq;
  /** @internal */
  constructor(native: NativeCq) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
  }
  /** ibv_poll_cq: up to `max` completions, oldest first. EOVERFLOW once the CQ overflowed. */
  poll(max = 16): Wc[] {
    return this.#native.poll(max);
  }
  /**
   * ibv_poll_cq without allocating: up to `words.length / WC_WORDS`
   * completions written into `words` (layout: WcWord); returns how many.
   * The hot path of a client that polls often: no object per completion.
   */
  pollInto(words: Uint32Array): number {
    return this.#native.pollInto(words);
  }
  /**
   * A driven engine's busy-poll in one native call: duty cycles of the CQ's
   * engine and polls of the CQ until a completion comes or `budgetNs` passes;
   * writes as pollInto does and returns how many (0: the budget ran out).
   * Call it through Engine.busyPoll, which lets the engine's other work
   * listeners see what the cycles did.
   */
  busyPollInto(words: Uint32Array, budgetNs: number): number {
    return this.#native.busyPollInto(words, budgetNs);
  }
  get cqe(): number {
    return this.#native.cqe;
  }
  get handle(): number {
    return this.#native.handle;
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class SharedReceiveQueue {
  /** @internal */
  readonly [nativeOf]: () => NativeSrq;
  readonly #native: NativeSrq;
  readonly #pd: ProtectionDomain;
  /** @internal */
  constructor(native: NativeSrq, pd: ProtectionDomain) {
    this.#native = native;
    this.#pd = pd;
    this[nativeOf] = () => this.#native;
  }
  /** Returns how many were posted; throws (with badWrIndex) when not all were. */
  postRecv(wrs: readonly RecvWr[]): number {
    return this.#native.postRecv(
      wrs.map((wr, i) => ({ ...wr, sgList: this.#pd.resolveSgList(wr.sgList, false, `srq.postRecv: wrs[${i}]`) })),
    );
  }
  /** ibv_modify_srq: srqLimit arms IBV_EVENT_SRQ_LIMIT_REACHED. */
  modify(attr: { maxWr?: number; srqLimit?: number }): void {
    this.#native.modify(attr);
  }
  query(): { maxWr: number; maxSge: number; srqLimit: number } {
    return this.#native.query();
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class QueuePair {
  readonly #native: NativeQp;
  readonly #pd: ProtectionDomain;
  /** @internal */
  constructor(native: NativeQp, pd: ProtectionDomain) {
    this.#native = native;
    this.#pd = pd;
  }
  get qpNum(): number {
    return this.#native.qpNum;
  }
  get type(): QpType {
    return this.#native.type;
  }
  get state(): QpState {
    return this.#native.state;
  }
  /**
   * ibv_modify_qp. An illegal transition or attribute throws EINVAL naming
   * it ("INIT→RTR for RC requires IBV_QP_DEST_QPN").
   */
  modify(attr: QpAttrInput): void {
    this.#native.modify(attr);
  }
  /** ibv_query_qp. */
  query(): QpAttr {
    return this.#native.query();
  }
  /** ibv_post_send of a batch; returns how many were posted (all, or it throws with badWrIndex). */
  postSend(wrs: readonly SendWr[]): number {
    return this.#native.postSend(
      wrs.map((wr, i) => {
        const out: Record<string, unknown> = { ...wr };
        out['sgList'] = this.#pd.resolveSgList(wr.sgList, wr.inline === true, `qp.postSend: wrs[${i}]`);
        if (wr.ah !== undefined) out['ah'] = wr.ah[nativeOf]();
        return out;
      }),
    );
  }
  /** ibv_post_recv of a batch. UD buffers need 40 bytes for the GRH area in front of the payload. */
  postRecv(wrs: readonly RecvWr[]): number {
    return this.#native.postRecv(
      wrs.map((wr, i) => ({ ...wr, sgList: this.#pd.resolveSgList(wr.sgList, false, `qp.postRecv: wrs[${i}]`) })),
    );
  }
  /**
   * ibv_post_recv without allocating: `count` receives of one SGE each in
   * `mr`, RECV_WR_WORDS u32 words per WR in `words`: wr_id (32 bits), the
   * offset in the region, the length. A WR outside the region is a RangeError
   * and nothing of it is posted.
   */
  postRecvBatch(mr: MemoryRegion, words: Uint32Array, count = Math.floor(words.length / RECV_WR_WORDS)): number {
    return this.#native.postRecvBatch(mr[nativeOf](), words, count);
  }
  /**
   * ibv_post_send of SENDs without allocating: `count` SENDs of one SGE each
   * in `mr`, SEND_WR_WORDS u32 words per WR in `words` (SendWrWord: wr_id's
   * low and high 32 bits, the offset in the region, the length, SendFlagBit
   * flags). A connected (RC/UC) QP's; a WR outside the region or with an
   * unknown flag is a RangeError and nothing of it is posted.
   */
  postSendBatch(mr: MemoryRegion, words: Uint32Array, count = Math.floor(words.length / SEND_WR_WORDS)): number {
    return this.#native.postSendBatch(mr[nativeOf](), words, count);
  }
  /** ibv_attach_mcast: `group` is an IPv4 group ('239.1.2.3') or its MGID ('::ffff:239.1.2.3'). */
  attachMcast(group: string): void {
    this.#native.attachMcast(group);
  }
  detachMcast(group: string): void {
    this.#native.detachMcast(group);
  }
  /**
   * When this RC QP's requester asks for an ACK (AckReq): 'per-message' (the
   * IBA's usual, the default) or 'window' (only to keep the send queue open:
   * for a peer that said in the handshake that it holds ACKs, ackHoldUs;
   * docs/protocol.md "The ACK hold"). The soft backend's; ibv throws
   * EOPNOTSUPP for 'window'.
   */
  setAckRequests(mode: AckRequests): void {
    this.#native.setAckRequests(mode);
  }
  /** The QP's transport counters (qp_counters.def names). */
  counters(): Readonly<Record<string, number>> {
    return this.#native.counters();
  }
  /** ibv_destroy_qp. */
  destroy(): void {
    this.#native.destroy();
  }
}
