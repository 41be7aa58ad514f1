// The verbs interface's vocabulary (src/native/verbs.ts): ibverbs' enums,
// attribute and work-request shapes, the batch layouts, and the options of
// openDevice and its objects, in camelCase. verbs.ts re-exports all of it.
import type { AddressHandle } from './verbs.js';
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

// ---------------------------------------------------------------- device and object options

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


export interface SrqInitAttr {
  readonly maxWr: number;
  readonly maxSge?: number;
  readonly srqLimit?: number;
}
