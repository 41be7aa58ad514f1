// The order-entry bindings of the addon (native/src/addon/orders_wrap.*):
// the native order service that runs the whole ack path on the engine's
// polling thread (decode, checks, risk, journal, ack, book, fills).
import { loadAddon, type NativeEngine } from '../native/addon.js';
import type { NativeDevice } from '../feed/native.js';
import type { SessionDevice } from '../common/session-provider.js';
import type { NativeOrderServiceConfig } from './config.js';
import type { RcPathInfo } from '../native/verbs.js';
import type { OrderHandlerCounterValues, OrderMarketDataCounterValues, OrderServiceCounterValues } from '../declared/order-counters.js';

export type OrderSessionRole = 'trading' | 'risk';

export interface NativeRemotePeer {
  qpn: number;
  psn: number;
  gid: string;
  mtu: number;
  /** The alternate path's GID: given by a peer with a second address; answered when the path is armed (else null). */
  alternateGid?: string | null;
  /** The peer's RC responder's ACK hold (µs): given by a client that has one, answered by the gateway (0: none). */
  ackHoldUs?: number;
}

export interface NativeOpenSession {
  session: number;
  /** Default 'primary'; 'alternate' needs a service created with an alternate device. */
  device?: SessionDevice;
  role: OrderSessionRole;
  accounts: bigint[];
  throttle?: { ordersPerSecond: number; burst: number };
  cancelOnDisconnect?: boolean;
  remote: NativeRemotePeer;
}

export interface NativeRegion {
  /** 'risk.remote' (credit limit, kill switch: REMOTE_ATOMIC|REMOTE_READ) or 'risk.local' (position...: REMOTE_READ). */
  name: string;
  account: bigint;
  addr: bigint;
  length: number;
  rkey: number;
  access: string[];
}

export interface NativeSessionAnswer extends NativeRemotePeer {
  regions: NativeRegion[];
}

export interface NativeOrderSessionInfo extends RcPathInfo {
  session: number;
  device: SessionDevice;
  role: OrderSessionRole;
  qpn: number;
  state: string;
  lastAppSeq: number | bigint;
  received: number;
  sent: number;
  rnrHeld: number;
  /** Answers waiting to be posted to it. */
  queued: number;
  /** Its receives are held (more than backPressureMessages queued that it does not take). */
  backPressured: boolean;
  disconnected: boolean;
  /** What ended the session once disconnected (a work-completion status, an async event, the gateway's reason); null while connected. */
  endedBy: string | null;
  [k: string]: unknown;
}

/**
 * OrderService.stats(): the declared counters of native/src/orders/order_counters.def
 * (the handler's, the session service's, the market data's) under their JS
 * names, and the figures the addon derives beside them.
 */
export interface NativeOrderStats extends OrderHandlerCounterValues, OrderServiceCounterValues, OrderMarketDataCounterValues {
  /** Requests rejected, all reasons (rejectsByReason has each). */
  rejects: number;
  rejectsByReason: Record<string, number>;
  /** Messages that were not a valid OrderMessage, all kinds (decodeErrorsByKind has each). */
  decodeErrors: number;
  decodeErrorsByKind: Record<string, number>;
  journalRecords: number;
  journalSyncs: number;
  journalReplayed: number;
  journalTornTailBytes: number;
  durablePosition: number;
  /** Why the journal failed; '' while it is sound (journalFailed is 1 once it has). */
  journalFailure: string;
  clientOrderIds: number;
  ackLatencyCount: number;
  /** Why the last rebuild failed ("session 7: ..."); '' until one has. */
  lastRebuildFailure: string;
  /** Memory of the connected sessions' resend stores, bytes (closed sessions hold none). */
  resendBytes: number;
  openOrders: number;
}

export interface RiskWordInfo {
  name: string;
  offset: number;
  description: string;
}

export interface NativeRiskLayout {
  pageBytes: number;
  remoteOwned: RiskWordInfo[];
  localOwned: RiskWordInfo[];
}

export interface NativeRiskWords {
  creditLimit: bigint;
  killSwitch: bigint;
  position: bigint;
  openNotional: bigint;
  openOrders: bigint;
  tradedNotional: bigint;
}

export interface NativeOrderService {
  readonly id: number;
  /** Throws (code 'EEXIST') when the session id has a live QP. */
  openSession(options: NativeOpenSession): NativeSessionAnswer;
  closeSession(session: number): boolean;
  /** An async event on a session's QP (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR) loses that session; true if it did. */
  onAsyncEvent(event: { type: string; elementId: number }, device?: SessionDevice): boolean;
  sessions(): NativeOrderSessionInfo[];
  stats(): NativeOrderStats;
  /** HdrHistogram counters (ns), the layout of LatencyCounts. */
  ackLatencyCounts(): Float64Array;
  riskLayout(): NativeRiskLayout;
  readRisk(account: bigint): NativeRiskWords;
  /** Starts/stops the engine's order-event records (RecordType.orderEvents) for this service. */
  deliverOrderEvents(on: boolean): void;
  /** Flushes the journal and closes every session. */
  close(): void;
  [k: string]: unknown;
}

interface NativeOrders {
  createService(engine: NativeEngine, device: NativeDevice, config: NativeOrderServiceConfig, alternateDevice?: NativeDevice): NativeOrderService;
}

export function nativeOrders(): NativeOrders {
  const addon = loadAddon() as unknown as { orders?: NativeOrders };
  if (addon.orders === undefined) throw new Error('qpgate: this build of the native addon has no order-entry bindings (rebuild: npm run build:native)');
  return addon.orders;
}
